package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/checksum"
	"github.com/metad/metad/internal/fakeclock"
	"github.com/metad/metad/objectstore"
)

func pending(stream uint64, records ...string) *Pending {
	p := &Pending{stream: stream, done: make(chan struct{})}
	for _, r := range records {
		p.records = append(p.records, []byte(r))
		p.size += len(r)
	}
	return p
}

// TestPlanObjects: a flush's layout. Streams lie one after another in
// stream order, each append's range and checksum are exactly its records,
// offsets count records, and more streams than the bound split into
// several objects.
func TestPlanObjects(t *testing.T) {
	batches := []*streamBatch{
		{stream: 3, epoch: 7, start: 10, pending: []*Pending{pending(3, "aa", "b"), pending(3, "ccc")}},
		{stream: 5, epoch: 1, start: 0, pending: []*Pending{pending(5, "dddd")}},
		{stream: 9, epoch: 2, start: 4, pending: []*Pending{pending(9, "e", "f", "g")}},
	}
	plans := planObjects(batches, 2)
	if len(plans) != 2 {
		t.Fatalf("%d objects, want 2 (3 streams, at most 2 per object)", len(plans))
	}
	type want struct {
		stream, epoch, start, end, off uint64
		data                           string
	}
	check := func(p *objectPlan, object string, wants []want) {
		t.Helper()
		if string(p.data) != object {
			t.Fatalf("object %q, want %q", p.data, object)
		}
		if len(p.appends) != len(wants) || len(p.parts) != len(wants) {
			t.Fatalf("%d appends, %d parts, want %d", len(p.appends), len(p.parts), len(wants))
		}
		for i, w := range wants {
			a := p.appends[i]
			if a.StreamId != w.stream || a.WriterEpoch != w.epoch || a.ExpectedStart != w.start || a.End != w.end || !a.IndexGen0 {
				t.Errorf("append %d: %v, want stream %d epoch %d [%d,%d) indexed", i, a, w.stream, w.epoch, w.start, w.end)
			}
			got := p.data[a.Bytes.Offset : a.Bytes.Offset+a.Bytes.Length]
			if a.Bytes.Offset != w.off || string(got) != w.data {
				t.Errorf("append %d: bytes at %d %q, want at %d %q", i, a.Bytes.Offset, got, w.off, w.data)
			}
			if a.DataCrc32C == nil || *a.DataCrc32C != *checksum.Of([]byte(w.data)).Ptr() {
				t.Errorf("append %d: data checksum %v, want the CRC-32C of %q", i, a.DataCrc32C, w.data)
			}
			if p.parts[i].stream != w.stream {
				t.Errorf("part %d is stream %d, want %d", i, p.parts[i].stream, w.stream)
			}
		}
	}
	check(plans[0], "aabcccdddd", []want{{3, 7, 10, 13, 0, "aabccc"}, {5, 1, 0, 1, 6, "dddd"}})
	check(plans[1], "efg", []want{{9, 2, 4, 7, 0, "efg"}})

	// Dropping a refused part keeps the object and the others' ranges.
	rest := plans[0].without(map[int]bool{0: true})
	check(rest, "aabcccdddd", []want{{5, 1, 0, 1, 6, "dddd"}})

	// Each Append of a part gets its own consecutive offsets.
	acks := batches[0].acks(42, nil)
	if len(acks) != 2 || acks[0].Start != 10 || acks[0].End != 12 || acks[1].Start != 12 || acks[1].End != 13 || acks[1].Version != 42 {
		t.Errorf("acks %+v, want [10,12) and [12,13) at version 42", acks)
	}
}

