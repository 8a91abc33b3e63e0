package integration

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/fsm"
)

var (
	readpathSeed  = flag.Uint64("readpath.seed", 0, "seed for TestRandomReadPath (0: time-based)")
	readpathSteps = flag.Int("readpath.steps", 80, "steps of TestRandomReadPath (raise for a long run)")
)

// pathModel is what the test knows of its stream: it is the only writer.
type pathModel struct {
	trim, end uint64
	// gens: live generations per view (COMMITTED generation 0 implied).
	gens map[metadpb.View]map[uint64][]record
	last map[metadpb.View]uint64
	// broken: identities whose bytes the test deleted or replaced.
	broken map[string]bool
	// pins held by the test: pin id → object.
	pins map[uint64]fsm.ObjectRef
}

// TestRandomReadPath drives a seeded random sequence of appends (some
// unindexed), rewrites in both views, retirements, trims, physical
// failures (deleted or replaced objects), leadership transfers and pins,
// and after every resolve or read checks G5–G10 against what the test
// wrote. A fixed default length keeps CI quick; -readpath.steps runs long.
func TestRandomReadPath(t *testing.T) {
	seed := *readpathSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -readpath.seed=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	// A writer registers an object and then publishes the generation that
	// names it: GC must leave fresh objects alone for longer than that.
	_, b := readCluster(t, "--gc-min-idle", "3s")
	m := &pathModel{end: 10, gens: map[metadpb.View]map[uint64][]record{
		metadpb.View_COMMITTED: {}, metadpb.View_TOPIC_COMPACTED: {},
	}, last: map[metadpb.View]uint64{metadpb.View_COMMITTED: 2}, broken: map[string]bool{}, pins: map[uint64]fsm.ObjectRef{}}
	m.gens[metadpb.View_COMMITTED][1] = []record{{rng: fsm.Range{Start: 0, End: 10}}}
	m.gens[metadpb.View_COMMITTED][2] = []record{{rng: fsm.Range{Start: 0, End: 10}}}
	reads := 0
	for step := range *readpathSteps {
		switch op := rng.IntN(12); {
		case op < 2:
			n := 1 + uint64(rng.IntN(8))
			b.append(n, []byte(fmt.Sprintf("append-%d", m.end)), rng.IntN(3) != 0)
			m.end += n
		case op < 3:
			randomRewrite(t, b, m, rng, metadpb.View_COMMITTED)
		case op < 4:
			randomRewrite(t, b, m, rng, metadpb.View_TOPIC_COMPACTED)
		case op < 5:
			randomRetire(t, b, m, rng)
		case op < 6 && m.trim < m.end:
			to := m.trim + uint64(rng.IntN(int(min(m.end-m.trim, 6))+1))
			if _, err := client.Call(b.ctx(), b.c, b.c.Metad.Trim, &metadpb.TrimRequest{StreamId: b.stream, Offset: to, RequestId: client.NewRequestID()}); err != nil {
				t.Fatalf("step %d: trim to %d: %v", step, to, err)
			}
			m.trim = to
		case op < 7:
			randomBreakage(t, b, m, rng)
		case op < 8:
			_, _ = b.c.Cluster.TransferLeadership(ctxT(t, 10*time.Second), &metadpb.TransferLeadershipRequest{})
		default:
			view := []metadpb.View{metadpb.View_COMMITTED, metadpb.View_TOPIC_COMPACTED}[rng.IntN(2)]
			offset := uint64(rng.IntN(int(m.end) + 3))
			checkResolve(t, step, b, m, view, offset, rng.IntN(4) == 0)
			reads++
		}
		checkPinsHold(t, step, b, m)
	}
	if reads == 0 {
		t.Fatal("no read was checked")
	}
}

