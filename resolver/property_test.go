package resolver

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/metad/metad/fsm"
)

var (
	seedFlag   = flag.Uint64("seed", 0, "seed for randomised resolver tests (0: time-based)")
	roundsFlag = flag.Int("rounds", 300, "random worlds per randomised resolver test")
)

func testSeed(t *testing.T) uint64 {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed=%d)", seed, seed)
	return seed
}

// randomWorld builds a stream with random appends (some without their
// generation-0 record), a trim, dense and sparse generations (some
// unfinished, some retired), quarantined records and replaced objects.
func randomWorld(t *testing.T, rng *rand.Rand) *world {
	w := newWorld(t)
	for i := range 1 + rng.IntN(8) {
		w.appendN(uint64(1+rng.IntN(20)), fmt.Sprintf("a%d", i), rng.IntN(5) != 0)
	}
	s, _ := w.m.Stream(w.sid)
	end := s.CommittedEnd
	for gen := uint64(1); gen <= uint64(rng.IntN(4)); gen++ {
		w.publish(fsm.Committed, gen, fsm.Range{Start: 0, End: end}, rng.IntN(6) != 0, randomDense(rng, end, gen)...)
	}
	for gen := uint64(1); gen <= uint64(rng.IntN(4)); gen++ {
		lo := uint64(rng.IntN(int(end)))
		hi := lo + 1 + uint64(rng.IntN(int(end-lo)))
		w.publish(fsm.TopicCompacted, gen, fsm.Range{Start: lo, End: hi}, rng.IntN(6) != 0, randomSparse(rng, lo, hi, gen)...)
	}
	for range rng.IntN(3) {
		view, gen := randomRecordPlace(w, rng)
		if r, ok := w.m.RecordFrom(w.sid, view, gen, uint64(rng.IntN(int(end)))); ok && r.Status == fsm.RecordValid {
			w.quarantine(r)
		}
	}
	if rng.IntN(4) == 0 {
		w.register(fsm.ObjectRef{Key: fmt.Sprintf("d%d", rng.IntN(4)), Identity: "sha256:replaced"})
	}
	if rng.IntN(3) == 0 {
		w.trim(uint64(rng.IntN(int(end) + 1)))
	}
	return w
}

func randomRecordPlace(w *world, rng *rand.Rand) (fsm.View, uint64) {
	view := []fsm.View{fsm.Committed, fsm.TopicCompacted}[rng.IntN(2)]
	gens := w.m.Generations(w.sid, view)
	if len(gens) == 0 {
		return fsm.Committed, 0
	}
	return view, gens[rng.IntN(len(gens))].Number
}

// randomDense tiles [0,end) with records, leaving random holes.
func randomDense(rng *rand.Rand, end, gen uint64) []rec {
	var out []rec
	for at := uint64(0); at < end; {
		n := 1 + uint64(rng.IntN(15))
		hi := min(at+n, end)
		if rng.IntN(4) != 0 {
			out = append(out, rec{rng: fsm.Range{Start: at, End: hi}, key: fmt.Sprintf("d%d", rng.IntN(4))})
		}
		at = hi
	}
	return out
}

// randomSparse tiles [lo,hi) with sparse records with random survivors.
func randomSparse(rng *rand.Rand, lo, hi, gen uint64) []rec {
	var out []rec
	for at := lo; at < hi; {
		span := fsm.Range{Start: at, End: min(at+1+uint64(rng.IntN(15)), hi)}
		at = span.End
		var surv []fsm.Range
		for o := span.Start; o < span.End; o++ {
			if rng.IntN(3) == 0 {
				if n := len(surv); n > 0 && surv[n-1].End == o {
					surv[n-1].End++
				} else {
					surv = append(surv, fsm.Range{Start: o, End: o + 1})
				}
			}
		}
		if len(surv) > 0 && rng.IntN(4) != 0 {
			out = append(out, rec{rng: span, survivors: surv, key: fmt.Sprintf("c%d", rng.IntN(3))})
		}
	}
	return out
}

