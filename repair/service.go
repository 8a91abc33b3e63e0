package repair

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/metad/metad/checksum"
	"github.com/metad/metad/clock"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

// Store is what the repair loop needs from Raft: linearizable reads and
// proposals. Declared here so the loop does not depend on raftstore.
type Store interface {
	Read(ctx context.Context, fn func(State)) error
	Propose(ctx context.Context, cmd *fsmpb.Command) (*fsmpb.Result, error)
}

// Verifier checks a record's bytes in the object store, before a
// quarantined record is rebuilt or lifted. Intact reports whether the
// version exists, its bytes hash to its identity, and its byte range b
// matches the data checksum committed with it (absent: nothing more to
// check); an error means the store could not say (unavailable), which is
// not a verdict. A quarantine imposed by a failed data checksum is lifted
// only once the range itself checks out, never because the whole object
// still hashes right.
type Verifier interface {
	Intact(ctx context.Context, obj fsm.ObjectRef, b fsm.ByteRange, data checksum.Data) (bool, error)
}

var (
	// ErrNotLeader: repair runs only on the leader; ask it there.
	ErrNotLeader = errors.New("repair: not the leader")
	// ErrBusy: a bounded queue (requests, or verifications) is full; retry
	// later.
	ErrBusy = errors.New("repair: queue full")
	// ErrTimeout: a repair did not finish within its bound (RequestTimeout
	// for a requested repair, the pass's TimePerPass for a periodic check).
	// Indeterminate: a conditional command proposed before the end may
	// still commit (at most once); a later resolve or pass finds out.
	// Errors wrapping it also wrap context.DeadlineExceeded.
	ErrTimeout = errors.New("repair: timed out")
	// ErrEvidenceMissing: a committed offset has no append evidence.
	ErrEvidenceMissing = errors.New("repair: evidence missing")
	// ErrObjectUnusable: the evidence's object is no longer live.
	ErrObjectUnusable = errors.New("repair: evidence names an object that is not live")
	// ErrConflict: the conditional command kept failing because the state
	// kept changing under it.
	ErrConflict = errors.New("repair: state changed during repair")
)

// errNeedsCheck: the quick lane planned a repair that must first verify an
// object's bytes; the request moves to the verify lane.
var errNeedsCheck = errors.New("repair: the record's bytes must be verified first")

// Config bounds the loop.
type Config struct {
	// QueueSize bounds pending repair requests. Default 1024; range [1, 1<<16].
	QueueSize int
	// ScanInterval is the pause between periodic scan passes, so at most
	// one pass starts per ScanInterval. Default 10s; range [10ms, 1h].
	ScanInterval time.Duration
	// RecordsPerPass bounds the evidence entries one scan pass examines.
	// Default 1000; range [1, 1<<20].
	RecordsPerPass int
	// RepairsPerPass bounds the repairs one scan pass commits. Default 100;
	// range [1, 1<<16].
	RepairsPerPass int
	// TimePerPass bounds one scan pass and one re-verification pass, on the
	// service's clock. Default 2s; range [10ms, 1m].
	TimePerPass time.Duration
	// RequestTimeout bounds one repair a resolve asks for (Repair), from
	// the moment it is queued to its answer, verification included; the
	// resolve's own deadline bounds it further. Default 2s; range
	// [10ms, 1m].
	RequestTimeout time.Duration
	// VerifyQueueSize bounds the requested repairs waiting for the verify
	// lane, which checks objects' bytes apart from the quick rebuilds.
	// Default 64; range [1, 1<<12].
	VerifyQueueSize int
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{
		QueueSize: 1024, ScanInterval: 10 * time.Second, RecordsPerPass: 1000, RepairsPerPass: 100, TimePerPass: 2 * time.Second,
		RequestTimeout: 2 * time.Second, VerifyQueueSize: 64,
	}
}