// TestBufferDueTakeDrop: the buffer's flush rule (bytes, age, closing),
// its order, and its accounting of room.
func TestBufferDueTakeDrop(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := newBuffer()
	if b.due(t0, 10, time.Second, true) || !b.wake(time.Second).IsZero() {
		t.Fatal("an empty buffer is never due and never wakes")
	}
	b.add(pending(2, "abc"), t0)
	b.add(pending(1, "de"), t0.Add(time.Millisecond))
	b.add(pending(2, "f"), t0.Add(2*time.Millisecond))
	if b.due(t0.Add(999*time.Millisecond), 10, time.Second, false) {
		t.Error("due before FlushBytes and FlushInterval")
	}
	if !b.due(t0.Add(time.Second), 10, time.Second, false) {
		t.Error("not due once the oldest record is FlushInterval old")
	}
	if !b.due(t0, 6, time.Second, false) || !b.due(t0, 10, time.Second, true) {
		t.Error("not due at FlushBytes, or when closing")
	}
	if got := b.wake(time.Second); !got.Equal(t0.Add(time.Second)) {
		t.Errorf("wakes at %v, want the oldest's time plus the interval", got)
	}
	if !b.room(4, 10) || b.room(5, 10) {
		t.Error("room: 6 bytes queued under a limit of 10 fit 4 more, not 5")
	}
	batch := b.take()
	if len(batch) != 2 || batch[0].stream != 1 || batch[1].stream != 2 || len(batch[1].pending) != 2 {
		t.Fatalf("take: %v, want stream 1 then stream 2's two Appends in order", batch)
	}
	if b.queued != 0 || b.inflight != 6 || b.room(5, 10) {
		t.Errorf("after take: queued %d inflight %d; in-flight bytes still take room", b.queued, b.inflight)
	}
	b.add(pending(2, "gh"), t0)
	b.add(pending(3, "i"), t0)
	if dropped := b.drop(2); len(dropped) != 1 || b.queued != 1 {
		t.Errorf("drop: %d Appends, %d bytes queued; want 1 and 1", len(dropped), b.queued)
	}
	b.settle(6)
	if b.inflight != 0 {
		t.Errorf("inflight %d after settling, want 0", b.inflight)
	}
}

// TestWriterConfigValidate: every bad field is named, all at once.
func TestWriterConfigValidate(t *testing.T) {
	if err := (WriterConfig{}).Validate(); err != nil {
		t.Fatalf("the defaults are invalid: %v", err)
	}
	err := WriterConfig{FlushBytes: -1, FlushInterval: -time.Second, MaxBufferedBytes: -5, MaxStreamsPerObject: -1,
		CommitTimeout: time.Hour, OpenConcurrency: -2}.Validate()
	for _, field := range []string{"FlushBytes", "FlushInterval", "MaxBufferedBytes", "MaxStreamsPerObject", "CommitTimeout", "OpenConcurrency"} {
		if err == nil || !strings.Contains(err.Error(), "WriterConfig."+field+":") {
			t.Errorf("error %v does not name %s", err, field)
		}
	}
	err = WriterConfig{FlushBytes: 100, MaxBufferedBytes: 10}.Validate()
	if err == nil || !strings.Contains(err.Error(), "WriterConfig.FlushBytes: 100 exceeds MaxBufferedBytes 10") {
		t.Errorf("FlushBytes over MaxBufferedBytes: %v", err)
	}
}

// fakeStreams is a MetadClient holding streams as the state machine does
// for writers: epochs, committed ends, CommitObject all or none with
// per-append refusals, and a request-id dedup table. Hooks inject faults.
type fakeStreams struct {
	metadpb.MetadClient

	mu      sync.Mutex
	streams map[uint64]*fakeStream
	dedup   map[string]*metadpb.CommitObjectResponse
	commits []*metadpb.CommitObjectRequest // applied, in order
	calls   int                            // CommitObject calls
	// lose, if set, is asked before each CommitObject answer: true applies
	// it (if it applies) and loses the answer, as a leader dying after
	// committing would.
	lose func(req *metadpb.CommitObjectRequest) bool
	// hold, if set, blocks every CommitObject until it is closed;
	// entered, if set, is sent each CommitObject request first.
	hold    chan struct{}
	entered chan *metadpb.CommitObjectRequest
	// lowLevel refuses every CommitObject FEATURE_LEVEL, as a cluster
	// below level 4 does.
	lowLevel bool
}

type fakeStream struct {
	epoch, end uint64
	sealed     bool
}

