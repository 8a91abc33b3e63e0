package repair

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/metad/metad/checksum"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/internal/fakeclock"
	"github.com/metad/metad/internal/fsmtest"
)

// machineStore adapts fsmtest.Store to this package's Store.
type machineStore struct{ *fsmtest.Store }

func (s machineStore) Read(ctx context.Context, fn func(State)) error {
	return s.Store.Read(ctx, func(m *fsm.Machine) { fn(m) })
}

func (s machineStore) must(t *testing.T, cmd *fsmpb.Command) *fsmpb.Result { return s.Must(t, cmd) }
func (s machineStore) apply(cmd *fsmpb.Command) *fsmpb.Result              { return s.Apply(cmd) }

// seed creates stream 1 with appends [0,10) indexed, [10,20) not indexed,
// [20,30) indexed, all in object "o".
func seed(t *testing.T) machineStore {
	s := machineStore{fsmtest.New()}
	obj := fsm.ObjectRef{Key: "o", Identity: "sha256:o"}
	s.must(t, &fsmpb.Command{Op: &fsmpb.Command_CreateStream{CreateStream: &fsmpb.CreateStream{Name: "s"}}})
	s.must(t, &fsmpb.Command{Op: &fsmpb.Command_OpenForWrite{OpenForWrite: &fsmpb.OpenForWrite{StreamId: 1}}})
	s.must(t, &fsmpb.Command{Op: &fsmpb.Command_RegisterObject{RegisterObject: &fsmpb.RegisterObject{Object: obj.PB(), Size: 300}}})
	for i, indexed := range []bool{true, false, true} {
		start := uint64(i * 10)
		s.must(t, &fsmpb.Command{Op: &fsmpb.Command_CommitAppend{CommitAppend: &fsmpb.CommitAppend{
			StreamId: 1, WriterEpoch: 1, ExpectedStart: start, End: start + 10, Object: obj.PB(),
			Bytes: fsm.ByteRange{Offset: start * 10, Length: 100}.PB(), IndexGen0: indexed,
		}}})
	}
	return s
}

func plan(s machineStore, offset uint64) Action {
	var a Action
	_ = s.Read(context.Background(), func(st State) { a = PlanOffset(st, 1, offset) })
	return a
}

func TestPlanOffsetVerdicts(t *testing.T) {
	s := seed(t)
	s.must(t, &fsmpb.Command{Op: &fsmpb.Command_Trim{Trim: &fsmpb.Trim{StreamId: 1, Offset: 5}}})
	for _, tc := range []struct {
		offset uint64
		want   Verdict
	}{{4, ProvenTrimmed}, {5, Healthy}, {9, Healthy}, {10, Rebuild}, {19, Rebuild}, {29, Healthy}, {30, ProvenEOF}} {
		if a := plan(s, tc.offset); a.Verdict != tc.want {
			t.Errorf("offset %d: %v (%s), want %v", tc.offset, a.Verdict, a.Detail, tc.want)
		}
	}
	var a Action
	_ = s.Read(context.Background(), func(st State) { a = PlanOffset(st, 9, 0) })
	if a.Verdict != StreamMissing {
		t.Errorf("unknown stream: %v", a.Verdict)
	}
	// A rebuild command is exactly the evidence's record.
	a = plan(s, 12)
	if a.Command == nil || a.Command.EvidenceStart != 10 || len(a.Command.Replace) != 0 ||
		a.Command.Record.Range.Start != 10 || a.Command.Record.Range.End != 20 {
		t.Fatalf("rebuild command %+v", a.Command)
	}
}

// fakeVerifier answers Intact from a table; unknown objects are missing.
// The verify lane calls it while the test changes it, hence the mutex.
type fakeVerifier struct {
	mu     sync.Mutex
	intact map[fsm.ObjectRef]bool
	err    error
	// checked, if set, receives each object as its check returns.
	checked chan fsm.ObjectRef
	// ranges lists the byte range of every check asked for.
	ranges []fsm.ByteRange
}

