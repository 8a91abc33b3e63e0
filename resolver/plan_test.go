package resolver

import (
	"slices"
	"testing"

	"github.com/metad/metad/fsm"
)

// boundaryWorld: offsets [0,30) committed in three indexed appends, trimmed
// to 10, so trim = 10 and committed end = 30.
func boundaryWorld(t *testing.T) *world {
	w := newWorld(t)
	w.appendN(10, "a", true)
	w.appendN(10, "b", true)
	w.appendN(10, "c", true)
	w.trim(10)
	return w
}

func TestPlanBoundaries(t *testing.T) {
	w := boundaryWorld(t)
	for _, tc := range []struct {
		name     string
		offset   uint64
		want     Outcome
		resolved fsm.Range
	}{
		{"trim-1 is trimmed", 9, Trimmed, fsm.Range{}},
		{"trim is readable", 10, Candidates, fsm.Range{Start: 10, End: 20}},
		{"inside a record", 15, Candidates, fsm.Range{Start: 15, End: 20}},
		{"committedEnd-1 is readable", 29, Candidates, fsm.Range{Start: 29, End: 30}},
		{"committedEnd is EOF", 30, EOF, fsm.Range{}},
		{"far past the end is EOF", fsm.MaxOffset, EOF, fsm.Range{}},
		{"zero, below trim", 0, Trimmed, fsm.Range{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := w.plan(fsm.Committed, tc.offset)
			if p.Outcome != tc.want {
				t.Fatalf("offset %d: outcome %v, want %v", tc.offset, p.Outcome, tc.want)
			}
			if p.Stream.Trim != 10 || p.Stream.CommittedEnd != 30 {
				t.Fatalf("plan carries stream %+v", p.Stream)
			}
			if tc.want == Candidates && p.Candidates[0].Resolved != tc.resolved {
				t.Fatalf("resolved %v, want %v", p.Candidates[0].Resolved, tc.resolved)
			}
		})
	}
	if p := PlanRequest(w.m, Request{Stream: 99, View: fsm.Committed, Offset: 0}); p.Outcome != NotFound {
		t.Fatalf("unknown stream: %v", p.Outcome)
	}
}

// TestPlanRefusesNewerGeneration: in each case generation 1 covers the
// offset but is unusable for one reason; the plan must refuse it with that
// reason and offer the older generation 0 record of the same view.
func TestPlanRefusesNewerGeneration(t *testing.T) {
	for _, tc := range []struct {
		name   string
		reason Reason
		// setup breaks generation 1 in the world or returns a State wrapper.
		setup func(w *world) func(State) State
		// exclude returns the caller's exclusions.
		exclude func(w *world) []CandidateID
	}{
		{name: "checksum mismatch", reason: ReasonChecksumMismatch, setup: func(w *world) func(State) State {
			return func(st State) State {
				return faultyState{State: st, record: func(r fsm.RecordInfo) fsm.RecordInfo {
					if r.Key.Generation == 1 {
						r.Checksum ^= 1
					}
					return r
				}}
			}
		}},
		{name: "quarantined", reason: ReasonQuarantined, setup: func(w *world) func(State) State {
			w.quarantine(w.record(fsm.Committed, 1, 5))
			return nil
		}},
		{name: "retired record", reason: ReasonRetired, setup: func(w *world) func(State) State {
			return func(st State) State {
				return faultyState{State: st, record: func(r fsm.RecordInfo) fsm.RecordInfo {
					if r.Key.Generation == 1 {
						r.Status = fsm.RecordRetired
					}
					return r
				}}
			}
		}},
		{name: "unregistered object", reason: ReasonObjectNotRegistered, setup: func(w *world) func(State) State {
			return func(st State) State {
				return faultyState{State: st, object: func(o fsm.ObjectInfo, ok bool) (fsm.ObjectInfo, bool) {
					return o, ok && o.Ref.Key != "g1"
				}}
			}
		}},
		{name: "object DELETING", reason: ReasonObjectNotLive, setup: func(w *world) func(State) State {
			return func(st State) State {
				return faultyState{State: st, object: func(o fsm.ObjectInfo, ok bool) (fsm.ObjectInfo, bool) {
					if o.Ref.Key == "g1" {
						o.Status = fsm.ObjectDeleting
					}
					return o, ok
				}}
			}
		}},
		{name: "object replaced under the same key", reason: ReasonIdentityMismatch, setup: func(w *world) func(State) State {
			w.register(fsm.ObjectRef{Key: "g1", Identity: "sha256:new-bytes"})
			return nil
		}},
		{name: "excluded by the caller", reason: ReasonExcluded, exclude: func(w *world) []CandidateID {
			r := w.record(fsm.Committed, 1, 5)
			return []CandidateID{{Key: r.Key, Version: r.Version}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t)
			w.appendN(10, "g0", true)
			w.publish(fsm.Committed, 1, fsm.Range{Start: 0, End: 10}, true, rec{rng: fsm.Range{Start: 0, End: 10}, key: "g1"})
			var wrap func(State) State
			if tc.setup != nil {
				wrap = tc.setup(w)
			}
			var st State = w.m
			if wrap != nil {
				st = wrap(st)
			}
			var ex []CandidateID
			if tc.exclude != nil {
				ex = tc.exclude(w)
			}
			p := PlanRequest(st, Request{Stream: w.sid, View: fsm.Committed, Offset: 5, Exclude: ex})
			if p.Outcome != Candidates || len(p.Candidates) != 1 {
				t.Fatalf("outcome %v with %d candidates, want the generation-0 candidate", p.Outcome, len(p.Candidates))
			}
			if k := p.Candidates[0].Record.Key; k.Generation != 0 || k.View != fsm.Committed {
				t.Fatalf("candidate %v, want generation 0 of COMMITTED", k)
			}
			if len(p.Refused) != 1 || p.Refused[0].Reason != tc.reason || p.Refused[0].Candidate.Key.Generation != 1 {
				t.Fatalf("refused %v, want generation 1 refused for %s", p.Refused, tc.reason)
			}
		})
	}
}