// Validate reports every out-of-range setting.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf("repair: "+format, args...))
		}
	}
	check(c.QueueSize >= 1 && c.QueueSize <= 1<<16, "QueueSize %d outside [1, 65536]", c.QueueSize)
	check(c.ScanInterval >= 10*time.Millisecond && c.ScanInterval <= time.Hour, "ScanInterval %s outside [10ms, 1h]", c.ScanInterval)
	check(c.RecordsPerPass >= 1 && c.RecordsPerPass <= 1<<20, "RecordsPerPass %d outside [1, 1048576]", c.RecordsPerPass)
	check(c.RepairsPerPass >= 1 && c.RepairsPerPass <= 1<<16, "RepairsPerPass %d outside [1, 65536]", c.RepairsPerPass)
	check(c.TimePerPass >= 10*time.Millisecond && c.TimePerPass <= time.Minute, "TimePerPass %s outside [10ms, 1m]", c.TimePerPass)
	check(c.RequestTimeout >= 10*time.Millisecond && c.RequestTimeout <= time.Minute, "RequestTimeout %s outside [10ms, 1m]", c.RequestTimeout)
	check(c.VerifyQueueSize >= 1 && c.VerifyQueueSize <= 1<<12, "VerifyQueueSize %d outside [1, 4096]", c.VerifyQueueSize)
	return errors.Join(errs...)
}

// Service runs repair on the leader: requests from resolves, and bounded
// periodic passes. Run is called for each leadership term and returns when
// its context ends (step-down); outside Run, Repair answers ErrNotLeader.
//
// Run works in two lanes. The quick lane (Run's own goroutine) plans and
// commits rebuilds: Raft reads and proposals only. The verify lane (a
// goroutine Run starts and joins) does everything that reads an object's
// bytes — a requested repair of a quarantined record, the periodic
// re-verification of quarantined records — because one such check on a
// stalled store can take as long as its bound allows, and a rebuild of
// another item must not wait behind it. Both lanes commit through the same
// conditional commands, so at most one repair of an item takes effect
// whichever lane, or leader, gets there first.
type Service struct {
	// Set by New, read-only afterwards.
	cfg     Config
	store   Store
	log     *slog.Logger
	clock   clock.Clock
	verify  Verifier // nil: quarantined records are never rebuilt
	metrics *metrics

	// mu guards queue: non-nil exactly while Run is running.
	mu    sync.Mutex
	queue chan request
}

type request struct {
	stream, offset uint64
	// ctx is the asking resolve's, bounded by RequestTimeout from when it
	// was queued (Repair); nil for a hint, which the lane bounds when it
	// starts on it.
	ctx context.Context
	// done receives the outcome exactly once: from the lane that finished
	// the request, or ErrNotLeader when the term ends first. nil for hints.
	done chan error
}

func (r request) reply(err error) {
	if r.done != nil {
		r.done <- err // buffered for this one reply
	}
}

// Option adjusts a Service.
type Option func(*Service)

// WithClock makes the loop read time and wait through c (default
// clock.Real); tests pass a fake.
func WithClock(c clock.Clock) Option { return func(s *Service) { s.clock = c } }

// WithVerifier lets repair rebuild a quarantined generation-0 record once
// v finds its bytes intact (without one, a quarantine is never lifted).
func WithVerifier(v Verifier) Option { return func(s *Service) { s.verify = v } }

// New returns a Service; call Run on each leadership term.
func New(cfg Config, store Store, log *slog.Logger, reg prometheus.Registerer, opts ...Option) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, store: store, log: log, clock: clock.Real, metrics: newMetrics(reg)}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Repair asks the running loop to repair the generation-0 record covering
// (stream, offset) and waits for the outcome: at most RequestTimeout on
// the service's clock, and never past ctx. Out of time it returns an error
// wrapping ErrTimeout (or ctx's own cause); the repair then stops at its
// next step, and whatever it did not commit is left to a later attempt.
func (s *Service) Repair(ctx context.Context, stream, offset uint64) error {
	ctx, stop := s.bound(ctx, s.cfg.RequestTimeout)
	defer stop()
	done := make(chan error, 1)
	if err := s.enqueue(request{stream: stream, offset: offset, ctx: ctx, done: done}); err != nil {
		return err
	}
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		err = context.Cause(ctx)
	}
	if errors.Is(err, ErrTimeout) {
		s.metrics.timeouts.WithLabelValues("request").Inc()
	}
	return err
}

