package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/clock"
	"github.com/metad/metad/objectstore"
)

// WriterConfig bounds a Writer. A zero field takes its default; a negative
// one is an error.
type WriterConfig struct {
	// FlushBytes starts a flush once this many bytes are buffered. Default
	// 1 MiB; at most MaxBufferedBytes.
	FlushBytes int
	// FlushInterval starts a flush once the oldest buffered record is this
	// old. Default 10 ms.
	FlushInterval time.Duration
	// MaxBufferedBytes bounds the bytes of Appends made and not yet
	// answered (buffered or in the flush under way); an Append that would
	// pass it waits for room. Default 64 MiB.
	MaxBufferedBytes int
	// MaxStreamsPerObject bounds the streams one object carries; a flush
	// of more streams is split into several objects. Default 1000; it
	// must not exceed the servers' --max-object-streams.
	MaxStreamsPerObject int
	// KeyPrefix starts every object key the Writer uploads; a key is the
	// prefix, a random writer id and a sequence number. Default "writer/".
	KeyPrefix string
	// CommitTimeout is how long a flush keeps retrying a commit or an
	// open whose outcome is indeterminate (or an upload the store did not
	// answer) before it fails the affected Appends. Default 1 minute; at
	// most 5 minutes, well inside the servers' request-id dedup window
	// (10 minutes), so that every retry is answered by the first outcome.
	CommitTimeout time.Duration
	// OpenConcurrency bounds the streams a flush opens for write at once.
	// Default 16.
	OpenConcurrency int
	// Clock is the Writer's time source (FlushInterval). Default clock.Real.
	Clock clock.Clock
}

// maxCommitTimeout keeps retries inside the servers' dedup window.
const maxCommitTimeout = 5 * time.Minute

func (c WriterConfig) withDefaults() WriterConfig {
	if c.FlushBytes == 0 {
		c.FlushBytes = 1 << 20
	}
	if c.FlushInterval == 0 {
		c.FlushInterval = 10 * time.Millisecond
	}
	if c.MaxBufferedBytes == 0 {
		c.MaxBufferedBytes = 64 << 20
	}
	if c.MaxStreamsPerObject == 0 {
		c.MaxStreamsPerObject = 1000
	}
	if c.KeyPrefix == "" {
		c.KeyPrefix = "writer/"
	}
	if c.CommitTimeout == 0 {
		c.CommitTimeout = time.Minute
	}
	if c.OpenConcurrency == 0 {
		c.OpenConcurrency = 16
	}
	if c.Clock == nil {
		c.Clock = clock.Real
	}
	return c
}

