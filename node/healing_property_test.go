package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/metad/metad/checksum"
	"github.com/metad/metad/clock"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/internal/fakeclock"
	"github.com/metad/metad/internal/fsmtest"
	"github.com/metad/metad/repair"
	"github.com/metad/metad/resolver"
)

// TestQuarantineNeverOutlivesIntactBytes is G10 as a property of the read
// path's parts together — the resolver, the repair loop and the
// report-verification rule — over a replicated state and an object store
// whose objects vanish and come back at random: a resolve that finds an
// object gone reports it, the report is confirmed and the record
// quarantined; yet no committed offset whose bytes have been back for one
// repair scan interval is ever unresolvable, and no target ever names an
// object that is gone. METAD_SEED=N replays a run.
func TestQuarantineNeverOutlivesIntactBytes(t *testing.T) {
	seed := propertySeed(t)
	rng := rand.New(rand.NewPCG(seed, seed))

	w := newHealingWorld(t, 6)
	scan := repair.DefaultConfig().ScanInterval
	stop := w.runRepair(t)
	defer stop()
	for step := range 300 {
		if rng.IntN(3) == 0 {
			w.objects.flip(w.objs[rng.IntN(len(w.objs))], w.clock.Now())
		}
		offset := uint64(rng.IntN(10 * len(w.objs)))
		res, err := w.resolve(offset)
		obj := w.objs[offset/10]
		switch {
		case err == nil && res.Outcome == resolver.TargetFound && !w.objects.present(res.Target.Object):
			t.Fatalf("step %d: offset %d resolved to %s, which is gone", step, offset, res.Target.Object)
		case err != nil && !errors.Is(err, resolver.ErrUnavailable):
			t.Fatalf("step %d: offset %d: a failure that is not retryable: %v", step, offset, err)
		case err != nil && w.objects.backSince(obj, w.clock.Now(), scan):
			t.Fatalf("step %d: offset %d unresolvable though %s has been back for over a scan interval: %v", step, offset, obj, err)
		}
		w.clock.Advance(scan / 2)
		w.clock.BlockUntil(1) // a scan that fell due has run
	}
	if w.quarantined == 0 {
		t.Fatal("no record was ever quarantined: the run proves nothing")
	}
	t.Logf("%d records quarantined and healed", w.quarantined)
	// Finally every object returns: within one scan interval every
	// committed offset resolves again.
	for _, o := range w.objs {
		w.objects.restore(o, w.clock.Now())
	}
	w.clock.Advance(scan)
	w.clock.BlockUntil(1)
	for offset := uint64(0); offset < uint64(10*len(w.objs)); offset++ {
		if res, err := w.resolve(offset); err != nil || res.Outcome != resolver.TargetFound {
			t.Fatalf("offset %d with every object back: %v %v", offset, res.Outcome, err)
		}
	}
}

// propertySeed is a randomised test's seed: METAD_SEED if set (to replay
// a run), else the time; it is logged either way.
func propertySeed(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("METAD_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (METAD_SEED=%d to replay)", seed, seed)
	return seed
}

// healingWorld is one stream of appends, each in its own object, over an
// in-memory replicated state and object store.
type healingWorld struct {
	t       *testing.T
	store   *fsmtest.Store
	objects *flappingStore
	clock   *fakeclock.Clock
	repair  *repair.Service
	res     *resolver.Resolver
	objs    []fsm.ObjectRef
	stream  uint64
	// quarantined counts confirmed reports that quarantined a record: the
	// run must have exercised the path it checks.
	quarantined int
}

func newHealingWorld(t *testing.T, n int) *healingWorld {
	w := &healingWorld{t: t, store: fsmtest.New(), objects: &flappingStore{gone: map[fsm.ObjectRef]bool{}, back: map[fsm.ObjectRef]time.Time{}},
		clock: fakeclock.New(time.Unix(0, 0))}
	w.stream = w.store.Must(t, &fsmpb.Command{Op: &fsmpb.Command_CreateStream{CreateStream: &fsmpb.CreateStream{Name: "s"}}}).StreamId
	w.store.Must(t, &fsmpb.Command{Op: &fsmpb.Command_OpenForWrite{OpenForWrite: &fsmpb.OpenForWrite{StreamId: w.stream}}})
	for i := range n {
		obj := fsm.ObjectRef{Key: fmt.Sprintf("o%d", i), Identity: fmt.Sprintf("sha256:%d", i)}
		w.objs = append(w.objs, obj)
		w.store.Must(t, &fsmpb.Command{Op: &fsmpb.Command_RegisterObject{RegisterObject: &fsmpb.RegisterObject{Object: obj.PB(), Size: 100}}})
		start := uint64(i * 10)
		w.store.Must(t, &fsmpb.Command{Op: &fsmpb.Command_CommitAppend{CommitAppend: &fsmpb.CommitAppend{
			StreamId: w.stream, WriterEpoch: 1, ExpectedStart: start, End: start + 10, Object: obj.PB(),
			Bytes: fsm.ByteRange{Length: 100}.PB(), IndexGen0: true,
		}}})
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var err error
	w.repair, err = repair.New(repair.DefaultConfig(), repairStore{w.store}, log, nil,
		repair.WithClock(w.clock), repair.WithVerifier(w.objects))
	if err != nil {
		t.Fatal(err)
	}
	w.res, err = resolver.New(resolver.DefaultConfig(), resolver.Deps{
		Reader: machineReader{w.store}, Pinner: machinePinner{w.store}, Repairer: w.repair,
		Verifier: w.objects, Reporter: verifyingReporter{w}, Clock: instantClock{},
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// runRepair runs the leader-only repair loop until the returned stop.
func (w *healingWorld) runRepair(t *testing.T) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); w.repair.Run(ctx) }()
	w.clock.BlockUntil(1)
	return func() { cancel(); <-done }
}

func (w *healingWorld) resolve(offset uint64) (resolver.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return w.res.Resolve(ctx, resolver.Request{Stream: w.stream, View: fsm.Committed, Offset: offset})
}

// flappingStore is an object store whose objects vanish and come back.
type flappingStore struct {
	mu   sync.Mutex
	gone map[fsm.ObjectRef]bool
	back map[fsm.ObjectRef]time.Time // when each returned object came back
}

func (s *flappingStore) flip(o fsm.ObjectRef, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone[o] {
		delete(s.gone, o)
		s.back[o] = now
		return
	}
	s.gone[o] = true
}

func (s *flappingStore) restore(o fsm.ObjectRef, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone[o] {
		delete(s.gone, o)
		s.back[o] = now
	}
}

func (s *flappingStore) present(o fsm.ObjectRef) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.gone[o]
}