// randomRewrite publishes the next generation of a view over a random
// range of live committed offsets, with fresh objects.
func randomRewrite(t *testing.T, b *broker, m *pathModel, rng *rand.Rand, view metadpb.View) {
	if m.end <= m.trim+1 {
		return
	}
	lo := m.trim + uint64(rng.IntN(int(m.end-m.trim-1)))
	hi := lo + 1 + uint64(rng.IntN(int(m.end-lo)))
	gen := m.last[view] + 1
	var recs []record
	for at := lo; at < hi; {
		r := record{rng: fsm.Range{Start: at, End: min(at+1+uint64(rng.IntN(6)), hi)}}
		at = r.rng.End
		if view == metadpb.View_TOPIC_COMPACTED {
			for o := r.rng.Start; o < r.rng.End; o++ {
				if rng.IntN(2) == 0 {
					r.survivors = append(r.survivors, fsm.Range{Start: o, End: o + 1})
				}
			}
			if len(r.survivors) == 0 {
				continue
			}
		}
		payload := []byte(fmt.Sprintf("%s-g%d-%d", view, gen, r.rng.Start))
		r.obj = b.put(fmt.Sprintf("rw/%s/%d/%d", view, gen, r.rng.Start), payload)
		r.length = uint64(len(payload))
		recs = append(recs, r)
	}
	if err := b.publish(view, gen, fsm.Range{Start: lo, End: hi}, recs...); err != nil {
		t.Fatalf("publish %s generation %d: %v", view, gen, err)
	}
	m.gens[view][gen] = recs
	m.last[view] = gen
}

func randomRetire(t *testing.T, b *broker, m *pathModel, rng *rand.Rand) {
	view := []metadpb.View{metadpb.View_COMMITTED, metadpb.View_TOPIC_COMPACTED}[rng.IntN(2)]
	var gens []uint64
	for g := range m.gens[view] {
		gens = append(gens, g)
	}
	if len(gens) == 0 {
		return
	}
	slices.Sort(gens)
	gen := gens[rng.IntN(len(gens))]
	if _, err := client.Call(b.ctx(), b.c, b.c.Metad.RetireGeneration, &metadpb.RetireGenerationRequest{
		StreamId: b.stream, View: view, Generation: gen, RequestId: client.NewRequestID()}); err != nil {
		t.Fatalf("retire %s %d: %v", view, gen, err)
	}
	delete(m.gens[view], gen)
}