// Validate reports every problem of the configuration (after defaults) at
// once, each naming its field.
func (c WriterConfig) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(field string, format string, args ...any) {
		errs = append(errs, fmt.Errorf("client: WriterConfig.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if c.FlushBytes < 0 {
		bad("FlushBytes", "%d, want a positive byte count", c.FlushBytes)
	}
	if c.FlushInterval < 0 {
		bad("FlushInterval", "%s, want a positive duration", c.FlushInterval)
	}
	if c.MaxBufferedBytes < 0 {
		bad("MaxBufferedBytes", "%d, want a positive byte count", c.MaxBufferedBytes)
	} else if c.FlushBytes > c.MaxBufferedBytes {
		bad("FlushBytes", "%d exceeds MaxBufferedBytes %d: the buffer could never fill to it", c.FlushBytes, c.MaxBufferedBytes)
	}
	if c.MaxStreamsPerObject < 0 {
		bad("MaxStreamsPerObject", "%d, want a positive stream count", c.MaxStreamsPerObject)
	}
	if c.CommitTimeout < 0 || c.CommitTimeout > maxCommitTimeout {
		bad("CommitTimeout", "%s, want a positive duration of at most %s", c.CommitTimeout, maxCommitTimeout)
	}
	if c.OpenConcurrency < 0 {
		bad("OpenConcurrency", "%d, want a positive count", c.OpenConcurrency)
	}
	return errors.Join(errs...)
}

// Errors of the Writer's own (the server's refusals arrive as *Error
// inside an *AppendError).
var (
	// ErrFenced: another writer opened the stream (STALE_EPOCH), so this
	// Writer no longer owns it and refuses further Appends to it.
	ErrFenced = errors.New("client: writer fenced: another writer opened the stream")
	// ErrWriterClosed: Append after Close, or Close ended before the
	// Append's flush could be made.
	ErrWriterClosed = errors.New("client: writer closed")
)

// AppendError is how an Append fails: the stream, and the cause. It
// matches ErrFenced when another writer took the stream, and through
// Unwrap whatever the cause matches (ErrStaleEpoch, ErrAppendNotAtEnd,
// ErrSealed, ErrIndeterminate, the context's errors, ...).
type AppendError struct {
	StreamID uint64
	// Reason is the server's reason for a refusal (STALE_EPOCH,
	// APPEND_NOT_AT_END, ...), or "" for a failure that is not one.
	Reason string
	// CommittedEnd and WriterEpoch are the stream's when the refusal is
	// about them (APPEND_NOT_AT_END, STALE_EPOCH).
	CommittedEnd uint64
	WriterEpoch  uint64
	Err          error
}

func (e *AppendError) Error() string {
	return fmt.Sprintf("client: append to stream %d: %v", e.StreamID, e.Err)
}

// Unwrap returns the cause.
func (e *AppendError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrFenced) true for a stale writer epoch.
func (e *AppendError) Is(target error) bool {
	return target == ErrFenced && e.Reason == ReasonStaleEpoch
}

// Appended is an acknowledged Append: its records are durably committed
// as offsets [Start, End) of the stream, at metadata Version, in Object.
type Appended struct {
	StreamID   uint64
	Start, End uint64
	Version    uint64
	Object     *metadpb.ObjectRef
}

// Pending is an Append under way. Wait (or Done, then Wait) gives its
// answer.
type Pending struct {
	stream  uint64
	records [][]byte
	size    int
	done    chan struct{}
	// Set once, before done is closed.
	ack Appended
	err error
}

// Done is closed once the Append is answered.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Wait waits for the answer: the committed offsets, or why not. A ctx that
// ends first returns ctx's error and leaves the Append under way: its
// flush still commits it or fails it, and a later Wait tells which.
func (p *Pending) Wait(ctx context.Context) (Appended, error) {
	select {
	case <-p.done:
		return p.ack, p.err
	case <-ctx.Done():
		return Appended{}, &AppendError{StreamID: p.stream, Err: fmt.Errorf("%w (the append is still under way: %w)", ctx.Err(), ErrIndeterminate)}
	}
}

func (p *Pending) resolve(ack Appended, err error) {
	p.ack, p.err = ack, err
	close(p.done)
}

// streamState is what the Writer knows of a stream it opened.
type streamState struct {
	epoch uint64 // the writer epoch OpenForWrite gave this Writer
	end   uint64 // the committed end: where the next append starts
}

// Writer is the write side of a broker: it buffers Appends to many
// streams and commits them together as stream-set objects, one object
// upload and one CommitObject per flush (per MaxStreamsPerObject streams).
//
// # Flushing
//
// An Append's records are buffered; a flush starts when FlushBytes are
// buffered or the oldest buffered record is FlushInterval old (and on
// Close). One flush runs at a time: it takes everything buffered, lays
// each stream's records out one after another in one object (split into
// objects of at most MaxStreamsPerObject streams), uploads it under a
// fresh key to Config.Objects, and commits it with CommitObject: per
// stream, the Writer's epoch, the stream's known committed end as
// expected start, end = start + the number of records (an offset is a
// record), the byte range, its CRC-32C and the generation-0 index record.
// Appends buffered while a flush runs go to the next one.
//
// # Streams and fencing
//
// The first Append to a stream opens it for write at its flush
// (OpenForWrite, which bumps the writer epoch and fences earlier writers)
// and learns its committed end (DescribeStream); from then on the Writer
// owns the stream and tracks its end itself. If another writer opens the
// stream, the commit is refused STALE_EPOCH: the Writer drops the stream
// and every Append to it, buffered or later, fails with an *AppendError
// matching ErrFenced. A Writer never takes a fenced stream back.
//
// # Failures
//
// An indeterminate failure (a leader change, a timeout, a broken
// connection: ErrIndeterminate) is retried under the same request id, so
// the servers answer with the first outcome, until a definite answer or
// CommitTimeout. A definite refusal of some appends of an object (the
// object is all or none, so nothing of it committed) fails only the
// refused streams' Appends; the object is committed again at once without
// them, so the other streams' records are neither lost nor left to the
// caller. Any failure of a stream's Append — a refusal (APPEND_NOT_AT_END,
// STREAM_SEALED, ...), a failed upload, an outcome still indeterminate at
// CommitTimeout — also fails every Append to that stream buffered behind
// it, so the records that do commit to a stream are always a prefix of
// the ones made, in order. After a failure other than fencing the Writer
// forgets the stream; the next Append to it opens it again (a new epoch,
// which also fences a commit of this Writer's still in doubt).
//
// # Backpressure
//
// MaxBufferedBytes bounds the bytes of Appends made and not yet answered;
// an Append that would pass it waits, until its ctx ends, for a flush to
// answer earlier ones.
//
// # Ordering
//
// Appends to one stream commit in the order they were made (the order
// Append or AppendAsync returned in, across goroutines); each gets its
// own consecutive offsets.
type Writer struct {
	c    *Client
	cfg  WriterConfig
	m    *writerMetrics
	keys string // KeyPrefix and this Writer's random id

	// mu guards the buffer and the closing state, shared by Append's
	// callers and the flush loop.
	mu      sync.Mutex
	buf     buffer
	room    chan struct{}   // closed and replaced whenever room is freed
	fenced  map[uint64]bool // streams another writer took
	closing bool

	// kick wakes the loop: a first Append, FlushBytes reached, Close.
	kick chan struct{}
	// ctx is the Writer's life; cancelled when Close gives up.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the loop returns

	// Owned by the loop goroutine.
	streams map[uint64]*streamState
	seq     uint64 // objects uploaded
}

// NewWriter starts a Writer on this client. It uploads to Config.Objects,
// which it needs, and registers its metrics on Config.Metrics if set.
func (c *Client) NewWriter(cfg WriterConfig) (*Writer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if c.cfg.Objects == nil {
		return nil, errors.New("client: NewWriter needs Config.Objects, the object store to upload to")
	}
	cfg = cfg.withDefaults()
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{
		c: c, cfg: cfg, m: newWriterMetrics(c.cfg.Metrics), keys: cfg.KeyPrefix + NewRequestID()[:16] + "/",
		buf: newBuffer(), room: make(chan struct{}), fenced: map[uint64]bool{},
		kick: make(chan struct{}, 1), ctx: ctx, cancel: cancel, done: make(chan struct{}),
		streams: map[uint64]*streamState{},
	}
	go w.loop()
	return w, nil
}

// Append appends records (one offset each, in order) to a stream and
// waits until they are durably committed: AppendAsync, then Wait.
func (w *Writer) Append(ctx context.Context, stream uint64, records ...[]byte) (Appended, error) {
	p, err := w.AppendAsync(ctx, stream, records...)
	if err != nil {
		return Appended{}, err
	}
	return p.Wait(ctx)
}

// AppendAsync buffers records (one offset each, in order) for a stream and
// returns without waiting for the commit; Pending.Wait gives the answer.
// It waits only for room in the buffer (MaxBufferedBytes), until ctx ends.
// Each record must be non-empty.
func (w *Writer) AppendAsync(ctx context.Context, stream uint64, records ...[]byte) (*Pending, error) {
	p, err := w.newPending(stream, records)
	if err != nil {
		return nil, err
	}
	for {
		w.mu.Lock()
		if w.closing {
			w.mu.Unlock()
			return nil, &AppendError{StreamID: stream, Err: ErrWriterClosed}
		}
		if w.fenced[stream] {
			w.mu.Unlock()
			return nil, w.fencedError(stream)
		}
		if w.buf.room(p.size, w.cfg.MaxBufferedBytes) {
			first := len(w.buf.streams) == 0
			w.buf.add(p, w.cfg.Clock.Now())
			full := w.buf.queued >= w.cfg.FlushBytes
			w.mu.Unlock()
			w.m.buffered.Add(float64(p.size))
			if first || full {
				w.wake()
			}
			return p, nil
		}
		room := w.room
		w.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return nil, &AppendError{StreamID: stream, Err: fmt.Errorf("waiting for buffer room (MaxBufferedBytes %d): %w", w.cfg.MaxBufferedBytes, ctx.Err())}
		}
	}
}