// naivePlan is the reference: the same rules as PlanRequest, computed by
// brute force over every record of every generation.
func naivePlan(st *fsm.Machine, req Request) (Outcome, []CandidateID, []fsm.Range, uint64) {
	s, ok := st.Stream(req.Stream)
	switch {
	case !ok:
		return NotFound, nil, nil, 0
	case req.Offset >= s.CommittedEnd:
		return EOF, nil, nil, 0
	case req.Offset < s.Trim:
		return Trimmed, nil, nil, 0
	}
	var ids []CandidateID
	var resolved []fsm.Range
	usable := func(g fsm.GenerationInfo, r fsm.RecordInfo) bool {
		o, ok := st.Object(r.Object)
		id := CandidateID{Key: r.Key, Version: r.Version}
		return g.Status == fsm.GenerationPublished && r.Status == fsm.RecordValid && r.Verify() &&
			ok && o.Status == fsm.ObjectLive && o.Ref.Identity == r.Object.Identity && !slices.Contains(req.Exclude, id)
	}
	gens := st.Generations(req.Stream, req.View)
	if req.View == fsm.Committed {
		gen0 := false
		for _, g := range gens {
			for _, r := range st.Records(req.Stream, req.View, g.Number, 0, 1<<30) {
				if !r.Range.Contains(req.Offset) {
					continue
				}
				if g.Number == 0 && r.Status == fsm.RecordValid && r.Verify() {
					gen0 = true
				}
				if usable(g, r) {
					ids = append(ids, CandidateID{Key: r.Key, Version: r.Version})
					resolved = append(resolved, fsm.Range{Start: req.Offset, End: r.Range.End})
				}
			}
		}
		switch {
		case len(ids) > 0:
			return Candidates, ids, resolved, 0
		case gen0:
			return NoCandidate, nil, nil, 0
		}
		return NeedsRepair, nil, nil, 0
	}
	claimed := false
	for _, g := range gens {
		if !g.Coverage.Contains(req.Offset) || g.Status != fsm.GenerationPublished {
			continue
		}
		var best *fsm.RecordInfo
		var bestStart uint64
		for _, r := range st.Records(req.Stream, req.View, g.Number, 0, 1<<30) {
			for _, sv := range r.Survivors {
				if sv.End > req.Offset && r.Range.Start < g.Coverage.End && (best == nil || max(sv.Start, req.Offset) < bestStart) {
					rr := r
					best, bestStart = &rr, max(sv.Start, req.Offset)
				}
			}
		}
		if best == nil {
			if !claimed {
				return ViewEnd, nil, nil, g.Coverage.End
			}
			break
		}
		claimed = true
		if usable(g, *best) {
			ids = append(ids, CandidateID{Key: best.Key, Version: best.Version})
			end := bestStart
			for _, sv := range best.Survivors {
				if sv.Start <= bestStart && bestStart < sv.End {
					end = sv.End
				}
			}
			resolved = append(resolved, fsm.Range{Start: bestStart, End: end})
		}
	}
	switch {
	case !claimed:
		return ViewEnd, nil, nil, req.Offset
	case len(ids) == 0:
		return NoCandidate, nil, nil, 0
	}
	return Candidates, ids, resolved, 0
}

func TestPlanMatchesNaiveReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 1))
	for round := range *roundsFlag {
		w := randomWorld(t, rng)
		s, _ := w.m.Stream(w.sid)
		for o := uint64(0); o <= s.CommittedEnd+1; o++ {
			for _, view := range []fsm.View{fsm.Committed, fsm.TopicCompacted} {
				req := Request{Stream: w.sid, View: view, Offset: o}
				p := PlanRequest(w.m, req)
				wantOutcome, wantIDs, wantResolved, wantEnd := naivePlan(w.m, req)
				var gotIDs []CandidateID
				var gotResolved []fsm.Range
				for _, c := range p.Candidates {
					gotIDs = append(gotIDs, c.ID())
					gotResolved = append(gotResolved, c.Resolved)
					if c.Record.Key.View != view {
						t.Fatalf("round %d: candidate of view %s for %s", round, c.Record.Key.View, view)
					}
				}
				if p.Outcome != wantOutcome || p.ViewEnd != wantEnd || !slices.Equal(gotIDs, wantIDs) || !slices.Equal(gotResolved, wantResolved) {
					t.Fatalf("round %d %s offset %d:\n got  %v %v %v end %d\n want %v %v %v end %d",
						round, view, o, p.Outcome, gotIDs, gotResolved, p.ViewEnd, wantOutcome, wantIDs, wantResolved, wantEnd)
				}
			}
		}
	}
}

// TestResolveGuaranteesUnderFaults runs the loop over random worlds with
// random faults and state changes between pin and recheck, and checks
// G5–G7 on every answer against the state the call ended in.
func TestResolveGuaranteesUnderFaults(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 2))
	for round := range *roundsFlag {
		w := randomWorld(t, rng)
		s, _ := w.m.Stream(w.sid)
		view := []fsm.View{fsm.Committed, fsm.TopicCompacted}[rng.IntN(2)]
		offset := uint64(rng.IntN(int(s.CommittedEnd) + 2))
		before, _, _, _ := naivePlan(w.m, Request{Stream: w.sid, View: view, Offset: offset})
		r := newRig(w)
		if rng.IntN(2) == 0 {
			// Warm a cache with a fault-free resolve first; the faults and
			// state changes below then make some entries stale.
			r.withCache()
			_, _ = r.resolve(t, fsm.Committed, uint64(rng.IntN(int(s.CommittedEnd)+1)))
		}
		r.pinner.share = rng.IntN(2) == 0
		mutated := injectFaults(r, rng, view)
		res, err := r.resolve(t, view, offset)
		checkAnswer(t, round, r, view, offset, res, err)
		if !*mutated && err == nil && res.Outcome != TargetFound && before != Candidates && before != NeedsRepair {
			if res.Outcome != before {
				t.Fatalf("round %d: outcome %v without state change, plan said %v", round, res.Outcome, before)
			}
		}
		if !*mutated && (res.Outcome == EOF || res.Outcome == Trimmed) && before != res.Outcome {
			t.Fatalf("round %d: %v from a transient failure (plan said %v)", round, res.Outcome, before)
		}
	}
}