func TestPlanUnpublishedGenerationIsInvisible(t *testing.T) {
	w := newWorld(t)
	w.appendN(10, "g0", true)
	w.publish(fsm.Committed, 1, fsm.Range{Start: 0, End: 10}, false, rec{rng: fsm.Range{Start: 0, End: 10}, key: "g1"})
	p := w.plan(fsm.Committed, 3)
	if p.Outcome != Candidates || p.Candidates[0].Record.Key.Generation != 0 {
		t.Fatalf("plan %+v, want generation 0", p)
	}
	if len(p.Refused) != 1 || p.Refused[0].Reason != ReasonUnpublished {
		t.Fatalf("refused %v, want UNPUBLISHED", p.Refused)
	}
	// Completing the generation makes it the first candidate.
	w.publish(fsm.Committed, 1, fsm.Range{Start: 0, End: 10}, true)
	if p := w.plan(fsm.Committed, 3); p.Candidates[0].Record.Key.Generation != 1 || len(p.Candidates) != 2 {
		t.Fatalf("after completing: %+v", p.Candidates)
	}
}

func TestPlanOrdersNewestGenerationFirst(t *testing.T) {
	w := newWorld(t)
	w.appendN(100, "g0", true)
	w.publish(fsm.Committed, 3, fsm.Range{Start: 0, End: 100}, true, rec{rng: fsm.Range{Start: 0, End: 50}, key: "g3"})
	w.publish(fsm.Committed, 7, fsm.Range{Start: 0, End: 100}, true, rec{rng: fsm.Range{Start: 40, End: 100}, key: "g7"})
	got := func(o uint64) []uint64 {
		var gens []uint64
		for _, c := range w.plan(fsm.Committed, o).Candidates {
			gens = append(gens, c.Record.Key.Generation)
		}
		return gens
	}
	for _, tc := range []struct {
		offset uint64
		want   []uint64
	}{{10, []uint64{3, 0}}, {45, []uint64{7, 3, 0}}, {60, []uint64{7, 0}}} {
		if g := got(tc.offset); !slices.Equal(g, tc.want) {
			t.Errorf("offset %d: generations %v, want %v", tc.offset, g, tc.want)
		}
	}
}

