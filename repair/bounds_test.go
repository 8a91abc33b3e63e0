package repair

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metad/metad/checksum"
	"github.com/metad/metad/clock"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/internal/fakeclock"
	"github.com/metad/metad/internal/fsmtest"
)

// tickClock is a fake clock whose timers report each re-arm. The loop
// re-arms its scan timer (the only timer it Resets) exactly when a scan
// pass has ended, so a test waits for a pass with <-rearmed, not a sleep.
type tickClock struct {
	*fakeclock.Clock
	rearmed chan time.Duration
}

func newTickClock() *tickClock {
	return &tickClock{Clock: fakeclock.New(time.Unix(0, 0)), rearmed: make(chan time.Duration, 1024)}
}

func (c *tickClock) NewTimer(d time.Duration) clock.Timer {
	return tickTimer{Timer: c.Clock.NewTimer(d), rearmed: c.rearmed}
}

type tickTimer struct {
	clock.Timer
	rearmed chan<- time.Duration
}

// Reset reports once the timer is armed, so a test that has the report
// may Advance the clock past it.
func (t tickTimer) Reset(d time.Duration) {
	t.Timer.Reset(d)
	t.rearmed <- d
}

// watchedStore lets a test act before each proposal and see each one.
type watchedStore struct {
	machineStore
	onPropose func()              // runs before each proposal, on the proposing lane
	proposed  chan *fsmpb.Command // if set, receives each command once applied
}

func (w *watchedStore) Propose(ctx context.Context, cmd *fsmpb.Command) (*fsmpb.Result, error) {
	if w.onPropose != nil {
		w.onPropose()
	}
	res, err := w.machineStore.Propose(ctx, cmd)
	if w.proposed != nil {
		w.proposed <- cmd
	}
	return res, err
}

// stallingVerifier is an object store stalled on some objects: Intact of
// a stalled one returns only once its context ends, as a re-hash of a
// large object on a stalled store would; any other answers from intact.
type stallingVerifier struct {
	mu      sync.Mutex
	stalled map[fsm.ObjectRef]bool
	intact  map[fsm.ObjectRef]bool
	entered chan fsm.ObjectRef // each stalled check, as it starts
	ended   chan error         // each stalled check's context cause, as it gives up
}

func newStallingVerifier(stalled ...fsm.ObjectRef) *stallingVerifier {
	v := &stallingVerifier{stalled: map[fsm.ObjectRef]bool{}, intact: map[fsm.ObjectRef]bool{},
		entered: make(chan fsm.ObjectRef, 16), ended: make(chan error, 16)}
	for _, o := range stalled {
		v.stalled[o] = true
	}
	return v
}

func (v *stallingVerifier) Intact(ctx context.Context, obj fsm.ObjectRef, _ fsm.ByteRange, _ checksum.Data) (bool, error) {
	v.mu.Lock()
	stalled, intact := v.stalled[obj], v.intact[obj]
	v.mu.Unlock()
	if !stalled {
		return intact, nil
	}
	v.entered <- obj
	<-ctx.Done()
	v.ended <- context.Cause(ctx)
	return false, ctx.Err()
}

// seedItems creates stream 1 with one append of 10 offsets per entry of
// indexed, all in object "o"; an entry says whether that append got its
// generation-0 record when committed.
func seedItems(t *testing.T, indexed ...bool) machineStore {
	t.Helper()
	s := machineStore{fsmtest.New()}
	obj := fsm.ObjectRef{Key: "o", Identity: "sha256:o"}
	s.must(t, &fsmpb.Command{Op: &fsmpb.Command_CreateStream{CreateStream: &fsmpb.CreateStream{Name: "s"}}})
	s.must(t, &fsmpb.Command{Op: &fsmpb.Command_OpenForWrite{OpenForWrite: &fsmpb.OpenForWrite{StreamId: 1}}})
	s.must(t, &fsmpb.Command{Op: &fsmpb.Command_RegisterObject{RegisterObject: &fsmpb.RegisterObject{
		Object: obj.PB(), Size: uint64(100 * len(indexed))}}})
	for i, ix := range indexed {
		start := uint64(i * 10)
		s.must(t, &fsmpb.Command{Op: &fsmpb.Command_CommitAppend{CommitAppend: &fsmpb.CommitAppend{
			StreamId: 1, WriterEpoch: 1, ExpectedStart: start, End: start + 10, Object: obj.PB(),
			Bytes: fsm.ByteRange{Offset: start * 10, Length: 100}.PB(), IndexGen0: ix,
		}}})
	}
	return s
}

