package resolver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

// world is a real fsm.Machine plus helpers to build the states the tests
// need. Index and time advance with every command.
type world struct {
	t     testing.TB
	m     *fsm.Machine
	index uint64
	now   time.Time
	sid   uint64
	epoch uint64
}

func newWorld(t testing.TB) *world {
	w := &world{t: t, m: fsm.New(fsm.WithInvariantChecks()), now: time.Unix(1_700_000_000, 0)}
	w.sid = w.must(&fsmpb.Command{Op: &fsmpb.Command_CreateStream{CreateStream: &fsmpb.CreateStream{Name: "s"}}}).StreamId
	w.epoch = w.must(&fsmpb.Command{Op: &fsmpb.Command_OpenForWrite{OpenForWrite: &fsmpb.OpenForWrite{StreamId: w.sid}}}).WriterEpoch
	return w
}

func (w *world) apply(cmd *fsmpb.Command) *fsmpb.Result {
	w.index++
	w.now = w.now.Add(time.Millisecond)
	cmd.StampUnixNano = w.now.UnixNano()
	return w.m.Apply(w.index, cmd)
}

func (w *world) must(cmd *fsmpb.Command) *fsmpb.Result {
	w.t.Helper()
	res := w.apply(cmd)
	if res.Rejection != nil {
		w.t.Fatalf("command %v rejected: %v", cmd.Op, res.Rejection)
	}
	return res
}

func ref(key string) fsm.ObjectRef { return fsm.ObjectRef{Key: key, Identity: "sha256:" + key} }

func (w *world) register(obj fsm.ObjectRef) {
	w.t.Helper()
	w.must(&fsmpb.Command{Op: &fsmpb.Command_RegisterObject{RegisterObject: &fsmpb.RegisterObject{Object: obj.PB(), Size: 1 << 20}}})
}

// appendN commits n offsets at the committed end, in object `key` (which
// it registers), with or without its generation-0 record.
func (w *world) appendN(n uint64, key string, indexed bool) fsm.Range {
	w.t.Helper()
	obj := ref(key)
	if _, ok := w.m.Object(obj); !ok {
		w.register(obj)
	}
	s, _ := w.m.Stream(w.sid)
	rng := fsm.Range{Start: s.CommittedEnd, End: s.CommittedEnd + n}
	w.must(&fsmpb.Command{Op: &fsmpb.Command_CommitAppend{CommitAppend: &fsmpb.CommitAppend{
		StreamId: w.sid, WriterEpoch: w.epoch, ExpectedStart: rng.Start, End: rng.End,
		Object: obj.PB(), Bytes: fsm.ByteRange{Offset: rng.Start * 10, Length: n * 10}.PB(), IndexGen0: indexed,
	}}})
	return rng
}

// rec describes one record to publish: a range (span, for a sparse view),
// its survivors, and its object key.
type rec struct {
	rng       fsm.Range
	survivors []fsm.Range
	key       string
}

func (w *world) publish(view fsm.View, gen uint64, coverage fsm.Range, complete bool, recs ...rec) *fsmpb.Result {
	w.t.Helper()
	var prs []*fsmpb.IndexRecord
	for _, r := range recs {
		obj := ref(r.key)
		if vs := w.m.ObjectVersions(r.key); len(vs) > 0 {
			obj = vs[len(vs)-1].Ref
		} else {
			w.register(obj)
		}
		k := fsm.IndexKey{Stream: w.sid, View: view, Generation: gen, Start: r.rng.Start}
		prs = append(prs, fsm.NewIndexRecord(k, r.rng, r.survivors, obj, fsm.ByteRange{Offset: 0, Length: 100}))
	}
	return w.must(&fsmpb.Command{Op: &fsmpb.Command_PublishGeneration{PublishGeneration: &fsmpb.PublishGeneration{
		StreamId: w.sid, View: view, Generation: gen, WriterEpoch: w.epoch, Coverage: coverage.PB(),
		Records: prs, Complete: complete,
	}}})
}

func (w *world) trim(to uint64) {
	w.t.Helper()
	w.must(&fsmpb.Command{Op: &fsmpb.Command_Trim{Trim: &fsmpb.Trim{StreamId: w.sid, Offset: to}}})
}

func (w *world) record(view fsm.View, gen, offset uint64) fsm.RecordInfo {
	w.t.Helper()
	r, ok := w.m.RecordFrom(w.sid, view, gen, offset)
	if !ok {
		w.t.Fatalf("no record of %s gen %d at %d", view, gen, offset)
	}
	return r
}