func (f *fakeVerifier) Intact(ctx context.Context, obj fsm.ObjectRef, b fsm.ByteRange, _ checksum.Data) (bool, error) {
	f.mu.Lock()
	f.ranges = append(f.ranges, b)
	ok, err, checked := f.intact[obj], f.err, f.checked
	f.mu.Unlock()
	if checked != nil {
		defer func() { checked <- obj }()
	}
	return ok, err
}

func (f *fakeVerifier) set(obj fsm.ObjectRef, intact bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.intact[obj], f.err = intact, err
}

// recordAt reads a record through the store's lock: the loop's lanes may
// be reading and proposing at the same time.
func recordAt(s machineStore, view fsm.View, gen, offset uint64) fsm.RecordInfo {
	var r fsm.RecordInfo
	_ = s.Store.Read(context.Background(), func(m *fsm.Machine) { r, _ = m.RecordFrom(1, view, gen, offset) })
	return r
}

// TestQuarantineLiftsOnlyWhenTheBytesVerify: a generation-0 record
// quarantined after a confirmed report is rebuilt — the quarantine lifted —
// once its bytes verify again, and only then; while the store cannot answer
// nothing changes either (G10).
func TestQuarantineLiftsOnlyWhenTheBytesVerify(t *testing.T) {
	s := seed(t)
	rec, _ := s.Machine().RecordFrom(1, fsm.Committed, 0, 0)
	s.must(t, &fsmpb.Command{Op: &fsmpb.Command_ReportCandidateFailure{ReportCandidateFailure: &fsmpb.ReportCandidateFailure{
		Key: rec.Key.PB(), Version: rec.Version, Kind: fsm.FailureCorrupt,
	}}})
	if a := plan(s, 3); a.Verdict != Reverify || a.Command == nil || len(a.Command.Replace) != 1 {
		t.Fatalf("quarantined record: %v %q %+v", a.Verdict, a.Detail, a.Command)
	}
	v := &fakeVerifier{intact: map[fsm.ObjectRef]bool{}}
	svc := newService(t, s, WithVerifier(v))
	runLeader(t, svc, func(ctx context.Context) {
		if err := svc.Repair(ctx, 1, 3); !errors.Is(err, ErrObjectUnusable) {
			t.Fatalf("bytes do not verify: %v", err)
		}
		v.set(rec.Object, false, errors.New("store unavailable"))
		if err := svc.Repair(ctx, 1, 3); err == nil || errors.Is(err, ErrObjectUnusable) {
			t.Fatalf("store unavailable: %v, want a transient failure", err)
		}
		if got := recordAt(s, fsm.Committed, 0, 0); got.Status != fsm.RecordQuarantined {
			t.Fatalf("lifted without verified bytes: %v", got.Status)
		}
		v.set(rec.Object, true, nil)
		if err := svc.Repair(ctx, 1, 3); err != nil {
			t.Fatalf("bytes verify: %v", err)
		}
	})
	got, _ := s.Machine().RecordFrom(1, fsm.Committed, 0, 0)
	if got.Status != fsm.RecordValid || got.Version == rec.Version {
		t.Fatalf("after the bytes verified: %v at %d", got.Status, got.Version)
	}
	// The check is of the record's own range (against its data checksum),
	// not only of the object: a quarantine a data checksum imposed is not
	// lifted because the rest of the object hashes right.
	v.mu.Lock()
	for _, b := range v.ranges {
		if b != rec.Bytes {
			t.Errorf("verified range %v, the record's is %v", b, rec.Bytes)
		}
	}
	v.mu.Unlock()
	if a := plan(s, 3); a.Verdict != Healthy {
		t.Fatalf("after the lift: %v", a.Verdict)
	}
}