// backSince reports whether o is present and has been for at least d
// (objects that never left count from the start).
func (s *flappingStore) backSince(o fsm.ObjectRef, now time.Time, d time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.gone[o] && now.Sub(s.back[o]) > d
}

// Verify is the resolver's --verify-objects check.
func (s *flappingStore) Verify(ctx context.Context, rec fsm.RecordInfo) error {
	if !s.present(rec.Object) {
		return fmt.Errorf("%w: %s is gone", resolver.ErrPhysicalMismatch, rec.Object)
	}
	return nil
}

// Intact is repair's check before it rebuilds a quarantined record.
func (s *flappingStore) Intact(ctx context.Context, o fsm.ObjectRef, _ fsm.ByteRange, _ checksum.Data) (bool, error) {
	return s.present(o), nil
}

// verifyingReporter records a failure only if the store confirms it, as
// the server does with readers' reports (api.Server.ReportCandidateFailure).
type verifyingReporter struct{ w *healingWorld }

func (r verifyingReporter) ReportFailure(ctx context.Context, id resolver.CandidateID, kind fsm.FailureKind, detail string) error {
	var obj fsm.ObjectRef
	_ = r.w.store.Read(ctx, func(m *fsm.Machine) {
		if rec, ok := m.RecordFrom(id.Key.Stream, id.Key.View, id.Key.Generation, id.Key.Start); ok && rec.Version == id.Version {
			obj = rec.Object
		}
	})
	if obj.Key == "" || r.w.objects.present(obj) {
		return nil // stale, or not confirmed: nothing changes
	}
	res, err := r.w.store.Propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_ReportCandidateFailure{ReportCandidateFailure: &fsmpb.ReportCandidateFailure{
		Key: id.Key.PB(), Version: id.Version, Kind: fsm.FailureObjectMissing, Detail: detail,
	}}})
	if err == nil && res.Quarantined {
		r.w.quarantined++
	}
	return err
}

type repairStore struct{ s *fsmtest.Store }

func (r repairStore) Read(ctx context.Context, fn func(repair.State)) error {
	return r.s.Read(ctx, func(m *fsm.Machine) { fn(m) })
}

func (r repairStore) Propose(ctx context.Context, cmd *fsmpb.Command) (*fsmpb.Result, error) {
	return r.s.Propose(ctx, cmd)
}

type machineReader struct{ s *fsmtest.Store }

func (r machineReader) Read(ctx context.Context, fn func(resolver.State)) error {
	return r.s.Read(ctx, func(m *fsm.Machine) { fn(m) })
}

type machinePinner struct{ s *fsmtest.Store }

func (p machinePinner) Pin(ctx context.Context, obj fsm.ObjectRef, ttl time.Duration) (resolver.Pin, error) {
	res, _ := p.s.Propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_PinObject{PinObject: &fsmpb.PinObject{
		Object: obj.PB(), Holder: "property", TtlNanos: int64(ttl)}}})
	if res.Rejection != nil {
		return resolver.Pin{}, fmt.Errorf("%w: %s", resolver.ErrPinRefused, res.Rejection.Message)
	}
	return resolver.Pin{ID: res.PinId, Expiry: time.Unix(0, res.PinExpiryUnixNano)}, nil
}

func (p machinePinner) Release(ctx context.Context, pin resolver.Pin) error {
	_, err := p.s.Propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_ReleasePin{ReleasePin: &fsmpb.ReleasePin{PinId: pin.ID}}})
	return err
}

func (machinePinner) Held(fsm.ObjectRef, time.Duration) (resolver.Pin, bool) {
	return resolver.Pin{}, false
}

// instantClock lets the resolver's backoffs pass at once.
type instantClock struct{}

func (instantClock) Now() time.Time { return time.Unix(0, 0) }

func (instantClock) NewTimer(time.Duration) clock.Timer {
	ch := make(chan time.Time, 1)
	ch <- time.Unix(0, 0)
	return firedTimer(ch)
}

// firedTimer has fired already.
type firedTimer chan time.Time

func (t firedTimer) C() <-chan time.Time { return t }
func (firedTimer) Reset(time.Duration)   {}
func (firedTimer) Stop()                 {}
