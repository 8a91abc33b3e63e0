package fsm

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/fsm/fsmpb"
)

// runs returns the base seed and how many sequences to run: short by
// default, many more with -long or FSM_LONG=1. The seed is logged; -seed
// replays from it (sequence i uses seed+i).
func runs(t *testing.T, short, long int) (uint64, int) {
	seed := uint64(*flagSeed)
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	n := short
	if raceEnabled {
		n = max(1, short/3)
	}
	if *flagLong || os.Getenv("FSM_LONG") == "1" {
		n = long
	}
	t.Logf("seed %d, %d sequences (replay one with -run '%s' -seed N)", seed, n, t.Name())
	return seed, n
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x6d65746164)) }

// stepper applies one sequence to a machine (with invariant checks) and the
// model, comparing them after every step.
type stepper struct {
	m   *Machine
	ref *refModel
	gen *generator
	idx uint64
}

func newStepper(ch chooser) *stepper {
	ref := newRefModel()
	return &stepper{m: newTestMachine(WithInvariantChecks()), ref: ref, gen: &generator{ch: ch, m: ref}}
}

// step applies the next generated command to both and compares; it returns
// the command and the machine's result.
func (st *stepper) step() (*fsmpb.Command, *fsmpb.Result, error) {
	cmd := st.gen.next()
	st.idx += uint64(1 + st.gen.pick(2)) // Raft indexes may skip
	// A refused command may change only machine time, pruning and dedup:
	// predict that state from a clone.
	before := st.m.Clone()
	before.applied = st.idx
	before.clock = max(before.clock, cmd.StampUnixNano)
	before.pruneExpiredPins()
	before.pruneDedup()

	got := st.m.Apply(st.idx, proto.Clone(cmd).(*fsmpb.Command))
	want := st.ref.apply(st.idx, proto.Clone(cmd).(*fsmpb.Command))
	if err := sameResult(got, want); err != nil {
		return cmd, got, err
	}
	if err := st.reopenNow(); err != nil {
		return cmd, got, err
	}
	if got.Rejection != nil && (cmd.RequestId == "" || got.Deduplicated) {
		h1, _, _ := before.StateHash()
		h2, _, _ := st.m.StateHash()
		if h1 != h2 {
			return cmd, got, fmt.Errorf("refused (%s) but changed the state", got.Rejection.Code)
		}
	}
	return cmd, got, sameState(st.m, st.ref)
}

func sameResult(got, want *fsmpb.Result) error {
	g, w := proto.Clone(got).(*fsmpb.Result), proto.Clone(want).(*fsmpb.Result)
	if g.Rejection != nil && g.Rejection.Message == "" {
		return fmt.Errorf("rejection %s without a message", g.Rejection.Code)
	}
	if g.Rejection != nil {
		g.Rejection = &fsmpb.Rejection{Code: g.Rejection.Code} // fields are pinned by the golden scripts
	}
	if !proto.Equal(g, w) {
		return fmt.Errorf("result\n machine: %v\n   model: %v", got, want)
	}
	return nil
}

// sameState compares everything observable through the machine's queries
// with the model.
func sameState(m *Machine, ref *refModel) error {
	if m.AppliedIndex() != ref.applied || m.Clock() != ref.clock {
		return fmt.Errorf("applied/clock %d/%d, model %d/%d", m.AppliedIndex(), m.Clock(), ref.applied, ref.clock)
	}
	var want []StreamInfo
	for _, s := range ref.streams {
		status := StreamActive
		if s.sealed {
			status = StreamSealed
		}
		want = append(want, StreamInfo{ID: s.id, Name: s.name, WriterEpoch: s.epoch, Status: status,
			Version: s.version, CommittedEnd: s.end, Trim: s.trim, CreatedVersion: s.created})
	}
	if got := m.Streams(0, 1<<20); !equal(got, want) {
		return fmt.Errorf("streams\n machine: %+v\n   model: %+v", got, want)
	}
	for _, s := range ref.streams {
		if got, ok := m.StreamByName(s.name); !ok || got.ID != s.id {
			return fmt.Errorf("StreamByName(%q) = %d %v, model %d", s.name, got.ID, ok, s.id)
		}
		if err := sameStream(m, s); err != nil {
			return fmt.Errorf("stream %d: %w", s.id, err)
		}
	}
	if err := sameObjects(m, ref); err != nil {
		return err
	}
	if got := m.Counts().Dedup; got != len(ref.dedup) {
		return fmt.Errorf("dedup entries %d, model %d", got, len(ref.dedup))
	}
	return nil
}