func newFakeStreams(ids ...uint64) *fakeStreams {
	f := &fakeStreams{streams: map[uint64]*fakeStream{}, dedup: map[string]*metadpb.CommitObjectResponse{}}
	for _, id := range ids {
		f.streams[id] = &fakeStream{}
	}
	return f
}

func (f *fakeStreams) OpenForWrite(_ context.Context, req *metadpb.OpenForWriteRequest, _ ...grpc.CallOption) (*metadpb.OpenForWriteResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.streams[req.StreamId]
	if !ok {
		return nil, refusal(codes.NotFound, ReasonStreamNotFound, "stream_id", nil)
	}
	s.epoch++
	return &metadpb.OpenForWriteResponse{WriterEpoch: s.epoch}, nil
}

func (f *fakeStreams) DescribeStream(_ context.Context, req *metadpb.DescribeStreamRequest, _ ...grpc.CallOption) (*metadpb.DescribeStreamResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.streams[req.StreamId]
	return &metadpb.DescribeStreamResponse{Stream: &metadpb.Stream{Id: req.StreamId, WriterEpoch: s.epoch, CommittedEnd: s.end}}, nil
}

func (f *fakeStreams) CommitObject(ctx context.Context, req *metadpb.CommitObjectRequest, _ ...grpc.CallOption) (*metadpb.CommitObjectResponse, error) {
	if f.entered != nil {
		f.entered <- req
	}
	if f.hold != nil {
		select {
		case <-f.hold:
		case <-ctx.Done():
			return nil, status.Error(codes.DeadlineExceeded, ctx.Err().Error())
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	resp, err := f.apply(req)
	if f.lose != nil && f.lose(req) {
		return nil, status.Error(codes.Unavailable, "connection lost after the commit")
	}
	return resp, err
}

func (f *fakeStreams) apply(req *metadpb.CommitObjectRequest) (*metadpb.CommitObjectResponse, error) {
	if f.lowLevel {
		return nil, refusal(codes.FailedPrecondition, ReasonFeatureLevel, "", nil)
	}
	if resp, ok := f.dedup[req.RequestId]; ok {
		return resp, nil
	}
	var refused []*metadpb.AppendRefusal
	for i, a := range req.Appends {
		s := f.streams[a.StreamId]
		r := &metadpb.AppendRefusal{Index: uint32(i), StreamId: a.StreamId, CommittedEnd: s.end, WriterEpoch: s.epoch}
		switch {
		case s.sealed:
			r.Reason = ReasonStreamSealed
		case a.WriterEpoch < s.epoch:
			r.Reason = ReasonStaleEpoch
		case a.ExpectedStart != s.end:
			r.Reason = ReasonAppendNotAtEnd
		case a.Bytes.Offset+a.Bytes.Length > req.Size:
			r.Reason = ReasonInvalidArgument
		default:
			continue
		}
		r.Field = fmt.Sprintf("appends[%d]", i)
		refused = append(refused, r)
	}
	if len(refused) > 0 {
		return nil, refusal(codes.FailedPrecondition, refused[0].Reason, refused[0].Field, refused)
	}
	resp := &metadpb.CommitObjectResponse{Version: uint64(len(f.commits) + 1)}
	for _, a := range req.Appends {
		f.streams[a.StreamId].end = a.End
		resp.CommittedEnds = append(resp.CommittedEnds, a.End)
	}
	f.commits = append(f.commits, req)
	f.dedup[req.RequestId] = resp
	return resp, nil
}

// refusal is a definite metad status, as api/ builds it.
func refusal(code codes.Code, reason, field string, appends []*metadpb.AppendRefusal) error {
	details := []any{&errdetails.ErrorInfo{Reason: reason, Domain: "metad.dev", Metadata: map[string]string{"definite": "true", "field": field}}}
	st := status.New(code, reason)
	var err error
	if appends != nil {
		st, err = st.WithDetails(details[0].(*errdetails.ErrorInfo), &metadpb.CommitObjectRefusal{Appends: appends})
	} else {
		st, err = st.WithDetails(details[0].(*errdetails.ErrorInfo))
	}
	if err != nil {
		panic(err)
	}
	return st.Err()
}

// end is a stream's committed end on the fake.
func (f *fakeStreams) end(id uint64) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.streams[id].end
}

// newTestWriter is a Writer on f over a file store, with cfg.
func newTestWriter(t *testing.T, f *fakeStreams, cfg WriterConfig, reg prometheus.Registerer) (*Writer, *objectstore.Local) {
	t.Helper()
	store, err := objectstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := newFakeClient(t, store, nil, reg)
	c.cfg.Metrics = reg
	c.Metad = f
	w, err := c.NewWriter(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close(context.Background()) })
	return w, store
}