// Hint asks for a repair without waiting; dropped if the queue is full or
// this node is not the leader. It is bounded by RequestTimeout from when a
// lane starts on it.
func (s *Service) Hint(stream, offset uint64) {
	_ = s.enqueue(request{stream: stream, offset: offset})
}

func (s *Service) enqueue(r request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.queue == nil {
		return ErrNotLeader
	}
	select {
	case s.queue <- r:
		s.metrics.backlog.Set(float64(len(s.queue)))
		return nil
	default:
		return ErrBusy
	}
}

// bound returns ctx, ended also once d has passed on the service's clock
// with a cause wrapping ErrTimeout and context.DeadlineExceeded, and stop,
// which the caller must call when done: it stops the timer and joins the
// goroutine that waits on it. The bound is on the injected clock, not a
// context deadline, so that tests move it with the rest of the loop's time.
func (s *Service) bound(ctx context.Context, d time.Duration) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	timer := s.clock.NewTimer(d)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case <-timer.C():
			cancel(fmt.Errorf("%w after %s: %w", ErrTimeout, d, context.DeadlineExceeded))
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		timer.Stop()
		cancel(nil)
		<-watched
	}
}

// Run repairs until ctx ends. The caller starts it after this node became
// leader and its barrier committed, and cancels ctx on step-down. It
// returns once the verify lane it started has stopped too.
func (s *Service) Run(ctx context.Context) {
	queue := make(chan request, s.cfg.QueueSize)
	checks := make(chan request, s.cfg.VerifyQueueSize)
	// passes asks the verify lane for a re-verification pass; one pending
	// request is enough, so a lane still busy with the last pass is not
	// asked twice.
	passes := make(chan struct{}, 1)
	s.mu.Lock()
	s.queue = queue
	s.mu.Unlock()
	var lane sync.WaitGroup
	lane.Add(1)
	go func() { defer lane.Done(); s.verifyLane(ctx, checks, passes) }()
	defer func() {
		s.mu.Lock()
		s.queue = nil // no request enters from here on
		s.mu.Unlock()
		lane.Wait() // ctx has ended, so the lane returns at its next step
		s.stop(queue, checks)
	}()

	s.log.Info("repair started")
	scan := s.clock.NewTimer(0)
	defer scan.Stop()
	var cursor Cursor
	for {
		select {
		case <-ctx.Done():
			s.log.Info("repair stopped")
			return
		case r := <-queue:
			s.metrics.backlog.Set(float64(len(queue)))
			s.serve(ctx, checks, r)
		case <-scan.C():
			cursor = s.scanPass(ctx, cursor)
			select {
			case passes <- struct{}{}:
			default:
			}
			scan.Reset(s.cfg.ScanInterval)
		}
	}
}

// stop closes the lanes' queues for this term: pending requests get
// ErrNotLeader.
func (s *Service) stop(queues ...chan request) {
	for _, q := range queues {
	drain:
		for {
			select {
			case r := <-q:
				r.reply(ErrNotLeader)
			default:
				break drain
			}
		}
	}
	s.metrics.backlog.Set(0)
	s.metrics.checkBacklog.Set(0)
}

// serve works one request on the quick lane. One whose record must first
// have its bytes verified moves to the verify lane, which answers it, or is
// refused at once when that lane's queue is full.
func (s *Service) serve(ctx context.Context, checks chan<- request, r request) {
	err := s.work(ctx, r, false)
	if errors.Is(err, errNeedsCheck) {
		select {
		case checks <- r:
			s.metrics.checkBacklog.Set(float64(len(checks)))
			return
		default:
			err = fmt.Errorf("%w: %d requests already wait for a verification (VerifyQueueSize)", ErrBusy, cap(checks))
		}
	}
	r.reply(err)
}