func sameStream(m *Machine, s *refStream) error {
	var evs []EvidenceInfo
	for _, e := range s.evidence {
		evs = append(evs, EvidenceInfo{Stream: s.id, Range: e.rng, Object: e.obj, Bytes: e.bytes, WriterEpoch: e.epoch, Version: e.version})
	}
	if got := m.Evidence(s.id, 0, 1<<20); !equal(got, evs) {
		return fmt.Errorf("evidence\n machine: %+v\n   model: %+v", got, evs)
	}
	probes := probeOffsets(s)
	for _, o := range probes {
		got, ok := m.EvidenceAt(s.id, o)
		i := slices.IndexFunc(evs, func(e EvidenceInfo) bool { return e.Range.Contains(o) })
		if ok != (i >= 0) || (ok && got != evs[i]) {
			return fmt.Errorf("EvidenceAt(%d) = %+v %v, model index %d", o, got, ok, i)
		}
	}
	for _, view := range []View{Committed, TopicCompacted} {
		v := s.views[view]
		if last, any := m.LastGeneration(s.id, view); last != v.last || any != v.any {
			return fmt.Errorf("%s: last generation %d %v, model %d %v", view, last, any, v.last, v.any)
		}
		var gens []GenerationInfo
		for i := len(v.gens) - 1; i >= 0; i-- {
			g := v.gens[i]
			status := GenerationPublished
			if g.building {
				status = GenerationBuilding
			}
			gens = append(gens, GenerationInfo{Stream: s.id, View: view, Number: g.num, Status: status,
				Version: g.version, Coverage: g.cover, Records: len(g.recs)})
		}
		if got := m.Generations(s.id, view); !equal(got, gens) {
			return fmt.Errorf("%s generations\n machine: %+v\n   model: %+v", view, got, gens)
		}
		for _, g := range v.gens {
			if err := sameRecords(m, s.id, view, g, probes); err != nil {
				return fmt.Errorf("%s g%d: %w", view, g.num, err)
			}
		}
	}
	return nil
}