func (w *world) quarantine(r fsm.RecordInfo) {
	w.t.Helper()
	res := w.must(&fsmpb.Command{Op: &fsmpb.Command_ReportCandidateFailure{ReportCandidateFailure: &fsmpb.ReportCandidateFailure{
		Key: r.Key.PB(), Version: r.Version, Kind: fsm.FailureObjectMissing, Detail: "test",
	}}})
	if !res.Quarantined {
		w.t.Fatalf("record %v not quarantined", r.Key)
	}
}

func (w *world) plan(view fsm.View, offset uint64, exclude ...CandidateID) Plan {
	return PlanRequest(w.m, Request{Stream: w.sid, View: view, Offset: offset, Exclude: exclude})
}

// ---- fakes for the loop ----

// faultyState wraps a State to show the planner records and objects the
// machine would never hold.
type faultyState struct {
	State
	record func(fsm.RecordInfo) fsm.RecordInfo
	object func(fsm.ObjectInfo, bool) (fsm.ObjectInfo, bool)
}

func (f faultyState) RecordFrom(stream uint64, view fsm.View, gen, offset uint64) (fsm.RecordInfo, bool) {
	r, ok := f.State.RecordFrom(stream, view, gen, offset)
	if ok && f.record != nil {
		r = f.record(r)
	}
	return r, ok
}

func (f faultyState) Object(ref fsm.ObjectRef) (fsm.ObjectInfo, bool) {
	o, ok := f.State.Object(ref)
	if f.object != nil {
		return f.object(o, ok)
	}
	return o, ok
}

// machineReader reads the world's machine directly: trivially
// linearizable, since the tests apply commands on the same goroutine.
type machineReader struct {
	w     *world
	wrap  func(State) State
	fails int // fail this many reads first
	reads int
}

func (r *machineReader) Read(ctx context.Context, fn func(State)) error {
	r.reads++
	if r.fails > 0 {
		r.fails--
		return fmt.Errorf("no leader (injected)")
	}
	var st State = r.w.m
	if r.wrap != nil {
		st = r.wrap(st)
	}
	fn(st)
	return nil
}

// fakePinner takes real pins through the machine, with injectable faults.
type fakePinner struct {
	w         *world
	refuse    map[string]bool // object keys whose pins are refused
	transient int             // fail this many pins transiently first
	onPin     func(n int)     // runs after the n-th successful pin
	pinned    []fsm.ObjectRef
	released  []uint64
	share     bool                  // pins are shared leases, offered by Held
	held      map[fsm.ObjectRef]Pin // shared pins taken
}

func (p *fakePinner) Pin(ctx context.Context, obj fsm.ObjectRef, ttl time.Duration) (Pin, error) {
	if p.transient > 0 {
		p.transient--
		return Pin{}, fmt.Errorf("raft apply timed out (injected)")
	}
	if p.refuse[obj.Key] {
		return Pin{}, fmt.Errorf("%w: object %s is DELETING (injected)", ErrPinRefused, obj.Key)
	}
	res := p.w.apply(&fsmpb.Command{Op: &fsmpb.Command_PinObject{PinObject: &fsmpb.PinObject{
		Object: obj.PB(), Holder: "test", TtlNanos: int64(ttl),
	}}})
	if res.Rejection != nil {
		return Pin{}, fmt.Errorf("%w: %s", ErrPinRefused, res.Rejection.Message)
	}
	p.pinned = append(p.pinned, obj)
	pin := Pin{ID: res.PinId, Expiry: time.Unix(0, res.PinExpiryUnixNano), Shared: p.share}
	if p.share {
		if p.held == nil {
			p.held = map[fsm.ObjectRef]Pin{}
		}
		p.held[obj] = pin
	}
	if p.onPin != nil {
		p.onPin(len(p.pinned))
	}
	return pin, nil
}

// Held offers pins the fake took with share set, like the server's leases.
func (p *fakePinner) Held(obj fsm.ObjectRef, ttl time.Duration) (Pin, bool) {
	pin, ok := p.held[obj]
	return pin, ok && p.share
}