// verifyLane does the slow work of one term, one item at a time: requested
// repairs that verify bytes first, and re-verification passes. Every item
// has its bound (the request's, or the pass's), so a stalled object delays
// the items behind it in this lane by at most that bound, and the quick
// lane not at all.
func (s *Service) verifyLane(ctx context.Context, checks <-chan request, passes <-chan struct{}) {
	var from *fsm.IndexKey
	for {
		select {
		case <-ctx.Done():
			return
		case r := <-checks:
			s.metrics.checkBacklog.Set(float64(len(checks)))
			r.reply(s.work(ctx, r, true))
		case <-passes:
			from = s.quarantinePass(ctx, from)
		}
	}
}

// work carries out one request within its bound — the asking resolve's
// context, or RequestTimeout for a hint — and the term (run). check says
// whether this lane may verify bytes; the quick lane may not.
func (s *Service) work(run context.Context, r request, check bool) error {
	ctx, stop := s.requestContext(run, r)
	defer stop()
	if ctx.Err() != nil {
		// Whoever asked has stopped waiting (or the term ended) while the
		// request was queued: nothing is left to answer.
		return context.Cause(ctx)
	}
	err := s.repairOffset(ctx, r.stream, r.offset, check)
	if err != nil && ctx.Err() != nil && !errors.Is(err, errNeedsCheck) {
		// Name the bound that ended the work, not the step it interrupted.
		return fmt.Errorf("%w (%w)", context.Cause(ctx), err)
	}
	return err
}

// requestContext is the context a request is worked under: ended by its
// own bound or by the end of the term, whichever comes first. A request
// cut short by the term's end answers ErrNotLeader, so its resolve asks the
// next leader.
func (s *Service) requestContext(run context.Context, r request) (context.Context, func()) {
	if r.ctx == nil {
		return s.bound(run, s.cfg.RequestTimeout)
	}
	ctx, cancel := context.WithCancelCause(r.ctx)
	stopAfter := context.AfterFunc(run, func() { cancel(ErrNotLeader) })
	return ctx, func() {
		stopAfter()
		cancel(nil)
	}
}

// repairOffset plans from a linearizable read and acts. A conditional
// command refused because the state moved is planned once more: usually
// another repair won, and the second plan finds the record healthy. With
// check false, a plan that must verify bytes first returns errNeedsCheck
// instead of verifying.
func (s *Service) repairOffset(ctx context.Context, stream, offset uint64, check bool) error {
	for range 2 {
		var a Action
		if err := s.store.Read(ctx, func(st State) { a = PlanOffset(st, stream, offset) }); err != nil {
			return fmt.Errorf("repair: read: %w", err)
		}
		if a.Verdict == Reverify && !check {
			return errNeedsCheck
		}
		err := s.act(ctx, a)
		if !errors.Is(err, ErrConflict) {
			return err
		}
	}
	return ErrConflict
}

// act carries out one planned action and accounts for it.
func (s *Service) act(ctx context.Context, a Action) error {
	switch a.Verdict {
	case Healthy, ProvenTrimmed, ProvenEOF, StreamMissing:
		s.metrics.results.WithLabelValues(a.Verdict.String()).Inc()
		return nil
	case EvidenceMissing:
		s.metrics.results.WithLabelValues(a.Verdict.String()).Inc()
		s.log.Error("repair: committed offset has no append evidence", "stream", a.Stream, "offset", a.Offset, "detail", a.Detail)
		return fmt.Errorf("%w: %s", ErrEvidenceMissing, a.Detail)
	case ObjectUnusable:
		s.metrics.results.WithLabelValues(a.Verdict.String()).Inc()
		s.log.Warn("repair: cannot rebuild from evidence", "stream", a.Stream, "offset", a.Offset, "detail", a.Detail)
		return fmt.Errorf("%w: %s", ErrObjectUnusable, a.Detail)
	case Reverify:
		if err := s.reverify(ctx, a); err != nil {
			return err
		}
	}
	res, err := s.store.Propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_RepairGen0{RepairGen0: a.Command}})
	if err != nil {
		s.metrics.results.WithLabelValues("PROPOSE_FAILED").Inc()
		return fmt.Errorf("repair: propose: %w", err)
	}
	if rej := res.Rejection; rej != nil {
		s.metrics.results.WithLabelValues("REJECTED_" + rej.Code.String()).Inc()
		if rej.Code == fsmpb.RejectCode_CONDITION_FAILED {
			return fmt.Errorf("%w: %s", ErrConflict, rej.Message)
		}
		return fmt.Errorf("repair: refused: %s: %s", rej.Code, rej.Message)
	}
	s.metrics.results.WithLabelValues("REBUILT").Inc()
	if a.Verdict == Reverify {
		s.log.Info("repair: quarantine lifted: the bytes verify again; generation-0 record rebuilt",
			"stream", a.Stream, "range", a.Evidence.Range.String(), "object", a.Evidence.Object.String(), "version", res.Version)
		return nil
	}
	s.log.Debug("repair: rebuilt generation-0 record", "stream", a.Stream, "range", a.Evidence.Range.String(),
		"version", res.Version, "reason", a.Detail)
	return nil
}