// quarantine records a confirmed failure report against r.
func quarantine(t *testing.T, s machineStore, r fsm.RecordInfo) {
	t.Helper()
	s.must(t, &fsmpb.Command{Op: &fsmpb.Command_ReportCandidateFailure{ReportCandidateFailure: &fsmpb.ReportCandidateFailure{
		Key: r.Key.PB(), Version: r.Version, Kind: fsm.FailureCorrupt,
	}}})
}

// gen0Records counts stream 1's generation-0 records.
func gen0Records(s machineStore) int {
	var n int
	_ = s.Store.Read(context.Background(), func(m *fsm.Machine) { n = len(m.Records(1, fsm.Committed, 0, 0, 1<<20)) })
	return n
}

func newTestService(t *testing.T, cfg Config, s Store, clk clock.Clock, opts ...Option) *Service {
	t.Helper()
	svc, err := New(cfg, s, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, append(opts, WithClock(clk))...)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// lead runs svc as this term's leader until the returned function ends
// the term and waits for Run to return (lanes joined).
func lead(svc *Service) (stepDown func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); svc.Run(ctx) }()
	return func() { cancel(); <-done }
}

// TestHangingVerificationHoldsUpNoOtherRepair: the store has stalled on the
// object of a quarantined record, so every check of its bytes hangs until
// its context ends. Repairs of other items still complete while such a
// check hangs — the periodic pass's, then a requested one — and the
// requested repair of the stalled item returns once its RequestTimeout
// passes on the service's clock, with ErrTimeout (and
// context.DeadlineExceeded), its check ended with it; and a caller that
// gives up earlier ends it earlier.
func TestHangingVerificationHoldsUpNoOtherRepair(t *testing.T) {
	s := seedItems(t, true, false, false) // [0,10) indexed; [10,20) and [20,30) need rebuilds
	stalled := recordAt(s, fsm.Committed, 0, 0)
	quarantine(t, s, stalled)
	stalled = recordAt(s, fsm.Committed, 0, 0)
	v := newStallingVerifier(stalled.Object)
	clk := newTickClock()
	cfg := DefaultConfig()
	cfg.RequestTimeout, cfg.TimePerPass = time.Second, 2*time.Second
	svc := newTestService(t, cfg, s, clk, WithVerifier(v))
	stepDown := lead(svc)
	defer stepDown()
	ctx := context.Background()

	<-v.entered // the first re-verification pass hangs on the stalled object
	if err := svc.Repair(ctx, 1, 12); err != nil {
		t.Fatalf("repair of another item while the pass's check hangs: %v", err)
	}
	if a := plan(s, 12); a.Verdict != Healthy {
		t.Fatalf("[10,20) after its repair: %v", a.Verdict)
	}
	clk.Advance(cfg.TimePerPass)
	if cause := <-v.ended; !errors.Is(cause, ErrTimeout) {
		t.Fatalf("the pass's check ended by %v, want its TimePerPass bound", cause)
	}

	requested := make(chan error, 1)
	go func() { requested <- svc.Repair(ctx, 1, 3) }()
	<-v.entered // the requested repair's check hangs on the verify lane
	if err := svc.Repair(ctx, 1, 25); err != nil {
		t.Fatalf("repair of another item while a requested check hangs: %v", err)
	}
	if a := plan(s, 25); a.Verdict != Healthy {
		t.Fatalf("[20,30) after its repair: %v", a.Verdict)
	}
	select {
	case err := <-requested:
		t.Fatalf("the stalled repair returned before its bound: %v", err)
	default:
	}
	clk.BlockUntil(2) // the scan timer and the stalled request's bound
	clk.Advance(cfg.RequestTimeout)
	if err := <-requested; !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("stalled repair returned %v, want ErrTimeout wrapping context.DeadlineExceeded", err)
	}
	if cause := <-v.ended; !errors.Is(cause, ErrTimeout) {
		t.Fatalf("the requested check ended by %v, want the request's bound", cause)
	}

	cctx, cancel := context.WithCancel(ctx)
	go func() { requested <- svc.Repair(cctx, 1, 3) }()
	<-v.entered
	cancel()
	if err := <-requested; !errors.Is(err, context.Canceled) {
		t.Fatalf("repair whose caller gave up returned %v", err)
	}
	if cause := <-v.ended; !errors.Is(cause, context.Canceled) {
		t.Fatalf("the check of a repair whose caller gave up ended by %v", cause)
	}
	if got := recordAt(s, fsm.Committed, 0, 0); got.Status != fsm.RecordQuarantined || got.Version != stalled.Version {
		t.Fatalf("stalled record changed without verified bytes: %v at %d", got.Status, got.Version)
	}
}

