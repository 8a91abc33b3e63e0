package repair

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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

// Verifier checks an object's bytes in the object store, before a
// quarantined record is rebuilt. Intact reports whether the version exists
// and its bytes hash to its identity; an error means the store could not
// say (unavailable), which is not a verdict.
type Verifier interface {
	Intact(ctx context.Context, obj fsm.ObjectRef) (bool, error)
}

var (
	// ErrNotLeader: repair runs only on the leader; ask it there.
	ErrNotLeader = errors.New("repair: not the leader")
	// ErrBusy: the bounded request queue is full; retry later.
	ErrBusy = errors.New("repair: queue full")
	// ErrEvidenceMissing: a committed offset has no append evidence.
	ErrEvidenceMissing = errors.New("repair: evidence missing")
	// ErrObjectUnusable: the evidence's object is no longer live.
	ErrObjectUnusable = errors.New("repair: evidence names an object that is not live")
	// ErrConflict: the conditional command kept failing because the state
	// kept changing under it.
	ErrConflict = errors.New("repair: state changed during repair")
)

// Config bounds the loop.
type Config struct {
	// QueueSize bounds pending repair requests. Default 1024; range [1, 1<<16].
	QueueSize int
	// ScanInterval is the pause between periodic scan passes. Default 10s;
	// range [10ms, 1h].
	ScanInterval time.Duration
	// RecordsPerPass bounds the evidence entries one scan pass examines.
	// Default 1000; range [1, 1<<20].
	RecordsPerPass int
	// RepairsPerPass bounds the repairs one scan pass commits. Default 100;
	// range [1, 1<<16].
	RepairsPerPass int
	// TimePerPass bounds one scan pass. Default 2s; range [10ms, 1m].
	TimePerPass time.Duration
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{QueueSize: 1024, ScanInterval: 10 * time.Second, RecordsPerPass: 1000, RepairsPerPass: 100, TimePerPass: 2 * time.Second}
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
	return errors.Join(errs...)
}

// Service runs repair on the leader: requests from resolves, and a bounded
// periodic scan. Run is called for each leadership term and returns when
// its context ends (step-down); outside Run, Repair answers ErrNotLeader.
type Service struct {
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
	done           chan error // nil for hints
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
// (stream, offset) and waits for the outcome.
func (s *Service) Repair(ctx context.Context, stream, offset uint64) error {
	done := make(chan error, 1)
	if err := s.enqueue(request{stream: stream, offset: offset, done: done}); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Hint asks for a repair without waiting; dropped if the queue is full or
// this node is not the leader.
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

// Run repairs until ctx ends. The caller starts it after this node became
// leader and its barrier committed, and cancels ctx on step-down.
func (s *Service) Run(ctx context.Context) {
	queue := make(chan request, s.cfg.QueueSize)
	s.mu.Lock()
	s.queue = queue
	s.mu.Unlock()
	defer s.stop(queue)

	s.log.Info("repair started")
	scan := s.clock.NewTimer(0)
	defer scan.Stop()
	var cursor Cursor
	var quarantined *fsm.IndexKey
	for {
		select {
		case <-ctx.Done():
			s.log.Info("repair stopped")
			return
		case r := <-queue:
			s.metrics.backlog.Set(float64(len(queue)))
			err := s.repairOffset(ctx, r.stream, r.offset)
			if r.done != nil {
				r.done <- err
			}
		case <-scan.C():
			cursor = s.scanPass(ctx, cursor)
			quarantined = s.quarantinePass(ctx, quarantined)
			scan.Reset(s.cfg.ScanInterval)
		}
	}
}

// stop closes the loop for this term: pending requests get ErrNotLeader.
func (s *Service) stop(queue chan request) {
	s.mu.Lock()
	s.queue = nil
	s.mu.Unlock()
	for {
		select {
		case r := <-queue:
			if r.done != nil {
				r.done <- ErrNotLeader
			}
		default:
			s.metrics.backlog.Set(0)
			return
		}
	}
}

// repairOffset plans from a linearizable read and acts. A conditional
// command refused because the state moved is planned once more: usually
// another repair won, and the second plan finds the record healthy.
func (s *Service) repairOffset(ctx context.Context, stream, offset uint64) error {
	for range 2 {
		var a Action
		if err := s.store.Read(ctx, func(st State) { a = PlanOffset(st, stream, offset) }); err != nil {
			return fmt.Errorf("repair: read: %w", err)
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
	intact, err := s.verify.Intact(ctx, a.Evidence.Object)
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
func (s *Service) scanPass(ctx context.Context, from Cursor) Cursor {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.TimePerPass)
	defer cancel()
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
	for i, a := range actions {
		if i == s.cfg.RepairsPerPass || ctx.Err() != nil {
			// Resume where the unrepaired actions began.
			return Cursor{Stream: a.Stream, Offset: a.Offset}
		}
		switch a.Verdict {
		case Rebuild:
			if err := s.repairOffset(ctx, a.Stream, a.Offset); err != nil {
				s.log.Warn("repair scan: repair failed", "stream", a.Stream, "offset", a.Offset, "err", err)
			}
		case Reverify:
			// A record that stays quarantined is news only when it changes:
			// the lift logs itself; a still-unusable object does not, every
			// pass.
			if err := s.repairOffset(ctx, a.Stream, a.Offset); err != nil {
				s.log.Debug("repair scan: quarantined record not lifted", "stream", a.Stream, "offset", a.Offset, "err", err)
			}
		default:
			_ = s.act(ctx, a) // loud verdicts log and count themselves
		}
	}
	return next
}

// quarantinePass re-verifies the next quarantined records of every view
// and generation but COMMITTED generation 0 (which scanPass rebuilds from
// evidence) and lifts the quarantine of each whose bytes verify, within
// the per-pass bounds; it returns where the next pass resumes.
func (s *Service) quarantinePass(ctx context.Context, from *fsm.IndexKey) *fsm.IndexKey {
	if s.verify == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.TimePerPass)
	defer cancel()
	var recs []fsm.RecordInfo
	var next *fsm.IndexKey
	err := s.store.Read(ctx, func(st State) { recs, next = st.Quarantined(from, s.cfg.RepairsPerPass, s.cfg.RecordsPerPass) })
	if err != nil {
		s.log.Debug("repair quarantine pass: read failed", "err", err)
		return from
	}
	for _, r := range recs {
		if ctx.Err() != nil {
			return from
		}
		if r.Key.View == fsm.Committed && r.Key.Generation == 0 {
			continue
		}
		if err := s.lift(ctx, r); err != nil {
			s.log.Debug("repair quarantine pass: not lifted", "key", r.Key.String(), "err", err)
		}
	}
	return next
}

// lift verifies a quarantined record's bytes and, if they are intact,
// commits LiftQuarantine conditioned on the version verified.
func (s *Service) lift(ctx context.Context, r fsm.RecordInfo) error {
	intact, err := s.verify.Intact(ctx, r.Object)
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