// TestQuarantineStaysWithoutAVerifier: with nothing to verify against,
// repair refuses (loudly) rather than re-offer bytes reported unusable.
func TestQuarantineStaysWithoutAVerifier(t *testing.T) {
	s := seed(t)
	rec, _ := s.Machine().RecordFrom(1, fsm.Committed, 0, 0)
	s.must(t, &fsmpb.Command{Op: &fsmpb.Command_ReportCandidateFailure{ReportCandidateFailure: &fsmpb.ReportCandidateFailure{
		Key: rec.Key.PB(), Version: rec.Version, Kind: fsm.FailureCorrupt,
	}}})
	svc := newService(t, s)
	runLeader(t, svc, func(ctx context.Context) {
		if err := svc.Repair(ctx, 1, 3); !errors.Is(err, ErrObjectUnusable) {
			t.Fatalf("repair of a quarantined record: %v", err)
		}
	})
}

// TestRebuildReplacesStaleProof: a generation-0 record that no longer
// proves its evidence (here its checksum no longer verifies) is replaced,
// conditionally on its exact version.
func TestRebuildReplacesStaleProof(t *testing.T) {
	s := seed(t)
	rec, _ := s.Machine().RecordFrom(1, fsm.Committed, 0, 0)
	st := staleState{State: s.Machine(), key: rec.Key}
	a := PlanOffset(st, 1, 3)
	if a.Verdict != Rebuild || len(a.Command.Replace) != 1 || a.Command.Replace[0].Version != rec.Version {
		t.Fatalf("stale proof: %v %+v", a.Verdict, a.Command)
	}
	before := s.Machine().Counts().Records
	if res := s.apply(&fsmpb.Command{Op: &fsmpb.Command_RepairGen0{RepairGen0: a.Command}}); res.Rejection != nil {
		t.Fatal(res.Rejection)
	}
	if r, _ := s.Machine().RecordFrom(1, fsm.Committed, 0, 3); r.Version == rec.Version || s.Machine().Counts().Records != before {
		t.Fatalf("record after repair: %+v", r)
	}
}

// staleState shows one record with a checksum that does not verify.
type staleState struct {
	State
	key fsm.IndexKey
}

func (s staleState) Records(stream uint64, view fsm.View, gen, from uint64, limit int) []fsm.RecordInfo {
	out := s.State.Records(stream, view, gen, from, limit)
	for i := range out {
		if out[i].Key == s.key {
			out[i].Checksum ^= 1
		}
	}
	return out
}

func TestObjectUnusableIsNotRebuilt(t *testing.T) {
	s := seed(t)
	s.must(t, &fsmpb.Command{Op: &fsmpb.Command_RegisterObject{RegisterObject: &fsmpb.RegisterObject{
		Object: &fsmpb.ObjectRef{Key: "o", Identity: "sha256:replaced"}, Size: 300,
	}}})
	if a := plan(s, 12); a.Verdict != ObjectUnusable {
		t.Fatalf("replaced object: %v", a.Verdict)
	}
	svc := newService(t, s)
	runLeader(t, svc, func(ctx context.Context) {
		if err := svc.Repair(ctx, 1, 12); !errors.Is(err, ErrObjectUnusable) {
			t.Fatalf("got %v", err)
		}
	})
}

// TestEvidenceMissingIsLoud runs planning over a state that lacks evidence
// for a committed offset (the machine's invariants forbid it, so the state
// is wrapped) and checks the verdict and the service's error.
func TestEvidenceMissingIsLoud(t *testing.T) {
	s := seed(t)
	st := holeyState{State: s.Machine(), hole: fsm.Range{Start: 10, End: 20}}
	if a := PlanOffset(st, 1, 15); a.Verdict != EvidenceMissing || a.Detail == "" {
		t.Fatalf("hole: %v %q", a.Verdict, a.Detail)
	}
	actions, _ := Scan(st, Cursor{}, 100)
	found := false
	for _, a := range actions {
		found = found || (a.Verdict == EvidenceMissing && a.Offset == 10)
	}
	if !found {
		t.Fatalf("scan did not report the hole: %+v", actions)
	}
	svc := newService(t, s)
	if err := svc.act(context.Background(), PlanOffset(st, 1, 15)); !errors.Is(err, ErrEvidenceMissing) {
		t.Fatalf("act: %v", err)
	}
}