// TestVerifyQueueIsBounded: with VerifyQueueSize 1 and the verify lane
// stuck on a stalled check, of two more requests that need a check one
// waits in the lane's queue and the other is refused at once with ErrBusy.
func TestVerifyQueueIsBounded(t *testing.T) {
	s := seedItems(t, true)
	stalled := recordAt(s, fsm.Committed, 0, 0)
	quarantine(t, s, stalled)
	v := newStallingVerifier(stalled.Object)
	clk := newTickClock()
	cfg := DefaultConfig()
	cfg.VerifyQueueSize = 1
	svc := newTestService(t, cfg, s, clk, WithVerifier(v))
	stepDown := lead(svc)
	defer stepDown()

	<-v.entered // the lane is stuck on the first pass's check
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- svc.Repair(context.Background(), 1, 3) }()
	}
	if err := <-errs; !errors.Is(err, ErrBusy) {
		t.Fatalf("first answer %v, want ErrBusy for the request the full verify queue could not take", err)
	}
	clk.BlockUntil(3)               // the scan timer, the pass's bound, the queued request's bound
	clk.Advance(cfg.RequestTimeout) // ends the queued request
	if err := <-errs; !errors.Is(err, ErrTimeout) {
		t.Fatalf("queued request returned %v, want ErrTimeout", err)
	}
}

// The scan's per-pass bounds: each test gives the store more work than
// the bound allows and checks that one pass stopped at the bound, and that
// the next pass resumes where it stopped.

func TestScanPassStopsAtRecordsPerPass(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RecordsPerPass = 4 // the stream's visit and three evidence entries
	twoBoundedPasses(t, cfg, "RecordsPerPass 4", 3)
}

func TestScanPassStopsAtRepairsPerPass(t *testing.T) {
	cfg := DefaultConfig()
	cfg.RepairsPerPass = 2
	twoBoundedPasses(t, cfg, "RepairsPerPass 2", 2)
}

// twoBoundedPasses runs two scan passes under cfg over ten appends, none
// indexed, and checks that each rebuilt exactly perPass records.
func twoBoundedPasses(t *testing.T, cfg Config, bound string, perPass int) {
	t.Helper()
	s := seedItems(t, make([]bool, 10)...)
	clk := newTickClock()
	svc := newTestService(t, cfg, s, clk)
	stepDown := lead(svc)
	defer stepDown()
	<-clk.rearmed
	if got := gen0Records(s); got != perPass {
		t.Fatalf("after one pass of %s: %d records rebuilt, want %d", bound, got, perPass)
	}
	clk.Advance(cfg.ScanInterval)
	<-clk.rearmed
	if got := gen0Records(s); got != 2*perPass {
		t.Fatalf("after a second pass: %d records rebuilt, want %d", got, 2*perPass)
	}
}

// TestScanPassStopsAtTimePerPass: every rebuild takes 400ms of the
// service's clock, so a pass of TimePerPass 1s starts three and stops.
func TestScanPassStopsAtTimePerPass(t *testing.T) {
	s := seedItems(t, make([]bool, 10)...)
	clk := newTickClock()
	cfg := DefaultConfig()
	cfg.TimePerPass = time.Second
	w := &watchedStore{machineStore: s, onPropose: func() { clk.Advance(400 * time.Millisecond) }}
	svc := newTestService(t, cfg, w, clk)
	stepDown := lead(svc)
	defer stepDown()
	<-clk.rearmed
	if got := gen0Records(s); got != 3 {
		t.Fatalf("after one pass of TimePerPass 1s at 400ms a rebuild: %d records rebuilt, want 3", got)
	}
	clk.Advance(cfg.ScanInterval)
	<-clk.rearmed
	if got := gen0Records(s); got != 6 {
		t.Fatalf("after a second pass: %d records rebuilt, want 6", got)
	}
}