// newPending checks an Append's records and copies them: the caller may
// reuse its slices once Append returns.
func (w *Writer) newPending(stream uint64, records [][]byte) (*Pending, error) {
	if stream == 0 {
		return nil, &AppendError{StreamID: stream, Err: fmt.Errorf("%w: stream_id: 0 is not a stream", ErrInvalidArgument)}
	}
	if len(records) == 0 {
		return nil, &AppendError{StreamID: stream, Err: fmt.Errorf("%w: records: none given", ErrInvalidArgument)}
	}
	size := 0
	for i, r := range records {
		if len(r) == 0 {
			return nil, &AppendError{StreamID: stream, Err: fmt.Errorf("%w: records[%d]: empty; a record has at least one byte", ErrInvalidArgument, i)}
		}
		size += len(r)
	}
	if size > w.cfg.MaxBufferedBytes {
		return nil, &AppendError{StreamID: stream, Err: fmt.Errorf("%w: records: %d bytes exceed WriterConfig.MaxBufferedBytes %d", ErrInvalidArgument, size, w.cfg.MaxBufferedBytes)}
	}
	data := make([]byte, 0, size)
	own := make([][]byte, len(records))
	for i, r := range records {
		data = append(data, r...)
		own[i] = data[len(data)-len(r):]
	}
	return &Pending{stream: stream, records: own, size: size, done: make(chan struct{})}, nil
}