type holeyState struct {
	State
	hole fsm.Range
}

func (h holeyState) EvidenceAt(stream, offset uint64) (fsm.EvidenceInfo, bool) {
	if h.hole.Contains(offset) {
		return fsm.EvidenceInfo{}, false
	}
	return h.State.EvidenceAt(stream, offset)
}

func (h holeyState) Evidence(stream, from uint64, limit int) []fsm.EvidenceInfo {
	var out []fsm.EvidenceInfo
	for _, e := range h.State.Evidence(stream, from, limit) {
		if e.Range != h.hole {
			out = append(out, e)
		}
	}
	return out
}

// TestAtMostOneRepairTakesEffect: two repairs planned from the same state
// (an old leader's and a new leader's) both reach the log; the conditional
// command lets exactly one take effect, and the other re-plans to HEALTHY.
func TestAtMostOneRepairTakesEffect(t *testing.T) {
	s := seed(t)
	first, second := plan(s, 12), plan(s, 12)
	r1 := s.apply(&fsmpb.Command{Op: &fsmpb.Command_RepairGen0{RepairGen0: first.Command}})
	r2 := s.apply(&fsmpb.Command{Op: &fsmpb.Command_RepairGen0{RepairGen0: second.Command}})
	if r1.Rejection != nil || r2.Rejection == nil || r2.Rejection.Code != fsmpb.RejectCode_CONDITION_FAILED {
		t.Fatalf("first %v, second %v", r1.Rejection, r2.Rejection)
	}
	// Through the service: a rival repair lands between planning and
	// proposing; the service's command is refused and it re-plans.
	s = seed(t)
	rival := plan(s, 12)
	s.BeforePropose = func() { s.apply(&fsmpb.Command{Op: &fsmpb.Command_RepairGen0{RepairGen0: rival.Command}}) }
	svc := newService(t, s)
	before := s.Machine().Counts().Records
	runLeader(t, svc, func(ctx context.Context) {
		if err := svc.Repair(ctx, 1, 12); err != nil {
			t.Fatalf("repair after a rival won: %v", err)
		}
	})
	if got := s.Machine().Counts().Records; got != before+1 {
		t.Fatalf("records %d, want %d: exactly one repair takes effect", got, before+1)
	}
}

func TestNotLeaderAndQueueBounds(t *testing.T) {
	s := seed(t)
	svc := newService(t, s)
	if err := svc.Repair(context.Background(), 1, 12); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("outside Run: %v", err)
	}
	svc.Hint(1, 12) // dropped, must not block
}

func TestScanRepairsEverythingWithinBounds(t *testing.T) {
	s := seed(t)
	clk := fakeclock.New(time.Unix(0, 0))
	svc, err := New(DefaultConfig(), s, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); svc.Run(ctx) }()
	clk.BlockUntil(1) // the first scan (at once) ran and the next is armed
	if plan(s, 12).Verdict != Healthy {
		t.Fatal("the first periodic scan did not repair [10,20)")
	}
	clk.Advance(DefaultConfig().ScanInterval)
	clk.BlockUntil(1) // a second scan ran
	cancel()
	<-done
	// Scan over a repaired stream reports nothing.
	var actions []Action
	_ = s.Read(ctx, func(st State) { actions, _ = Scan(st, Cursor{}, 100) })
	if len(actions) != 0 {
		t.Fatalf("healthy stream, scan found %+v", actions)
	}
}