// TestScanPassesAtMostOncePerInterval: a pass starts only once
// ScanInterval has passed since the last one ended, never sooner.
func TestScanPassesAtMostOncePerInterval(t *testing.T) {
	s := seedItems(t, true)
	clk := newTickClock()
	cfg := DefaultConfig()
	svc := newTestService(t, cfg, s, clk)
	stepDown := lead(svc)
	defer stepDown()
	<-clk.rearmed // the first pass, at once
	for i := range 5 {
		clk.Advance(cfg.ScanInterval - time.Nanosecond)
		// Had the timer fired, a pass would be running or over: the timer
		// not armed, or its re-arm reported (and then caught below).
		clk.BlockUntil(1)
		select {
		case <-clk.rearmed:
			t.Fatalf("interval %d: a pass ran before ScanInterval had passed", i)
		default:
		}
		clk.Advance(time.Nanosecond)
		if d := <-clk.rearmed; d != cfg.ScanInterval {
			t.Fatalf("interval %d: next pass armed %s ahead, want ScanInterval %s", i, d, cfg.ScanInterval)
		}
	}
}

// TestQuarantinePassResumesAfterAStalledCheck: a re-verification pass
// that runs out of time on a stalled object resumes after it, so the
// quarantined records behind it are still checked and lifted.
func TestQuarantinePassResumesAfterAStalledCheck(t *testing.T) {
	s := seedItems(t, true, true, true)
	stuck, fine := fsm.ObjectRef{Key: "p", Identity: "sha256:p"}, fsm.ObjectRef{Key: "q", Identity: "sha256:q"}
	for _, o := range []fsm.ObjectRef{stuck, fine} {
		s.must(t, &fsmpb.Command{Op: &fsmpb.Command_RegisterObject{RegisterObject: &fsmpb.RegisterObject{Object: o.PB(), Size: 300}}})
	}
	k1 := fsm.IndexKey{Stream: 1, View: fsm.TopicCompacted, Generation: 1, Start: 0}
	k2 := fsm.IndexKey{Stream: 1, View: fsm.TopicCompacted, Generation: 1, Start: 10}
	s.must(t, &fsmpb.Command{Op: &fsmpb.Command_PublishGeneration{PublishGeneration: &fsmpb.PublishGeneration{
		StreamId: 1, View: fsm.TopicCompacted, Generation: 1, WriterEpoch: 1, Coverage: fsm.Range{Start: 0, End: 30}.PB(), Complete: true,
		Records: []*fsmpb.IndexRecord{
			fsm.NewIndexRecord(k1, fsm.Range{Start: 0, End: 10}, []fsm.Range{{Start: 2, End: 3}}, stuck, fsm.ByteRange{Length: 1}),
			fsm.NewIndexRecord(k2, fsm.Range{Start: 10, End: 30}, []fsm.Range{{Start: 12, End: 13}}, fine, fsm.ByteRange{Length: 1}),
		},
	}}})
	quarantine(t, s, recordAt(s, fsm.TopicCompacted, 1, 0))
	quarantine(t, s, recordAt(s, fsm.TopicCompacted, 1, 10))
	v := newStallingVerifier(stuck)
	clk := newTickClock()
	cfg := DefaultConfig()
	w := &watchedStore{machineStore: s, proposed: make(chan *fsmpb.Command, 16)}
	svc := newTestService(t, cfg, w, clk, WithVerifier(v))
	stepDown := lead(svc)
	defer stepDown()

	<-v.entered // the first pass is stuck on the first record
	clk.Advance(cfg.TimePerPass)
	<-v.ended
	v.mu.Lock()
	v.intact[fine] = true
	v.mu.Unlock()
	<-clk.rearmed // the first scan pass ended
	clk.Advance(cfg.ScanInterval)
	select {
	case <-v.entered:
		t.Fatal("the second pass checked the stalled object again before the records after it")
	case cmd := <-w.proposed:
		if lq := cmd.GetLiftQuarantine(); lq == nil || lq.Key.Start != 10 {
			t.Fatalf("second pass proposed %v, want the lift of the record after the stalled one", cmd)
		}
	}
}

// TestConfigValidateRequestBounds: the request and verify-lane bounds are
// validated at both ends of their ranges, and reported together.
func TestConfigValidateRequestBounds(t *testing.T) {
	for _, c := range []struct {
		timeout time.Duration
		queue   int
	}{{0, 0}, {2 * time.Minute, 1 << 13}} {
		cfg := DefaultConfig()
		cfg.RequestTimeout, cfg.VerifyQueueSize = c.timeout, c.queue
		err := cfg.Validate()
		for _, name := range []string{"RequestTimeout", "VerifyQueueSize"} {
			if err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("RequestTimeout %s, VerifyQueueSize %d: %v does not name %s", c.timeout, c.queue, err, name)
			}
		}
	}
}