func (w *Writer) fencedError(stream uint64) error {
	return &AppendError{StreamID: stream, Reason: ReasonStaleEpoch, Err: fmt.Errorf("%w (%w)", ErrFenced, ErrStaleEpoch)}
}

// wake nudges the loop without blocking.
func (w *Writer) wake() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Close flushes everything buffered, waits for it to be answered, and
// stops the Writer. If ctx ends first, the flush under way is abandoned:
// its Appends and the ones still buffered fail with the cancellation
// (matching ErrIndeterminate where a commit may have happened), and Close
// returns ctx's error.
// Appends after Close fail with ErrWriterClosed.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	w.closing = true
	w.mu.Unlock()
	w.wake()
	select {
	case <-w.done:
		return nil
	case <-ctx.Done():
		w.cancel()
		<-w.done
		return ctx.Err()
	}
}

// loop is the Writer's one goroutine: it waits for a flush to fall due,
// runs it, and returns once closing with nothing buffered.
func (w *Writer) loop() {
	defer close(w.done)
	defer w.cancel()
	timer := w.cfg.Clock.NewTimer(time.Hour)
	timer.Stop() // armed only while something buffered waits for its age
	defer timer.Stop()
	for {
		now := w.cfg.Clock.Now()
		w.mu.Lock()
		due := w.buf.due(now, w.cfg.FlushBytes, w.cfg.FlushInterval, w.closing)
		idle := w.closing && len(w.buf.streams) == 0
		wake := w.buf.wake(w.cfg.FlushInterval)
		var batch []*streamBatch
		if due {
			batch = w.buf.take()
		}
		w.mu.Unlock()
		switch {
		case due:
			w.flush(batch)
			continue
		case idle:
			return
		}
		if w.ctx.Err() != nil {
			return
		}
		var fire <-chan time.Time
		if !wake.IsZero() {
			timer.Reset(wake.Sub(now))
			fire = timer.C()
		}
		select {
		case <-w.kick:
		case <-fire:
		case <-w.ctx.Done():
		}
		timer.Stop()
	}
}

// flush opens the batch's new streams, lays the batch out as objects and
// commits each; every Append of the batch is answered when it returns.
func (w *Writer) flush(batch []*streamBatch) {
	start := wall.Now()
	w.m.flushes.Inc()
	ready := w.openAll(batch)
	for _, plan := range planObjects(ready, w.cfg.MaxStreamsPerObject) {
		w.commit(plan)
	}
	w.m.flushSeconds.Observe(clock.Since(wall, start).Seconds())
}

// openAll gives each batch its stream's epoch and start, opening the
// streams this Writer does not own yet, OpenConcurrency at a time. The
// batches of streams that could not be opened are failed; the rest are
// returned, in order.
func (w *Writer) openAll(batch []*streamBatch) []*streamBatch {
	opened := make([]*streamState, len(batch))
	errs := make([]error, len(batch))
	sem := make(chan struct{}, w.cfg.OpenConcurrency)
	var wg sync.WaitGroup
	for i, b := range batch {
		if st, ok := w.streams[b.stream]; ok {
			opened[i] = st
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			opened[i], errs[i] = w.open(b.stream)
		}()
	}
	wg.Wait()
	var ready []*streamBatch
	for i, b := range batch {
		if errs[i] != nil {
			w.fail(b, &AppendError{StreamID: b.stream, Reason: Reason(errs[i]), Err: fmt.Errorf("opening the stream for write: %w", errs[i])})
			continue
		}
		w.streams[b.stream] = opened[i]
		b.epoch, b.start = opened[i].epoch, opened[i].end
		ready = append(ready, b)
	}
	return ready
}