func TestPlanNeedsRepair(t *testing.T) {
	w := newWorld(t)
	w.appendN(10, "a", true)
	w.appendN(10, "b", false) // committed, no generation-0 record
	if p := w.plan(fsm.Committed, 15); p.Outcome != NeedsRepair || !p.RepairHint {
		t.Fatalf("missing generation 0: %v", p.Outcome)
	}
	// A quarantined generation-0 record needs repair too.
	w.quarantine(w.record(fsm.Committed, 0, 5))
	if p := w.plan(fsm.Committed, 5); p.Outcome != NeedsRepair {
		t.Fatalf("quarantined generation 0: %v", p.Outcome)
	}
	// With a newer generation covering it, the plan has a candidate and
	// only hints that repair should run.
	w.publish(fsm.Committed, 1, fsm.Range{Start: 10, End: 20}, true, rec{rng: fsm.Range{Start: 10, End: 20}, key: "g1"})
	p := w.plan(fsm.Committed, 15)
	if p.Outcome != Candidates || !p.RepairHint || p.Candidates[0].Record.Key.Generation != 1 {
		t.Fatalf("with generation 1: %+v", p)
	}
	// Excluding a present generation-0 record is not a reason to repair.
	w2 := newWorld(t)
	w2.appendN(10, "a", true)
	g0 := w2.record(fsm.Committed, 0, 0)
	if p := w2.plan(fsm.Committed, 0, CandidateID{Key: g0.Key, Version: g0.Version}); p.Outcome != NoCandidate || p.RepairHint {
		t.Fatalf("excluded generation 0: %v hint %v", p.Outcome, p.RepairHint)
	}
}

func TestPlanNeverCrossesViews(t *testing.T) {
	w := newWorld(t)
	w.appendN(100, "g0", true)
	// Nothing published in TOPIC_COMPACTED: the compacted view does not
	// reach the offset; COMMITTED data is never offered in its place.
	if p := w.plan(fsm.TopicCompacted, 5); p.Outcome != ViewEnd || p.ViewEnd != 5 || len(p.Candidates) != 0 {
		t.Fatalf("compacted view over committed-only data: %+v", p)
	}
	// And the reverse: compacted data never answers a COMMITTED read that
	// has no generation-0 record.
	w2 := newWorld(t)
	w2.appendN(100, "g0", false)
	w2.publish(fsm.TopicCompacted, 1, fsm.Range{Start: 0, End: 100}, true,
		rec{rng: fsm.Range{Start: 0, End: 100}, survivors: []fsm.Range{{Start: 0, End: 100}}, key: "c1"})
	if p := w2.plan(fsm.Committed, 5); p.Outcome != NeedsRepair || len(p.Candidates) != 0 {
		t.Fatalf("committed view over compacted-only data: %+v", p)
	}
	for _, c := range w2.plan(fsm.TopicCompacted, 5).Candidates {
		if c.Record.Key.View != fsm.TopicCompacted {
			t.Fatalf("candidate of view %s for a compacted read", c.Record.Key.View)
		}
	}
}

func TestPlanSparse(t *testing.T) {
	w := newWorld(t)
	w.appendN(200, "g0", true)
	w.publish(fsm.TopicCompacted, 1, fsm.Range{Start: 0, End: 100}, true,
		rec{rng: fsm.Range{Start: 0, End: 50}, survivors: []fsm.Range{{Start: 5, End: 7}, {Start: 20, End: 30}}, key: "c1"},
		rec{rng: fsm.Range{Start: 50, End: 80}, survivors: []fsm.Range{{Start: 60, End: 61}}, key: "c1"})
	for _, tc := range []struct {
		offset  uint64
		want    Outcome
		target  fsm.Range
		viewEnd uint64
	}{
		{0, Candidates, fsm.Range{Start: 5, End: 7}, 0},
		{5, Candidates, fsm.Range{Start: 5, End: 7}, 0},
		{6, Candidates, fsm.Range{Start: 6, End: 7}, 0},
		{7, Candidates, fsm.Range{Start: 20, End: 30}, 0}, // a compacted hole: next survivor
		{29, Candidates, fsm.Range{Start: 29, End: 30}, 0},
		{30, Candidates, fsm.Range{Start: 60, End: 61}, 0}, // hole spans into the next record
		{61, ViewEnd, fsm.Range{}, 100},                    // nothing survives up to the coverage end
		{85, ViewEnd, fsm.Range{}, 100},                    // in coverage, after the last record
		{100, ViewEnd, fsm.Range{}, 100},                   // committed, but the view does not reach it
		{150, ViewEnd, fsm.Range{}, 150},
		{200, EOF, fsm.Range{}, 0},
	} {
		p := w.plan(fsm.TopicCompacted, tc.offset)
		if p.Outcome != tc.want || p.ViewEnd != tc.viewEnd {
			t.Errorf("offset %d: %v view end %d, want %v %d", tc.offset, p.Outcome, p.ViewEnd, tc.want, tc.viewEnd)
			continue
		}
		if tc.want != Candidates {
			continue
		}
		c := p.Candidates[0]
		if c.Resolved != tc.target {
			t.Errorf("offset %d: resolved %v, want %v", tc.offset, c.Resolved, tc.target)
		}
		if !insideSurvivor(c) {
			t.Errorf("offset %d: resolved %v is not inside a survivor of %v", tc.offset, c.Resolved, c.Record.Survivors)
		}
	}
}