// reverify checks a quarantined record's bytes before it is rebuilt: nil
// lets the rebuild go ahead.
func (s *Service) reverify(ctx context.Context, a Action) error {
	if s.verify == nil {
		s.metrics.results.WithLabelValues("QUARANTINED").Inc()
		return fmt.Errorf("%w: %s (no object store to verify against)", ErrObjectUnusable, a.Detail)
	}
	intact, err := s.verify.Intact(ctx, a.Evidence.Object, a.Evidence.Bytes, a.Evidence.Data)
	switch {
	case err != nil:
		s.metrics.results.WithLabelValues("VERIFY_FAILED").Inc()
		return fmt.Errorf("repair: cannot verify %s now: %w", a.Evidence.Object, err)
	case !intact:
		s.metrics.results.WithLabelValues("QUARANTINED").Inc()
		return fmt.Errorf("%w: generation-0 record %v stays quarantined: the bytes of %s do not verify",
			ErrObjectUnusable, a.Evidence.Range, a.Evidence.Object)
	}
	return nil
}

// scanPass examines the next slice of evidence, within the per-pass bounds
// of records, repairs and time, and returns where the next pass resumes.
// It runs on the quick lane: a quarantined record it finds (Reverify) is
// left to the verify lane's pass, which re-verifies every quarantined
// record. Time is read on the service's clock before each repair; the
// Raft operations themselves end with the term (ctx).
func (s *Service) scanPass(ctx context.Context, from Cursor) Cursor {
	end := s.clock.Now().Add(s.cfg.TimePerPass)
	var actions []Action
	var next Cursor
	err := s.store.Read(ctx, func(st State) { actions, next = Scan(st, from, s.cfg.RecordsPerPass) })
	if err != nil {
		s.log.Debug("repair scan: read failed", "err", err)
		return from
	}
	s.metrics.scans.Inc()
	s.metrics.found.Set(float64(len(actions)))
	if len(actions) > 0 {
		// One line per pass that found work, not per record.
		s.log.Info("repair scan found unhealthy generation-0 records", "count", len(actions), "from_stream", from.Stream)
	}
	repairs := 0
	for _, a := range actions {
		if a.Verdict == Reverify {
			continue // the verify lane's pass
		}
		if repairs == s.cfg.RepairsPerPass || ctx.Err() != nil || !s.clock.Now().Before(end) {
			// Resume where the unrepaired actions began.
			return Cursor{Stream: a.Stream, Offset: a.Offset}
		}
		repairs++
		if a.Verdict != Rebuild {
			_ = s.act(ctx, a) // loud verdicts log and count themselves
			continue
		}
		// A rebuild re-planned as a quarantine (errNeedsCheck) is the
		// verify lane's too.
		if err := s.repairOffset(ctx, a.Stream, a.Offset, false); err != nil && !errors.Is(err, errNeedsCheck) {
			s.log.Warn("repair scan: repair failed", "stream", a.Stream, "offset", a.Offset, "err", err)
		}
	}
	return next
}

