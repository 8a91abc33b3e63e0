package resolver

import (
	"testing"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

// mapCache is a trivial Cache for tests.
type mapCache struct {
	entries     map[fsm.IndexKey]Candidate
	invalidated []CandidateID
}

func newMapCache() *mapCache { return &mapCache{entries: map[fsm.IndexKey]Candidate{}} }

func (m *mapCache) Get(stream, offset uint64) (Candidate, bool) {
	var best Candidate
	found := false
	for k, c := range m.entries {
		if k.Stream == stream && c.Record.Range.Contains(offset) && (!found || k.Generation > best.Record.Key.Generation) {
			best, found = c, true
		}
	}
	return best, found
}

func (m *mapCache) Put(c Candidate) { m.entries[c.Record.Key] = c }

func (m *mapCache) Invalidate(id CandidateID) {
	m.invalidated = append(m.invalidated, id)
	if c, ok := m.entries[id.Key]; ok && c.ID() == id {
		delete(m.entries, id.Key)
	}
}

func (r *rig) withCache() *mapCache {
	c := newMapCache()
	r.cache = c
	return c
}

func TestCacheHitSkipsThePlanRead(t *testing.T) {
	w := twoGenerations(t)
	r := newRig(w)
	cache := r.withCache()
	res, err := r.resolve(t, fsm.Committed, 4)
	mustTarget(t, res, err, 1)
	if len(cache.entries) != 1 || r.reader.reads != 2 {
		t.Fatalf("after a miss: %d entries, %d reads (plan + recheck)", len(cache.entries), r.reader.reads)
	}
	res, err = r.resolve(t, fsm.Committed, 7)
	tg := mustTarget(t, res, err, 1)
	if r.reader.reads != 3 || tg.Resolved != (fsm.Range{Start: 7, End: 10}) {
		t.Fatalf("a hit must cost only the recheck: %d reads, resolved %v", r.reader.reads, tg.Resolved)
	}
}

// TestCacheHitListsTheRefusals: a hit explains itself like a miss — the
// newer record it passed over is listed with its reason, from the recheck.
func TestCacheHitListsTheRefusals(t *testing.T) {
	w := twoGenerations(t)
	w.quarantine(w.record(fsm.Committed, 1, 0))
	r := newRig(w)
	r.withCache()
	for _, offset := range []uint64{4, 5} { // a miss, then a hit
		res, err := r.resolve(t, fsm.Committed, offset)
		mustTarget(t, res, err, 0)
		if len(res.Tried) != 1 || res.Tried[0].Reason != ReasonQuarantined || res.Tried[0].Candidate.Key.Generation != 1 {
			t.Fatalf("offset %d: tried %v, want generation 1 QUARANTINED", offset, res.Tried)
		}
	}
	if r.reader.reads != 3 {
		t.Fatalf("%d reads, want plan + recheck, then recheck only", r.reader.reads)
	}
}

// TestStaleCacheEntryNeverWins: entries that went stale (a newer
// generation, a quarantined record, a trim) are caught by the recheck,
// invalidated, and the answer is what a fresh plan gives.
func TestStaleCacheEntryNeverWins(t *testing.T) {
	for _, tc := range []struct {
		name    string
		change  func(w *world)
		outcome Outcome
		gen     uint64
	}{
		{"newer generation", func(w *world) {
			w.publish(fsm.Committed, 2, fsm.Range{Start: 0, End: 10}, true, rec{rng: fsm.Range{Start: 0, End: 10}, key: "g2"})
		}, TargetFound, 2},
		{"record quarantined", func(w *world) { w.quarantine(w.record(fsm.Committed, 1, 0)) }, TargetFound, 0},
		{"object replaced", func(w *world) { w.register(fsm.ObjectRef{Key: "g1", Identity: "sha256:new"}) }, TargetFound, 0},
		{"trimmed past the offset", func(w *world) { w.trim(8) }, Trimmed, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := twoGenerations(t)
			r := newRig(w)
			cache := r.withCache()
			if _, err := r.resolve(t, fsm.Committed, 4); err != nil {
				t.Fatal(err)
			}
			tc.change(w)
			res, err := r.resolve(t, fsm.Committed, 5)
			if err != nil || res.Outcome != tc.outcome {
				t.Fatalf("got %v %+v, want %v", err, res, tc.outcome)
			}
			if tc.outcome == TargetFound && res.Target.Key.Generation != tc.gen {
				t.Fatalf("target generation %d, want %d", res.Target.Key.Generation, tc.gen)
			}
			if len(cache.invalidated) == 0 {
				t.Fatal("the stale entry was not invalidated")
			}
		})
	}
}

// TestHeldPinServesWithoutRecheck: a shared pin committed in the planned
// state pins the candidate at the plan's own linearization point, so the
// resolve takes no new pin and needs no recheck.
func TestHeldPinServesWithoutRecheck(t *testing.T) {
	w := twoGenerations(t)
	r := newRig(w)
	r.pinner.share = true
	res, err := r.resolve(t, fsm.Committed, 4)
	first := mustTarget(t, res, err, 1)
	if r.reader.reads != 2 || len(r.pinner.pinned) != 1 {
		t.Fatalf("first resolve: %d reads, %d pins", r.reader.reads, len(r.pinner.pinned))
	}
	res, err = r.resolve(t, fsm.Committed, 6)
	second := mustTarget(t, res, err, 1)
	if r.reader.reads != 3 || len(r.pinner.pinned) != 1 || second.Pin.ID != first.Pin.ID || !second.Pin.Shared {
		t.Fatalf("second resolve: %d reads, %d pins, pin %+v", r.reader.reads, len(r.pinner.pinned), second.Pin)
	}
	if res.ReadIndex < first.Pin.ID || res.ReadIndex != w.m.AppliedIndex() {
		t.Fatalf("read index %d", res.ReadIndex)
	}
}

// TestReleasedSharedPinIsNotTrusted: if the shared pin is gone from the
// state (released by someone, or pruned), the plan does not count it and
// the resolve pins again.
func TestReleasedSharedPinIsNotTrusted(t *testing.T) {
	w := twoGenerations(t)
	r := newRig(w)
	r.pinner.share = true
	res, err := r.resolve(t, fsm.Committed, 4)
	first := mustTarget(t, res, err, 1)
	w.must(&fsmpb.Command{Op: &fsmpb.Command_ReleasePin{ReleasePin: &fsmpb.ReleasePin{PinId: first.Pin.ID}}})
	res, err = r.resolve(t, fsm.Committed, 6)
	second := mustTarget(t, res, err, 1)
	if second.Pin.ID == first.Pin.ID || len(r.pinner.pinned) != 2 {
		t.Fatalf("resolved under a released pin: %+v", second.Pin)
	}
	if p, ok := w.m.Pin(second.Pin.ID); !ok || p.Object != second.Object {
		t.Fatalf("the new pin %+v is not in the state", second.Pin)
	}
}