// injectFaults arms the rig with random faults; the returned flag turns
// true once a fault changed replicated state.
func injectFaults(r *rig, rng *rand.Rand, view fsm.View) *bool {
	mutated := new(bool)
	for _, k := range []string{"a0", "a1", "d0", "d1", "d2", "c0", "c1"} {
		if rng.IntN(5) == 0 {
			r.pinner.refuse[k] = true
		}
	}
	r.pinner.transient = rng.IntN(3)
	r.reader.fails = rng.IntN(2)
	if rng.IntN(4) == 0 {
		r.verifier = fakeVerifier{bad: map[string]error{"d1": fmt.Errorf("%w: injected", ErrPhysicalMismatch)}}
	}
	w := r.w
	r.pinner.onPin = func(n int) {
		if n > 2 || rng.IntN(3) != 0 {
			return
		}
		*mutated = true
		s, _ := w.m.Stream(w.sid)
		switch rng.IntN(4) {
		case 0:
			w.trim(s.Trim + uint64(rng.IntN(int(s.CommittedEnd-s.Trim)+1)))
		case 1:
			last, _ := w.m.LastGeneration(w.sid, view)
			w.publish(view, last+1, fsm.Range{Start: 0, End: s.CommittedEnd}, true)
		case 2:
			w.register(fsm.ObjectRef{Key: fmt.Sprintf("d%d", rng.IntN(3)), Identity: fmt.Sprintf("sha256:r%d", w.index)})
		case 3:
			v, gen := randomRecordPlace(w, rng)
			if rec, ok := w.m.RecordFrom(w.sid, v, gen, s.Trim); ok && rec.Status == fsm.RecordValid {
				w.quarantine(rec)
			}
		}
	}
	return mutated
}

func checkAnswer(t *testing.T, round int, r *rig, view fsm.View, offset uint64, res Result, err error) {
	t.Helper()
	w := r.w
	s, _ := w.m.Stream(w.sid)
	if err != nil {
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("round %d: non-retryable failure %v", round, err)
		}
		return
	}
	switch res.Outcome {
	case EOF:
		if offset < s.CommittedEnd {
			t.Fatalf("round %d: EOF at %d below committed end %d", round, offset, s.CommittedEnd)
		}
	case Trimmed:
		if offset >= s.Trim {
			t.Fatalf("round %d: TRIMMED at %d not below trim %d", round, offset, s.Trim)
		}
	case ViewEnd:
		if view != fsm.TopicCompacted || res.ViewEnd < offset {
			t.Fatalf("round %d: view end %d for %s at %d", round, res.ViewEnd, view, offset)
		}
	case TargetFound:
		checkTarget(t, round, r, view, offset, res)
	default:
		t.Fatalf("round %d: outcome %v is not a resolve answer", round, res.Outcome)
	}
}

// checkTarget checks G6 and G7 for a target: same view, right range, pinned
// under its identity, and the newest admissible candidate in the final state
// once the candidates the loop excluded are excluded.
func checkTarget(t *testing.T, round int, r *rig, view fsm.View, offset uint64, res Result) {
	t.Helper()
	w, tg := r.w, res.Target
	if tg.Key.View != view {
		t.Fatalf("round %d: target of view %s for %s", round, tg.Key.View, view)
	}
	if view == fsm.Committed && (tg.Resolved.Start != offset || !tg.RecordRange.Contains(offset)) {
		t.Fatalf("round %d: dense target %v/%v for offset %d", round, tg.Resolved, tg.RecordRange, offset)
	}
	if view == fsm.TopicCompacted && tg.Resolved.Start < offset {
		t.Fatalf("round %d: sparse target %v before offset %d", round, tg.Resolved, offset)
	}
	if p, ok := w.m.Pin(tg.Pin.ID); !ok || p.Object != tg.Object {
		t.Fatalf("round %d: target %v not pinned under its identity (pin %+v)", round, tg.Object, p)
	}
	var excluded []CandidateID
	for _, ref := range res.Tried {
		if ref.Reason == ReasonPinRefused || ref.Reason == ReasonPhysicalMismatch || ref.Reason == ReasonPhysicalUnavailable {
			excluded = append(excluded, ref.Candidate)
		}
	}
	outcome, ids, resolved, _ := naivePlan(w.m, Request{Stream: w.sid, View: view, Offset: offset, Exclude: excluded})
	want := CandidateID{Key: tg.Key, Version: tg.Version}
	if outcome != Candidates || ids[0] != want || resolved[0] != tg.Resolved {
		t.Fatalf("round %d: target %v %v is not the newest admissible candidate (%v %v %v)", round, want, tg.Resolved, outcome, ids, resolved)
	}
}