// readBack reads an acknowledged Append's bytes from the store, through
// the committed append that holds them.
func readBack(t *testing.T, f *fakeStreams, store objectstore.Store, ack Appended) []byte {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, req := range f.commits {
		if req.Object.Key != ack.Object.Key {
			continue
		}
		for _, a := range req.Appends {
			if a.StreamId == ack.StreamID && a.ExpectedStart <= ack.Start && ack.End <= a.End {
				data, err := objectstore.ReadRange(context.Background(), store, req.Object.Key, req.Object.Identity,
					int64(a.Bytes.Offset), int64(a.Bytes.Length), checksum.FromPtr(a.DataCrc32C))
				if err != nil {
					t.Fatal(err)
				}
				return data
			}
		}
	}
	t.Fatalf("no committed append holds %+v", ack)
	return nil
}

// TestWriterCommitsInOrder: Appends to many streams, several each, made
// asynchronously, commit as consecutive offsets per stream in the order
// made; the bytes of each stream's committed appends are its records in
// order; streams beyond MaxStreamsPerObject go to further objects.
func TestWriterCommitsInOrder(t *testing.T) {
	const streams, per = 7, 5
	ids := make([]uint64, streams)
	for i := range ids {
		ids[i] = uint64(i + 1)
	}
	f := newFakeStreams(ids...)
	w, store := newTestWriter(t, f, WriterConfig{MaxStreamsPerObject: 3, FlushBytes: 1 << 20}, nil)
	ctx := context.Background()
	var ps []*Pending
	want := map[uint64]string{}
	for r := range per {
		for _, id := range ids {
			rec := fmt.Sprintf("s%d-r%d;", id, r)
			want[id] += rec
			p, err := w.AppendAsync(ctx, id, []byte(rec))
			if err != nil {
				t.Fatal(err)
			}
			ps = append(ps, p)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[uint64]string{}
	next := map[uint64]uint64{}
	for _, p := range ps {
		ack, err := p.Wait(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ack.Start != next[ack.StreamID] || ack.End != ack.Start+1 {
			t.Fatalf("stream %d: acknowledged [%d,%d), want [%d,%d)", ack.StreamID, ack.Start, ack.End, next[ack.StreamID], next[ack.StreamID]+1)
		}
		next[ack.StreamID] = ack.End
	}
	for _, id := range ids {
		if f.end(id) != per {
			t.Errorf("stream %d: committed end %d, want %d", id, f.end(id), per)
		}
	}
	f.mu.Lock()
	commits := append([]*metadpb.CommitObjectRequest(nil), f.commits...)
	f.mu.Unlock()
	for _, req := range commits {
		if len(req.Appends) > 3 {
			t.Errorf("an object of %d streams, bound 3", len(req.Appends))
		}
		for _, a := range req.Appends {
			data, err := objectstore.ReadRange(ctx, store, req.Object.Key, req.Object.Identity, int64(a.Bytes.Offset), int64(a.Bytes.Length), checksum.FromPtr(a.DataCrc32C))
			if err != nil {
				t.Fatal(err)
			}
			got[a.StreamId] += string(data)
		}
	}
	for _, id := range ids {
		if got[id] != want[id] {
			t.Errorf("stream %d holds %q, want %q", id, got[id], want[id])
		}
	}
}

// TestWriterRetriesUnderOneRequestID: a commit whose answer is lost (it
// applied) is retried under the same request id and applied once.
func TestWriterRetriesUnderOneRequestID(t *testing.T) {
	f := newFakeStreams(1, 2)
	lost := 0
	f.lose = func(*metadpb.CommitObjectRequest) bool { lost++; return lost <= 2 }
	reg := prometheus.NewRegistry()
	w, store := newTestWriter(t, f, WriterConfig{}, reg)
	ctx := context.Background()
	p, err := w.AppendAsync(ctx, 2, []byte("x"), []byte("yz"))
	if err != nil {
		t.Fatal(err)
	}
	ack, err := w.Append(ctx, 1, []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	ack2, err := p.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	applied, calls := len(f.commits), f.calls
	f.mu.Unlock()
	if applied != 1 || calls != 3 {
		t.Fatalf("%d commits applied over %d calls, want 1 over 3 (two answers lost)", applied, calls)
	}
	if ack.Start != 0 || ack.End != 1 || ack2.Start != 0 || ack2.End != 2 || f.end(1) != 1 || f.end(2) != 2 {
		t.Errorf("acks %+v %+v, ends %d %d", ack, ack2, f.end(1), f.end(2))
	}
	if got := readBack(t, f, store, ack2); string(got) != "xyz" {
		t.Errorf("stream 2 reads %q", got)
	}
	if n := gatheredCounter(t, reg, "metad_client_writer_objects_committed_total"); n != 1 {
		t.Errorf("objects committed %v, want 1", n)
	}
	if n := gatheredCounter(t, reg, "metad_client_writer_retries_total"); n != 2 {
		t.Errorf("retries %v, want 2", n)
	}
}

// TestWriterFencedStreamDropped: another writer opens one stream of an
// object; its Appends fail as fenced, naming it, and so do later ones,
// while the object's other streams commit without it.
func TestWriterFencedStreamDropped(t *testing.T) {
	f := newFakeStreams(1, 2, 3)
	reg := prometheus.NewRegistry()
	w, store := newTestWriter(t, f, WriterConfig{}, reg)
	ctx := context.Background()
	for _, id := range []uint64{1, 2, 3} {
		if _, err := w.Append(ctx, id, []byte("first")); err != nil {
			t.Fatal(err)
		}
	}
	// Another writer takes stream 2.
	if _, err := f.OpenForWrite(ctx, &metadpb.OpenForWriteRequest{StreamId: 2}); err != nil {
		t.Fatal(err)
	}
	var ps []*Pending
	for _, id := range []uint64{1, 2, 3} {
		p, err := w.AppendAsync(ctx, id, []byte(fmt.Sprint("second-", id)))
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	for i, p := range ps {
		ack, err := p.Wait(ctx)
		if i == 1 {
			var ae *AppendError
			if !errors.Is(err, ErrFenced) || !errors.Is(err, ErrStaleEpoch) || !errors.As(err, &ae) || ae.StreamID != 2 || ae.WriterEpoch != 2 {
				t.Fatalf("stream 2: %v, want a fenced *AppendError naming stream 2 at epoch 2", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("stream %d: %v", i+1, err)
		}
		if got := readBack(t, f, store, ack); string(got) != fmt.Sprint("second-", i+1) {
			t.Errorf("stream %d reads %q", i+1, got)
		}
	}
	if _, err := w.AppendAsync(ctx, 2, []byte("again")); !errors.Is(err, ErrFenced) || !errors.Is(err, ErrStaleEpoch) {
		t.Errorf("an Append to a fenced stream: %v, want ErrFenced at once", err)
	}
	if f.end(2) != 1 {
		t.Errorf("stream 2 committed end %d, want 1", f.end(2))
	}
	if n := gatheredCounter(t, reg, "metad_client_writer_refusals_total"); n != 1 {
		t.Errorf("refusals %v, want 1", n)
	}
}

// TestWriterConflictFailsStreamThenReopens: an append that loses the
// compare-and-set fails with its stream named, and so does the Append
// buffered behind it; the next Append opens the stream again and commits
// at its real end.
func TestWriterConflictFailsStreamThenReopens(t *testing.T) {
	f := newFakeStreams(1)
	f.hold, f.entered = make(chan struct{}), make(chan *metadpb.CommitObjectRequest, 1)
	w, _ := newTestWriter(t, f, WriterConfig{}, nil)
	ctx := context.Background()
	p1, err := w.AppendAsync(ctx, 1, []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	// The commit of p1 is held; meanwhile someone with the same epoch
	// moves the end (as an earlier commit in doubt would have).
	<-f.entered
	f.entered = nil
	f.mu.Lock()
	f.streams[1].end = 5
	f.mu.Unlock()
	p2, err := w.AppendAsync(ctx, 1, []byte("b"))
	if err != nil {
		t.Fatal(err)
	}
	close(f.hold)
	for _, p := range []*Pending{p1, p2} {
		var ae *AppendError
		if _, err := p.Wait(ctx); !errors.Is(err, ErrAppendNotAtEnd) || !errors.As(err, &ae) || ae.StreamID != 1 || ae.CommittedEnd != 5 {
			t.Fatalf("%v, want APPEND_NOT_AT_END naming stream 1 at end 5", err)
		}
	}
	ack, err := w.Append(ctx, 1, []byte("c"))
	if err != nil || ack.Start != 5 || ack.End != 6 {
		t.Fatalf("after reopening: %+v %v, want [5,6)", ack, err)
	}
}

// TestWriterObjectRefused: a refusal of the object itself (no append
// named) fails every Append of it, each naming its stream, and the
// Writer goes on: once the cluster accepts objects, the streams are
// opened again and commit at their ends.
func TestWriterObjectRefused(t *testing.T) {
	f := newFakeStreams(1, 2)
	f.lowLevel = true
	w, _ := newTestWriter(t, f, WriterConfig{}, nil)
	ctx := context.Background()
	p1, err := w.AppendAsync(ctx, 1, []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := w.AppendAsync(ctx, 2, []byte("b"))
	if err != nil {
		t.Fatal(err)
	}
	for id, p := range map[uint64]*Pending{1: p1, 2: p2} {
		var ae *AppendError
		if _, err := p.Wait(ctx); !errors.Is(err, ErrFeatureLevel) || !errors.As(err, &ae) || ae.StreamID != id || errors.Is(err, ErrFenced) {
			t.Errorf("stream %d: %v, want FEATURE_LEVEL naming the stream", id, err)
		}
	}
	f.mu.Lock()
	f.lowLevel = false
	f.mu.Unlock()
	if ack, err := w.Append(ctx, 2, []byte("c")); err != nil || ack.Start != 0 {
		t.Fatalf("after the refusal: %+v %v", ack, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.streams[2].epoch != 2 {
		t.Errorf("stream 2 at epoch %d, want 2: a stream whose Append failed is opened again", f.streams[2].epoch)
	}
}

// flakyStore fails Put with the errors in fails, in turn, then stores.
type flakyStore struct {
	objectstore.Store
	mu    sync.Mutex
	fails []error
}

func (s *flakyStore) Put(ctx context.Context, key string, r io.Reader) (objectstore.Info, error) {
	s.mu.Lock()
	if len(s.fails) > 0 {
		err := s.fails[0]
		s.fails = s.fails[1:]
		s.mu.Unlock()
		return objectstore.Info{}, err
	}
	s.mu.Unlock()
	return s.Store.Put(ctx, key, r)
}

// TestWriterUpload: an object store that does not answer is tried again;
// one that fails otherwise fails the flush's Appends at once, each naming
// its stream, and nothing is committed.
func TestWriterUpload(t *testing.T) {
	f := newFakeStreams(1)
	reg := prometheus.NewRegistry()
	w, local := newTestWriter(t, f, WriterConfig{}, reg)
	store := &flakyStore{Store: local, fails: []error{
		fmt.Errorf("%w: put: 503", objectstore.ErrUnavailable), fmt.Errorf("%w: put: throttled", objectstore.ErrUnavailable),
	}}
	w.c.cfg.Objects = store
	ctx := context.Background()
	if ack, err := w.Append(ctx, 1, []byte("a")); err != nil || ack.End != 1 {
		t.Fatalf("through an unavailable store: %+v %v", ack, err)
	}
	if n := gatheredCounter(t, reg, "metad_client_writer_retries_total"); n != 2 {
		t.Errorf("retries %v, want 2", n)
	}
	denied := errors.New("permission denied")
	store.mu.Lock()
	store.fails = []error{denied}
	store.mu.Unlock()
	var ae *AppendError
	if _, err := w.Append(ctx, 1, []byte("b")); !errors.Is(err, denied) || !errors.As(err, &ae) || ae.StreamID != 1 {
		t.Fatalf("through a store that refuses: %v, want the store's error naming stream 1", err)
	}
	if f.end(1) != 1 {
		t.Errorf("committed end %d, want 1", f.end(1))
	}
}

// TestWriterBackpressure: an Append that would pass MaxBufferedBytes waits
// (until its ctx ends) for a flush to answer earlier Appends.
func TestWriterBackpressure(t *testing.T) {
	f := newFakeStreams(1)
	f.hold = make(chan struct{})
	reg := prometheus.NewRegistry()
	w, _ := newTestWriter(t, f, WriterConfig{MaxBufferedBytes: 10, FlushBytes: 4}, reg)
	ctx := context.Background()
	p1, err := w.AppendAsync(ctx, 1, []byte("12345678"))
	if err != nil {
		t.Fatal(err)
	}
	if v := gaugeValue(t, reg, "metad_client_writer_buffered_bytes"); v != 8 {
		t.Errorf("buffered bytes %v, want 8", v)
	}
	short, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := w.AppendAsync(short, 1, []byte("abc")); !errors.Is(err, context.Canceled) {
		t.Fatalf("an Append past the bound with its ctx done: %v, want it to wait and give up", err)
	}
	if _, err := w.AppendAsync(ctx, 1, bytes.Repeat([]byte("x"), 11)); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "MaxBufferedBytes") {
		t.Errorf("an Append larger than the bound: %v", err)
	}
	if _, err := p1.Wait(short); !errors.Is(err, context.Canceled) || !errors.Is(err, ErrIndeterminate) {
		t.Errorf("Wait with its ctx done while the commit is held: %v, want cancelled and indeterminate", err)
	}
	// An Append waiting for room gets it once the flush answers p1.
	got := make(chan error, 1)
	go func() {
		_, err := w.Append(ctx, 1, []byte("abc"))
		got <- err
	}()
	close(f.hold)
	if _, err := p1.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if f.end(1) != 2 {
		t.Errorf("committed end %d, want 2", f.end(1))
	}
}

// TestWriterFlushInterval: below FlushBytes, nothing is committed until
// the oldest record is FlushInterval old on the Writer's clock.
func TestWriterFlushInterval(t *testing.T) {
	f := newFakeStreams(1)
	clk := fakeclock.New(time.Unix(1000, 0))
	w, _ := newTestWriter(t, f, WriterConfig{FlushInterval: time.Second, Clock: clk}, nil)
	ctx := context.Background()
	p, err := w.AppendAsync(ctx, 1, []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	clk.BlockUntil(1) // the loop waits for the record's age
	select {
	case <-p.Done():
		t.Fatal("committed before FlushInterval passed")
	default:
	}
	clk.Advance(999 * time.Millisecond)
	clk.BlockUntil(1)
	select {
	case <-p.Done():
		t.Fatal("committed before FlushInterval passed")
	default:
	}
	clk.Advance(time.Millisecond)
	if ack, err := p.Wait(ctx); err != nil || ack.End != 1 {
		t.Fatalf("%+v %v", ack, err)
	}
}

// TestWriterClosed: Close flushes what is buffered; Appends after it fail.
func TestWriterClosed(t *testing.T) {
	f := newFakeStreams(1)
	clk := fakeclock.New(time.Unix(1000, 0))
	w, _ := newTestWriter(t, f, WriterConfig{FlushInterval: time.Hour, Clock: clk}, nil)
	ctx := context.Background()
	p, err := w.AppendAsync(ctx, 1, []byte("a"), []byte("b"))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if ack, err := p.Wait(ctx); err != nil || ack.End != 2 {
		t.Fatalf("%+v %v", ack, err)
	}
	if _, err := w.Append(ctx, 1, []byte("c")); !errors.Is(err, ErrWriterClosed) {
		t.Errorf("Append after Close: %v", err)
	}
	if _, err := w.Append(ctx, 0, []byte("c")); err == nil || !strings.Contains(err.Error(), "stream_id") {
		t.Errorf("stream 0: %v, want an error naming stream_id", err)
	}
}

func gatheredCounter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			sum := 0.0
			for _, m := range mf.Metric {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	return 0
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.Metric[0].GetGauge().GetValue()
		}
	}
	return 0
}

// TestWriterPropertyLostAnswersAndFencing: many streams written at once
// while the fake loses commit answers after applying them (a leader dying
// mid-commit) and other writers open random streams. Whatever happens,
// each stream's committed bytes are exactly the records of its
// acknowledged Appends, in order, at consecutive offsets from 0: nothing
// applied twice, nothing of a refused Append committed, nothing of the
// other streams lost. The seed (METAD_SEED to replay) fixes the faults'
// odds and the records; the goroutines' interleaving is the scheduler's.
func TestWriterPropertyLostAnswersAndFencing(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("METAD_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (METAD_SEED=%d to replay)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	const streams, rounds = 24, 6
	ids := make([]uint64, streams)
	for i := range ids {
		ids[i] = uint64(i + 1)
	}
	f := newFakeStreams(ids...)
	// Called under f.mu, after the commit applied (or was refused).
	f.lose = func(*metadpb.CommitObjectRequest) bool {
		if rng.IntN(6) == 0 {
			f.streams[ids[rng.IntN(streams)]].epoch++ // another writer opens it
		}
		return rng.IntN(4) == 0
	}
	sizes := make([][]int, streams) // records per Append, drawn up front
	for i := range sizes {
		for range rounds {
			sizes[i] = append(sizes[i], 1+rng.IntN(3))
		}
	}
	w, store := newTestWriter(t, f, WriterConfig{MaxStreamsPerObject: 5, FlushInterval: time.Millisecond}, nil)
	ctx := context.Background()
	acked := make([][]byte, streams) // the acknowledged records' bytes, per stream
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var next uint64
			for r, n := range sizes[i] {
				var recs [][]byte
				for k := range n {
					recs = append(recs, []byte(fmt.Sprintf("s%d.r%d.k%d;", id, r, k)))
				}
				ack, err := w.Append(ctx, id, recs...)
				if errors.Is(err, ErrFenced) {
					return
				}
				if err != nil {
					t.Errorf("stream %d: %v", id, err)
					return
				}
				if ack.Start != next || ack.End != next+uint64(n) {
					t.Errorf("stream %d: acknowledged [%d,%d), want [%d,%d)", id, ack.Start, ack.End, next, next+uint64(n))
					return
				}
				next = ack.End
				acked[i] = append(acked[i], bytes.Join(recs, nil)...)
			}
		}()
	}
	wg.Wait()
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	committed := make(map[uint64][]byte)
	ends := make(map[uint64]uint64)
	for _, req := range f.commits {
		for _, a := range req.Appends {
			if a.ExpectedStart != ends[a.StreamId] {
				t.Fatalf("stream %d: an append at %d after end %d", a.StreamId, a.ExpectedStart, ends[a.StreamId])
			}
			ends[a.StreamId] = a.End
			data, err := objectstore.ReadRange(ctx, store, req.Object.Key, req.Object.Identity, int64(a.Bytes.Offset), int64(a.Bytes.Length), checksum.FromPtr(a.DataCrc32C))
			if err != nil {
				t.Fatal(err)
			}
			committed[a.StreamId] = append(committed[a.StreamId], data...)
		}
	}
	fenced := 0
	for i, id := range ids {
		if !bytes.Equal(committed[id], acked[i]) {
			t.Errorf("stream %d committed %q, acknowledged %q", id, committed[id], acked[i])
		}
		if w.fenced[id] {
			fenced++
		}
	}
	t.Logf("%d commits over %d calls; %d of %d streams fenced", len(f.commits), f.calls, fenced, streams)
}