// open takes a stream for write: OpenForWrite (a new epoch, fencing
// earlier writers), then its committed end, read after the open so that
// it includes every append of the writers the open fenced.
func (w *Writer) open(stream uint64) (*streamState, error) {
	opened, err := retryIndeterminate(w, func(ctx context.Context, id string) (*metadpb.OpenForWriteResponse, error) {
		return Call(ctx, w.c, counted(w.m.retries, w.c.Metad.OpenForWrite), &metadpb.OpenForWriteRequest{StreamId: stream, RequestId: id})
	})
	if err != nil {
		return nil, err
	}
	desc, err := retryIndeterminate(w, func(ctx context.Context, _ string) (*metadpb.DescribeStreamResponse, error) {
		return Call(ctx, w.c, counted(w.m.retries, w.c.Metad.DescribeStream), &metadpb.DescribeStreamRequest{StreamId: stream})
	})
	if err != nil {
		return nil, err
	}
	if desc.Stream.GetWriterEpoch() != opened.WriterEpoch {
		// Another writer opened it between our open and our read.
		return nil, &Error{Code: codes.FailedPrecondition, Reason: ReasonStaleEpoch, Definite: true,
			Message: fmt.Sprintf("stream %d opened by another writer (epoch %d) right after this one (epoch %d)", stream, desc.Stream.GetWriterEpoch(), opened.WriterEpoch)}
	}
	return &streamState{epoch: opened.WriterEpoch, end: desc.Stream.GetCommittedEnd()}, nil
}

// retryIndeterminate runs call under one request id until it succeeds,
// fails definitely, CommitTimeout passes or the Writer is closed. Call
// already retries what the server marked retryable within each attempt's
// Timeout; this outer loop covers the rest of what may have happened.
func retryIndeterminate[Resp any](w *Writer, call func(ctx context.Context, requestID string) (Resp, error)) (Resp, error) {
	id := NewRequestID()
	deadline := wall.Now().Add(w.cfg.CommitTimeout)
	delay := 50 * time.Millisecond
	for {
		resp, err := call(w.ctx, id)
		if err == nil || !errors.Is(err, ErrIndeterminate) || w.ctx.Err() != nil || wall.Now().After(deadline) {
			return resp, err
		}
		w.m.retries.Inc()
		select {
		case <-w.ctx.Done():
			return resp, err
		case <-clock.After(wall, delay/2+rand.N(delay/2+1)):
		}
		delay = min(2*delay, time.Second)
	}
}

// counted wraps an RPC for one Call, counting every attempt after the
// first as a retry (Call retries what the server marked retryable).
func counted[Req, Resp any](retries prometheus.Counter, rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error)) func(context.Context, Req, ...grpc.CallOption) (Resp, error) {
	first := true
	return func(ctx context.Context, req Req, opts ...grpc.CallOption) (Resp, error) {
		if !first {
			retries.Inc()
		}
		first = false
		return rpc(ctx, req, opts...)
	}
}

// commit uploads a plan's object and commits it. Refused appends are
// failed and the rest committed again without them, until none is left.
func (w *Writer) commit(plan *objectPlan) {
	obj, err := w.upload(plan)
	if err != nil {
		for _, b := range plan.parts {
			w.fail(b, &AppendError{StreamID: b.stream, Err: fmt.Errorf("uploading the object: %w", err)})
		}
		return
	}
	for len(plan.parts) > 0 {
		resp, err := retryIndeterminate(w, func(ctx context.Context, id string) (*metadpb.CommitObjectResponse, error) {
			return Call(ctx, w.c, counted(w.m.retries, w.c.Metad.CommitObject), &metadpb.CommitObjectRequest{Object: obj, Size: uint64(len(plan.data)), Appends: plan.appends, RequestId: id})
		})
		if err == nil {
			w.committed(plan, obj, resp.Version)
			return
		}
		refused := w.refused(plan, err)
		if refused == nil {
			// The whole object failed: not one append's doing.
			for _, b := range plan.parts {
				w.fail(b, &AppendError{StreamID: b.stream, Reason: Reason(err), Err: err})
			}
			return
		}
		plan = plan.without(refused)
	}
}