func TestPlanSparseNewestGenerationDecidesGaps(t *testing.T) {
	w := newWorld(t)
	w.appendN(200, "g0", true)
	all := []fsm.Range{{Start: 0, End: 200}}
	w.publish(fsm.TopicCompacted, 1, fsm.Range{Start: 0, End: 200}, true, rec{rng: fsm.Range{Start: 0, End: 200}, survivors: all, key: "c1"})
	w.publish(fsm.TopicCompacted, 2, fsm.Range{Start: 0, End: 100}, true,
		rec{rng: fsm.Range{Start: 0, End: 100}, survivors: []fsm.Range{{Start: 10, End: 20}}, key: "c2"})
	// Generation 2 says nothing survives in [50,100): that is the answer,
	// not generation 1's less compacted data.
	if p := w.plan(fsm.TopicCompacted, 50); p.Outcome != ViewEnd || p.ViewEnd != 100 {
		t.Fatalf("gap in the newest generation: %v %d", p.Outcome, p.ViewEnd)
	}
	// Past generation 2's coverage, generation 1 speaks.
	if p := w.plan(fsm.TopicCompacted, 150); p.Outcome != Candidates || p.Candidates[0].Record.Key.Generation != 1 {
		t.Fatalf("past generation 2: %+v", p)
	}
	// Where generation 2 names a survivor, generation 1 is the fallback.
	p := w.plan(fsm.TopicCompacted, 5)
	if len(p.Candidates) != 2 || p.Candidates[0].Resolved != (fsm.Range{Start: 10, End: 20}) || p.Candidates[1].Resolved != (fsm.Range{Start: 5, End: 200}) {
		t.Fatalf("fallback candidates %+v", p.Candidates)
	}
	// If generation 2's survivor is unusable and generation 1's gap-free
	// record is too, the answer is a retryable NoCandidate, not ViewEnd.
	r2 := w.record(fsm.TopicCompacted, 2, 5)
	r1 := w.record(fsm.TopicCompacted, 1, 5)
	p = w.plan(fsm.TopicCompacted, 5, CandidateID{Key: r2.Key, Version: r2.Version}, CandidateID{Key: r1.Key, Version: r1.Version})
	if p.Outcome != NoCandidate {
		t.Fatalf("all excluded: %v", p.Outcome)
	}
}

func insideSurvivor(c Candidate) bool {
	for _, s := range c.Record.Survivors {
		if s.Start <= c.Resolved.Start && c.Resolved.End <= s.End {
			return true
		}
	}
	return false
}

func TestPlanSeesTrimmedRecordsGone(t *testing.T) {
	w := newWorld(t)
	w.appendN(10, "a", true)
	w.appendN(10, "b", true)
	w.trim(12)
	if p := w.plan(fsm.Committed, 11); p.Outcome != Trimmed || p.Stream.Trim != 12 {
		t.Fatalf("below trim: %+v", p)
	}
	p := w.plan(fsm.Committed, 12)
	if p.Outcome != Candidates || p.Candidates[0].Resolved != (fsm.Range{Start: 12, End: 20}) {
		t.Fatalf("at trim: %+v", p)
	}
	// The wholly trimmed append's evidence and record are gone.
	if _, ok := w.m.EvidenceAt(w.sid, 5); ok {
		t.Fatal("evidence below trim survived")
	}
	if r, ok := w.m.RecordFrom(w.sid, fsm.Committed, 0, 0); !ok || r.Range.Start != 10 {
		t.Fatalf("first generation-0 record is %v, want the one at 10", r.Range)
	}
}