func (p *fakePinner) Release(ctx context.Context, pin Pin) error {
	if pin.Shared {
		return nil
	}
	p.released = append(p.released, pin.ID)
	res := p.w.apply(&fsmpb.Command{Op: &fsmpb.Command_ReleasePin{ReleasePin: &fsmpb.ReleasePin{PinId: pin.ID}}})
	if res.Rejection != nil {
		return fmt.Errorf("release: %s", res.Rejection.Message)
	}
	return nil
}

// fakeRepairer rebuilds a generation-0 record from the machine's evidence,
// through the same conditional command the real repair uses.
type fakeRepairer struct {
	w     *world
	err   error
	noop  bool // report success without committing anything
	calls int
	hints int
}

func (f *fakeRepairer) Repair(ctx context.Context, stream, offset uint64) error {
	f.calls++
	if f.err != nil || f.noop {
		return f.err
	}
	ev, ok := f.w.m.EvidenceAt(stream, offset)
	if !ok {
		return fmt.Errorf("no evidence at %d", offset)
	}
	var replace []*fsmpb.RecordVersion
	for _, r := range f.w.m.Records(stream, fsm.Committed, 0, ev.Range.Start, 1<<20) {
		if r.Range.Start >= ev.Range.End {
			break
		}
		replace = append(replace, &fsmpb.RecordVersion{Start: r.Range.Start, Version: r.Version})
	}
	key := fsm.IndexKey{Stream: stream, View: fsm.Committed, Generation: 0, Start: ev.Range.Start}
	res := f.w.apply(&fsmpb.Command{Op: &fsmpb.Command_RepairGen0{RepairGen0: &fsmpb.RepairGen0{
		StreamId: stream, EvidenceStart: ev.Range.Start, EvidenceVersion: ev.Version, Replace: replace,
		Record: fsm.NewIndexRecord(key, ev.Range, nil, ev.Object, ev.Bytes),
	}}})
	if res.Rejection != nil {
		return fmt.Errorf("repair: %s", res.Rejection.Message)
	}
	return nil
}

func (f *fakeRepairer) Hint(stream, offset uint64) { f.hints++ }

type fakeVerifier struct{ bad map[string]error }

func (v fakeVerifier) Verify(ctx context.Context, rec fsm.RecordInfo) error {
	return v.bad[rec.Object.Key]
}

type fakeReporter struct {
	reports []CandidateID
	kinds   []fsm.FailureKind
}

func (r *fakeReporter) ReportFailure(ctx context.Context, id CandidateID, kind fsm.FailureKind, detail string) error {
	r.reports = append(r.reports, id)
	r.kinds = append(r.kinds, kind)
	return nil
}

// fakeClock never waits: a timer advances time and fires at once.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) NewTimer(d time.Duration) clock.Timer {
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return firedTimer(ch)
}

// firedTimer has fired already.
type firedTimer chan time.Time

func (t firedTimer) C() <-chan time.Time { return t }
func (firedTimer) Reset(time.Duration)   {}
func (firedTimer) Stop()                 {}

// rig is a resolver wired to fakes over one world.
type rig struct {
	w        *world
	reader   *machineReader
	pinner   *fakePinner
	repairer *fakeRepairer
	reporter *fakeReporter
	clock    *fakeClock
	verifier Verifier
	cache    Cache
}

func newRig(w *world) *rig {
	return &rig{
		w: w, reader: &machineReader{w: w}, pinner: &fakePinner{w: w, refuse: map[string]bool{}},
		repairer: &fakeRepairer{w: w}, reporter: &fakeReporter{}, clock: &fakeClock{now: w.now},
	}
}

func (r *rig) resolver(t testing.TB) *Resolver {
	t.Helper()
	res, err := New(DefaultConfig(), Deps{
		Reader: r.reader, Pinner: r.pinner, Repairer: r.repairer, Verifier: r.verifier,
		Reporter: r.reporter, Clock: r.clock, Cache: r.cache,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func (r *rig) resolve(t testing.TB, view fsm.View, offset uint64, exclude ...CandidateID) (Result, error) {
	t.Helper()
	return r.resolver(t).Resolve(context.Background(), Request{Stream: r.w.sid, View: view, Offset: offset, Exclude: exclude})
}

func (f faultyState) ObjectVersions(key string) []fsm.ObjectInfo {
	var out []fsm.ObjectInfo
	for _, o := range f.State.ObjectVersions(key) {
		if f.object != nil {
			var ok bool
			if o, ok = f.object(o, true); !ok {
				continue
			}
		}
		out = append(out, o)
	}
	return out
}