func TestScanResumesFromCursor(t *testing.T) {
	s := seed(t)
	var all []Action
	cur := Cursor{}
	for i := 0; i < 10; i++ {
		var acts []Action
		_ = s.Read(context.Background(), func(st State) { acts, cur = Scan(st, cur, 1) })
		all = append(all, acts...)
		if cur == (Cursor{}) {
			break
		}
	}
	if len(all) != 1 || all[0].Verdict != Rebuild || all[0].Evidence.Range.Start != 10 {
		t.Fatalf("budget-1 scan found %+v", all)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	if err := (Config{}).Validate(); err == nil {
		t.Fatal("zero config accepted")
	}
}

func newService(t *testing.T, s Store, opts ...Option) *Service {
	t.Helper()
	// Time never moves on this clock: after the first scan, requests only.
	opts = append(opts, WithClock(fakeclock.New(time.Unix(0, 0))))
	svc, err := New(DefaultConfig(), s, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// runLeader runs the service as if this node led for the duration of fn.
func runLeader(t *testing.T, svc *Service, fn func(ctx context.Context)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	done := make(chan struct{})
	go func() { defer close(done); svc.Run(ctx) }()
	svc.clock.(*fakeclock.Clock).BlockUntil(1) // Run took its queue and armed the scan
	fn(ctx)
	cancel()
	<-done
	if err := svc.Repair(context.Background(), 1, 0); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("after step-down: %v", err)
	}
}

// TestQuarantinePassLiftsVerifiedRecords: the periodic pass lifts the
// quarantine of a record of any generation (here a TOPIC_COMPACTED one,
// which has no evidence to rebuild from) once its bytes verify, and not
// before.
func TestQuarantinePassLiftsVerifiedRecords(t *testing.T) {
	s := seed(t)
	obj := fsm.ObjectRef{Key: "o", Identity: "sha256:o"}
	key := fsm.IndexKey{Stream: 1, View: fsm.TopicCompacted, Generation: 1, Start: 0}
	s.must(t, &fsmpb.Command{Op: &fsmpb.Command_PublishGeneration{PublishGeneration: &fsmpb.PublishGeneration{
		StreamId: 1, View: fsm.TopicCompacted, Generation: 1, WriterEpoch: 1, Coverage: fsm.Range{Start: 0, End: 30}.PB(), Complete: true,
		Records: []*fsmpb.IndexRecord{fsm.NewIndexRecord(key, fsm.Range{Start: 0, End: 30}, []fsm.Range{{Start: 2, End: 3}}, obj, fsm.ByteRange{Length: 1})},
	}}})
	rec, _ := s.Machine().RecordFrom(1, fsm.TopicCompacted, 1, 0)
	s.must(t, &fsmpb.Command{Op: &fsmpb.Command_ReportCandidateFailure{ReportCandidateFailure: &fsmpb.ReportCandidateFailure{
		Key: rec.Key.PB(), Version: rec.Version, Kind: fsm.FailureObjectMissing,
	}}})
	v := &fakeVerifier{intact: map[fsm.ObjectRef]bool{}, checked: make(chan fsm.ObjectRef, 16)}
	clk := newTickClock()
	w := &watchedStore{machineStore: s, proposed: make(chan *fsmpb.Command, 16)}
	// A pass's time outlasts the interval, so moving the clock to the next
	// pass cannot cut short a first one still finishing on the verify lane.
	cfg := DefaultConfig()
	cfg.ScanInterval, cfg.TimePerPass = time.Second, time.Minute
	svc, err := New(cfg, w, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, WithClock(clk), WithVerifier(v))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); svc.Run(ctx) }()
	<-v.checked // the first re-verification pass checked the record: not intact
	if got := recordAt(s, fsm.TopicCompacted, 1, 0); got.Status != fsm.RecordQuarantined {
		t.Fatalf("before the bytes verify: %v", got.Status)
	}
	v.set(obj, true, nil)
	<-clk.rearmed // the first scan pass ended; the next is due in ScanInterval
	clk.Advance(cfg.ScanInterval)
	<-v.checked
	for cmd := range w.proposed { // the scan's rebuild of [10,20) comes first
		if cmd.GetLiftQuarantine() != nil {
			break
		}
	}
	cancel()
	<-done
	if got, _ := s.Machine().RecordFrom(1, fsm.TopicCompacted, 1, 0); got.Status != fsm.RecordValid || got.Version == rec.Version {
		t.Fatalf("after the bytes verify: %v at %d", got.Status, got.Version)
	}
}