// quarantinePass re-verifies the next quarantined records, on the verify
// lane, within the per-pass bounds, and returns where the next pass
// resumes. A quarantined COMMITTED generation-0 record is rebuilt from its
// evidence once its bytes verify (repairOffset); one of any other view or
// generation has its quarantine lifted (lift). A pass out of time resumes
// after the record it was checking, so an object that stalls every check
// costs each pass its time but never keeps the records after it from
// being checked.
func (s *Service) quarantinePass(ctx context.Context, from *fsm.IndexKey) *fsm.IndexKey {
	if s.verify == nil {
		return nil
	}
	end := s.clock.Now().Add(s.cfg.TimePerPass)
	ctx, stop := s.bound(ctx, s.cfg.TimePerPass)
	defer stop()
	var recs []fsm.RecordInfo
	var next *fsm.IndexKey
	err := s.store.Read(ctx, func(st State) { recs, next = st.Quarantined(from, s.cfg.RepairsPerPass, s.cfg.RecordsPerPass) })
	if err != nil {
		s.log.Debug("repair quarantine pass: read failed", "err", err)
		return from
	}
	last := from
	for _, r := range recs {
		if ctx.Err() != nil || !s.clock.Now().Before(end) {
			return last
		}
		key := r.Key
		last = &key
		var err error
		if r.Key.View == fsm.Committed && r.Key.Generation == 0 {
			err = s.repairOffset(ctx, r.Key.Stream, r.Key.Start, true)
		} else {
			err = s.lift(ctx, r)
		}
		switch {
		case err == nil:
		case ctx.Err() != nil && !errors.Is(err, ErrObjectUnusable):
			// Cut short by the pass's bound or the term's end. (A verdict
			// that arrived as time ran out is still a verdict: below.)
			if errors.Is(context.Cause(ctx), ErrTimeout) {
				s.metrics.timeouts.WithLabelValues("check").Inc()
				s.log.Warn("repair quarantine pass: out of time checking a record's bytes; the next pass resumes after it",
					"key", r.Key.String(), "object", r.Object.String(), "err", err)
			}
			return last
		default:
			// A record that stays quarantined is news only when it
			// changes: a lift logs itself; a still-unusable object does
			// not, every pass.
			s.log.Debug("repair quarantine pass: not lifted", "key", r.Key.String(), "err", err)
		}
	}
	return next
}

// lift verifies a quarantined record's bytes and, if they are intact,
// commits LiftQuarantine conditioned on the version verified.
func (s *Service) lift(ctx context.Context, r fsm.RecordInfo) error {
	intact, err := s.verify.Intact(ctx, r.Object, r.Bytes, r.Data)
	switch {
	case err != nil:
		s.metrics.results.WithLabelValues("VERIFY_FAILED").Inc()
		return fmt.Errorf("repair: cannot verify %s now: %w", r.Object, err)
	case !intact:
		s.metrics.results.WithLabelValues("QUARANTINED").Inc()
		return fmt.Errorf("%w: record %v stays quarantined: the bytes of %s do not verify", ErrObjectUnusable, r.Key, r.Object)
	}
	res, err := s.store.Propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_LiftQuarantine{LiftQuarantine: &fsmpb.LiftQuarantine{
		Key: r.Key.PB(), Version: r.Version}}})
	if err != nil {
		s.metrics.results.WithLabelValues("PROPOSE_FAILED").Inc()
		return fmt.Errorf("repair: propose: %w", err)
	}
	if rej := res.Rejection; rej != nil {
		s.metrics.results.WithLabelValues("REJECTED_" + rej.Code.String()).Inc()
		return fmt.Errorf("repair: lift refused: %s: %s", rej.Code, rej.Message)
	}
	s.metrics.results.WithLabelValues("LIFTED").Inc()
	s.log.Info("repair: quarantine lifted: the bytes verify again", "key", r.Key.String(), "object", r.Object.String(), "version", res.Version)
	return nil
}