// probeOffsets are the offsets worth asking about: 0, around the trim point
// and the committed end, and around every boundary of evidence and records.
func probeOffsets(s *refStream) []uint64 {
	out := []uint64{0, s.trim, s.end, s.end + 1}
	around := func(o uint64) {
		out = append(out, o, o+1)
		if o > 0 {
			out = append(out, o-1)
		}
	}
	for _, e := range s.evidence {
		around(e.rng.Start)
	}
	for _, v := range s.views {
		for _, g := range v.gens {
			for _, r := range g.recs {
				around(r.rng.Start)
				around(r.rng.End)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func sameRecords(m *Machine, id uint64, view View, g *refGen, probes []uint64) error {
	var want []RecordInfo
	for _, r := range g.recs {
		want = append(want, RecordInfo{Key: IndexKey{id, view, g.num, r.rng.Start}, Range: r.rng, Survivors: r.surv,
			Object: r.obj, Bytes: r.bytes, Version: r.version, Checksum: r.sum, Status: r.status})
	}
	if got := m.Records(id, view, g.num, 0, 1<<20); !equal(got, want) {
		return fmt.Errorf("records\n machine: %+v\n   model: %+v", got, want)
	}
	for _, o := range probes {
		got, ok := m.RecordFrom(id, view, g.num, o)
		i := slices.IndexFunc(want, func(r RecordInfo) bool { return r.Range.End > o })
		if ok != (i >= 0) || (ok && !equal(got, want[i])) {
			return fmt.Errorf("RecordFrom(%d) = %+v %v, model index %d", o, got, ok, i)
		}
		if ok && !got.Verify() {
			return fmt.Errorf("RecordFrom(%d): checksum does not verify", o)
		}
	}
	return nil
}

func sameObjects(m *Machine, ref *refModel) error {
	refs := ref.refs()
	var want []ObjectInfo
	for _, k := range sortedKeys(ref.objects) {
		o := ref.objects[k]
		want = append(want, ObjectInfo{Ref: o.ref, Size: o.size, Status: o.status, Version: o.version,
			References: refs[k], IdleSince: o.idle, Pins: ref.pinCount(k), PinMaxExpiry: o.maxExpiry})
	}
	if got := m.Objects(ObjectRef{}, 1<<20); !equal(got, want) {
		return fmt.Errorf("objects\n machine: %+v\n   model: %+v", got, want)
	}
	var pins []PinInfo
	for _, p := range ref.pins {
		pins = append(pins, PinInfo{ID: p.id, Object: p.ref, Holder: p.holder, TTL: p.ttl, Expiry: p.expiry, Version: p.version})
	}
	if got := m.Pins(0, 1<<20); !equal(got, pins) {
		return fmt.Errorf("pins\n machine: %+v\n   model: %+v", got, pins)
	}
	return nil
}

const stepsPerSequence = 100

// TestModelEquivalence applies random command sequences to the machine (with
// invariant checks after every Apply) and the reference model and compares
// results and all observable state after every step.
func TestModelEquivalence(t *testing.T) {
	seed, n := runs(t, 200, 20000)
	var accepted, refused, steps int
	codes := map[fsmpb.RejectCode]int{}
	for i := range n {
		st := newStepper(randChooser{newRand(seed + uint64(i))})
		for step := range stepsPerSequence {
			cmd, res, err := st.step()
			if err != nil {
				t.Fatalf("seed %d step %d: %v\ncommand: %v", seed+uint64(i), step, err, cmd)
			}
			steps++
			if res.Rejection == nil {
				accepted++
			} else {
				refused++
				codes[res.Rejection.Code]++
			}
		}
	}
	t.Logf("%d steps: %d accepted, %d refused %v", steps, accepted, refused, codes)
	// The generator must keep hitting both sides of every check, or this
	// test proves little.
	if accepted < steps/2 {
		t.Errorf("only %d of %d commands accepted", accepted, steps)
	}
	if n >= 60 {
		for code := range fsmpb.RejectCode_name {
			if c := fsmpb.RejectCode(code); c != 0 && c != fsmpb.RejectCode_TOO_LARGE && codes[c] == 0 {
				t.Errorf("no command was refused with %s", c)
			}
		}
	}
}

// TestReplicasAgree applies the same sequences to two machines; one of them
// is now and then replaced by Restore of its own snapshot (which must give
// identical bytes back). Their state hashes must stay equal, and a clone
// taken mid-sequence must keep the hash it had when taken.
func TestReplicasAgree(t *testing.T) {
	seed, n := runs(t, 100, 10000)
	for i := range n {
		s := seed + uint64(i)
		if err := replicaSequence(newRand(s)); err != nil {
			t.Fatalf("seed %d: %v", s, err)
		}
	}
}

func replicaSequence(r *rand.Rand) error {
	st := newStepper(randChooser{r})
	b := newTestMachine() // compared by hash with st.m, which checks invariants
	var clone *Machine
	var cloneHash [32]byte
	cloneAt := r.IntN(stepsPerSequence)
	for step := range stepsPerSequence {
		cmd := st.gen.next()
		st.idx++
		st.ref.apply(st.idx, proto.Clone(cmd).(*fsmpb.Command)) // keeps the generator aimed
		r1 := st.m.Apply(st.idx, proto.Clone(cmd).(*fsmpb.Command))
		r2 := b.Apply(st.idx, proto.Clone(cmd).(*fsmpb.Command))
		if !proto.Equal(r1, r2) {
			return fmt.Errorf("step %d: results differ: %v / %v", step, r1, r2)
		}
		h1, _, _ := st.m.StateHash()
		h2, _, _ := b.StateHash()
		if h1 != h2 {
			return fmt.Errorf("step %d: replicas' state hashes differ after %v", step, cmd)
		}
		if r.IntN(10) == 0 {
			restored, err := roundTrip(b)
			if err != nil {
				return fmt.Errorf("step %d: %w", step, err)
			}
			b = restored
		}
		if step == cloneAt {
			clone, cloneHash = st.m.Clone(), h1
		}
	}
	if h, _, _ := clone.StateHash(); h != cloneHash {
		return fmt.Errorf("a clone taken at step %d changed as the original went on", cloneAt)
	}
	_, err := roundTrip(clone)
	return err
}

// roundTrip snapshots m, restores it and checks the restored machine
// snapshots to identical bytes.
func roundTrip(m *Machine) (*Machine, error) {
	var s1, s2 bytes.Buffer
	if err := m.Clone().WriteSnapshot(&s1); err != nil {
		return nil, err
	}
	r, err := restoreTestMachine(bytes.NewReader(s1.Bytes()))
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	if err := r.WriteSnapshot(&s2); err != nil {
		return nil, err
	}
	if !bytes.Equal(s1.Bytes(), s2.Bytes()) {
		return nil, fmt.Errorf("snapshot → Restore → snapshot differs")
	}
	if r.AppliedIndex() != m.AppliedIndex() {
		return nil, fmt.Errorf("restored at %d, was %d", r.AppliedIndex(), m.AppliedIndex())
	}
	return r, nil
}

// TestCloneDivergesIndependently applies different commands to a machine
// and its clone: each must keep matching its own model.
func TestCloneDivergesIndependently(t *testing.T) {
	seed, n := runs(t, 30, 2000)
	for i := range n {
		s := seed + uint64(i)
		a := newStepper(randChooser{newRand(s)})
		for range 60 {
			if _, _, err := a.step(); err != nil {
				t.Fatalf("seed %d: %v", s, err)
			}
		}
		// b continues from a clone with a model built by replaying a's
		// history is not available, so b's model is a's, deep-copied by
		// replaying the snapshot: compare b against a fresh model built the
		// same way instead: both start equal to a's model.
		b := &stepper{m: forkTestMachine(a.m), ref: cloneModel(a.ref), idx: a.idx}
		b.gen = &generator{ch: randChooser{newRand(s ^ 0xb)}, m: b.ref}
		for range 60 {
			if _, _, err := a.step(); err != nil {
				t.Fatalf("seed %d (original): %v", s, err)
			}
			if _, _, err := b.step(); err != nil {
				t.Fatalf("seed %d (clone): %v", s, err)
			}
		}
	}
}

// cloneModel deep-copies a model.
func cloneModel(m *refModel) *refModel {
	c := *m
	c.streams = nil
	for _, s := range m.streams {
		sc := *s
		sc.evidence = slices.Clone(s.evidence)
		sc.views = map[View]*refView{}
		for k, v := range s.views {
			vc := *v
			vc.gens = nil
			for _, g := range v.gens {
				gc := *g
				gc.recs = slices.Clone(g.recs)
				vc.gens = append(vc.gens, &gc)
			}
			sc.views[k] = &vc
		}
		c.streams = append(c.streams, &sc)
	}
	c.objects = map[string]*refObject{}
	for k, o := range m.objects {
		oc := *o
		c.objects[k] = &oc
	}
	c.pins = slices.Clone(m.pins)
	c.dedup = slices.Clone(m.dedup)
	return &c
}

// equal is reflect.DeepEqual, except that an empty slice equals nil.
func equal(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Kind() == reflect.Slice && vb.Kind() == reflect.Slice && va.Len() == 0 && vb.Len() == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

// seedOf derives a stable seed from a name (used for corpus generation).
func seedOf(name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return h.Sum64()
}