// randomBreakage deletes or replaces the bytes of a random known object,
// behind metad's back: a physical failure readers must detect.
func randomBreakage(t *testing.T, b *broker, m *pathModel, rng *rand.Rand) {
	var ids []string
	for id := range b.bytes {
		if !m.broken[id] {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return
	}
	slices.Sort(ids)
	id := ids[rng.IntN(len(ids))]
	key := keyOf(b, id)
	if key == "" {
		return
	}
	if rng.IntN(2) == 0 {
		_ = b.store.Delete(b.ctx(), key, id)
	} else {
		// An overwrite as an unversioned store does it: the version goes,
		// new bytes come under the key.
		_ = b.store.Delete(b.ctx(), key, id)
		info, err := b.store.Put(b.ctx(), key, bytesReader("REPLACED "+id))
		if err == nil {
			m.broken[info.Identity] = true // never registered: must never be served
		}
	}
	m.broken[id] = true
}

func keyOf(b *broker, identity string) string {
	resp, err := b.c.Metad.ListIndex(b.ctx(), &metadpb.ListIndexRequest{StreamId: b.stream, View: metadpb.View_COMMITTED, Limit: 1000})
	if err == nil {
		for _, r := range resp.Records {
			if r.Record.Object.Identity == identity {
				return r.Record.Object.Key
			}
		}
	}
	// Objects of rewrites are named by the test; search them too.
	for _, view := range []metadpb.View{metadpb.View_COMMITTED, metadpb.View_TOPIC_COMPACTED} {
		for g := uint64(1); g <= 64; g++ {
			resp, err := b.c.Metad.ListIndex(b.ctx(), &metadpb.ListIndexRequest{StreamId: b.stream, View: view, Generation: g, Limit: 1000})
			if err != nil {
				continue
			}
			for _, r := range resp.Records {
				if r.Record.Object.Identity == identity {
					return r.Record.Object.Key
				}
			}
		}
	}
	return ""
}

// checkResolve resolves (and, for a target, reads) one offset and checks
// the answer against the model.
func checkResolve(t *testing.T, step int, b *broker, m *pathModel, view metadpb.View, offset uint64, keepPin bool) {
	t.Helper()
	res, err := b.read(view, offset, 6*time.Second) // checks G8 on success
	where := fmt.Sprintf("step %d: %s offset %d (trim %d, end %d)", step, view, offset, m.trim, m.end)
	if err != nil {
		var re *client.ReadError
		if !errors.As(err, &re) || !re.Retryable() {
			t.Fatalf("%s: non-retryable failure %v", where, err)
		}
		if offset >= m.end || offset < m.trim {
			t.Fatalf("%s: a boundary became a failure: %v", where, err)
		}
		return // retryable: every candidate's bytes may be broken
	}
	switch {
	case offset >= m.end:
		if res.Outcome != metadpb.Outcome_EOF {
			t.Fatalf("%s: %v, want EOF (G5)", where, res.Outcome)
		}
	case offset < m.trim:
		if res.Outcome != metadpb.Outcome_OFFSET_TRIMMED || res.Trim != m.trim {
			t.Fatalf("%s: %v trim %d, want OFFSET_TRIMMED (G5)", where, res.Outcome, res.Trim)
		}
	case res.Outcome == metadpb.Outcome_TARGET:
		checkTargetShape(t, where, m, view, offset, res.Target)
		if m.broken[res.Target.Object.Identity] {
			t.Fatalf("%s: served broken identity %s (G8)", where, res.Target.Object.Identity)
		}
	case res.Outcome == metadpb.Outcome_VIEW_END && view == metadpb.View_TOPIC_COMPACTED:
	default:
		t.Fatalf("%s: outcome %v for a committed, untrimmed offset (G5/G10)", where, res.Outcome)
	}
	if keepPin && res.Outcome == metadpb.Outcome_TARGET {
		// Take a pin of our own and hold it for a while (G9 check).
		resp, err := client.Call(b.ctx(), b.c, b.c.Metad.Pin, &metadpb.PinRequest{Object: res.Target.Object, Holder: "random-test",
			Ttl: durationpb.New(2 * time.Minute), RequestId: client.NewRequestID()})
		if err == nil {
			m.pins[resp.PinId] = fsm.ObjectRef{Key: res.Target.Object.Key, Identity: res.Target.Object.Identity}
		}
	}
}

// checkTargetShape checks G6: the requested view, and a range that starts
// at the offset (dense) or at a surviving offset at or after it (sparse).
func checkTargetShape(t *testing.T, where string, m *pathModel, view metadpb.View, offset uint64, tg *metadpb.Target) {
	t.Helper()
	if tg.Key.View != view {
		t.Fatalf("%s: target of view %s (G6)", where, tg.Key.View)
	}
	if view == metadpb.View_COMMITTED {
		if tg.Resolved.Start != offset || tg.RecordRange.Start > offset || tg.RecordRange.End <= offset {
			t.Fatalf("%s: dense target %v / %v (G6)", where, tg.Resolved, tg.RecordRange)
		}
		return
	}
	if tg.Resolved.Start < offset {
		t.Fatalf("%s: sparse target %v starts before the offset (G6)", where, tg.Resolved)
	}
	for _, r := range m.gens[view][tg.Key.Generation] {
		if r.rng.Start != tg.Key.Start {
			continue
		}
		for _, s := range r.survivors {
			if s.Start <= tg.Resolved.Start && tg.Resolved.End <= s.End {
				return
			}
		}
	}
	t.Fatalf("%s: sparse target %v is not inside a published survivor of generation %d (G6)", where, tg.Resolved, tg.Key.Generation)
}

// checkPinsHold checks G9: an object the test holds a pin on is never
// physically deleted (unless the test itself broke it). Pins are released
// at random so GC can proceed.
func checkPinsHold(t *testing.T, step int, b *broker, m *pathModel) {
	t.Helper()
	for id, obj := range m.pins {
		if m.broken[obj.Identity] {
			continue
		}
		if _, err := b.store.ReadAt(b.ctx(), obj.Key, obj.Identity, make([]byte, 1), 0); err != nil {
			t.Fatalf("step %d: pinned object %v unreadable: %v (G9)", step, obj, err)
		}
		if step%5 == 0 {
			_, _ = b.c.Metad.ReleasePin(b.ctx(), &metadpb.ReleasePinRequest{PinId: id})
			delete(m.pins, id)
		}
	}
}