// upload puts the plan's bytes under a fresh key. A store that did not
// answer (objectstore.ErrUnavailable, or an attempt out of time) is tried
// again until CommitTimeout: a key is never reused, so that is safe. Any
// other failure is the flush's at once.
func (w *Writer) upload(plan *objectPlan) (*metadpb.ObjectRef, error) {
	w.seq++
	key := fmt.Sprintf("%s%020d", w.keys, w.seq)
	deadline := wall.Now().Add(w.cfg.CommitTimeout)
	for {
		ctx, cancel := context.WithTimeout(w.ctx, w.c.cfg.Timeout)
		info, err := w.c.cfg.Objects.Put(ctx, key, bytes.NewReader(plan.data))
		cancel()
		if err == nil {
			w.m.uploaded.Add(float64(len(plan.data)))
			return &metadpb.ObjectRef{Key: info.Key, Identity: info.Identity}, nil
		}
		transient := errors.Is(err, objectstore.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded)
		if !transient || w.ctx.Err() != nil || wall.Now().After(deadline) {
			return nil, err
		}
		w.m.retries.Inc()
		select {
		case <-w.ctx.Done():
		case <-clock.After(wall, 100*time.Millisecond):
		}
	}
}

// committed answers a committed plan's Appends and advances its streams.
func (w *Writer) committed(plan *objectPlan, obj *metadpb.ObjectRef, version uint64) {
	w.m.objects.Inc()
	w.m.appends.Add(float64(len(plan.parts)))
	for i, b := range plan.parts {
		w.streams[b.stream].end = plan.appends[i].End
		for j, ack := range b.acks(version, obj) {
			b.pending[j].resolve(ack, nil)
		}
		w.settle(b.size())
	}
}

// refused fails the appends a CommitObject refusal names and returns their
// indexes in the plan, or nil if the refusal names none (the object's own
// failure, or an indeterminate one).
func (w *Writer) refused(plan *objectPlan, err error) map[int]bool {
	e, ok := AsError(err)
	if !ok || !e.Definite || len(e.Appends) == 0 {
		return nil
	}
	out := map[int]bool{}
	for _, r := range e.Appends {
		i := int(r.Index)
		if i >= len(plan.parts) || out[i] {
			continue
		}
		out[i] = true
		w.m.refusals.WithLabelValues(r.Reason).Inc()
		code := codes.Unknown
		if r.Reason == e.Reason {
			code = e.Code
		}
		cause := &Error{Code: code, Reason: r.Reason, Definite: true, Field: r.Field, Message: r.Message}
		w.fail(plan.parts[i], &AppendError{StreamID: r.StreamId, Reason: r.Reason, CommittedEnd: r.CommittedEnd, WriterEpoch: r.WriterEpoch, Err: cause})
	}
	if len(out) == 0 {
		// Refusals naming no append of this plan: the object's failure,
		// not theirs (and committing the same plan again would loop).
		return nil
	}
	return out
}

// fail answers a batch's Appends with err, and every Append to its stream
// buffered behind them too: a stream's commits stay a prefix of its
// Appends. The stream is forgotten (opened again on its next Append), or
// remembered as fenced.
func (w *Writer) fail(b *streamBatch, err *AppendError) {
	delete(w.streams, b.stream)
	w.mu.Lock()
	if err.Reason == ReasonStaleEpoch {
		w.fenced[b.stream] = true
	}
	behind := w.buf.drop(b.stream)
	w.mu.Unlock()
	for _, p := range b.pending {
		p.resolve(Appended{}, err)
	}
	for _, p := range behind {
		p.resolve(Appended{}, err)
	}
	w.m.buffered.Sub(float64(sizeOf(behind)))
	w.settle(b.size())
}

func sizeOf(ps []*Pending) int {
	n := 0
	for _, p := range ps {
		n += p.size
	}
	return n
}

// settle releases the room of answered in-flight bytes.
func (w *Writer) settle(size int) {
	w.mu.Lock()
	w.buf.settle(size)
	w.mu.Unlock()
	w.m.buffered.Sub(float64(size))
	w.freeRoom()
}

// freeRoom wakes every Append waiting for room.
func (w *Writer) freeRoom() {
	w.mu.Lock()
	close(w.room)
	w.room = make(chan struct{})
	w.mu.Unlock()
}
