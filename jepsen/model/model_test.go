package model

import (
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/jepsen/history"
)

// builder makes small histories by hand.
type builder struct {
	h history.History
}

func (b *builder) add(op history.Op, call, ret int64) *history.Op {
	op.ID, op.Call, op.Return = len(b.h.Ops), call, ret
	if op.Stream == 0 {
		op.Stream = 1
	}
	if op.Status == "" {
		op.Status = history.OK
	}
	b.h.Ops = append(b.h.Ops, op)
	return &b.h.Ops[len(b.h.Ops)-1]
}

func appendOp(start, end uint64) history.Op {
	obj := history.Object{Key: "k" + string(rune('a'+start)), Identity: "sha256:x"}
	return history.Op{Kind: history.KindAppend, Status: history.OK, In: history.Input{Epoch: 1, ExpectedStart: start, End: end,
		Object: &obj, Bytes: &history.Bytes{Length: end - start}}, Out: &history.Output{CommittedEnd: end}}
}

func describeOp(end, trim uint64) history.Op {
	return history.Op{Kind: history.KindDescribe, Out: &history.Output{CommittedEnd: end, Trim: trim, Epoch: 1,
		Generations: []history.Generation{{View: Committed, Published: true, Coverage: history.Range{Start: trim, End: end}}}}}
}

func openOp() history.Op {
	return history.Op{Kind: history.KindOpen, Status: history.OK, Out: &history.Output{Epoch: 1}}
}

func TestLinearizableAcceptsConcurrentAndRejectsStale(t *testing.T) {
	var b builder
	b.add(openOp(), 0, 1)
	b.add(appendOp(0, 3), 2, 10)
	b.add(describeOp(0, 0), 3, 4)  // concurrent with the append: may see before
	b.add(describeOp(3, 0), 5, 12) // or after
	if l := CheckLinearizable(b.h, time.Minute); l.Result != "Ok" {
		t.Fatalf("concurrent reads rejected: %v %v", l.Result, l.Anomalies)
	}
	b.add(describeOp(0, 0), 20, 21) // after the append returned: stale
	l := CheckLinearizable(b.h, time.Minute)
	if l.Result != "Illegal" || len(l.Anomalies) != 1 || l.Anomalies[0].Op != 4 {
		t.Fatalf("stale read accepted: %v %v", l.Result, l.Anomalies)
	}
}

func TestIndeterminateWriteMayHappenOrNot(t *testing.T) {
	for _, seen := range []uint64{0, 3} {
		var b builder
		b.add(openOp(), 0, 1)
		info := appendOp(0, 3)
		info.Status, info.Out = history.Info, nil
		b.add(info, 2, 3)
		b.add(describeOp(seen, 0), 10, 11)
		if l := CheckLinearizable(b.h, time.Minute); l.Result != "Ok" {
			t.Fatalf("indeterminate append, end %d seen: %v %v", seen, l.Result, l.Anomalies)
		}
	}
	var b builder
	b.add(openOp(), 0, 1)
	fail := appendOp(0, 3)
	fail.Status, fail.Out = history.Fail, nil
	b.add(fail, 2, 3)
	b.add(describeOp(3, 0), 10, 11)
	if l := CheckLinearizable(b.h, time.Minute); l.Result != "Illegal" {
		t.Fatalf("a definitely failed append was seen, yet accepted: %v", l.Result)
	}
}

func TestRejectionsMustMatchTheModel(t *testing.T) {
	s := NewStream(1)
	ok, s, _ := Step(s, &history.Op{Kind: history.KindOpen, Status: history.OK, Out: &history.Output{Epoch: 1}})
	if !ok {
		t.Fatal("open refused")
	}
	stale := appendOp(0, 2)
	stale.In.Epoch, stale.Status, stale.Reason = 0, history.Rejected, ReasonStaleEpoch
	if ok, _, why := Step(s, &stale); !ok {
		t.Fatalf("stale epoch refusal not accepted: %s", why)
	}
	stale.In.Epoch = 1 // the current epoch: refusing it is wrong (G4 only fences stale epochs)
	if ok, _, _ := Step(s, &stale); ok {
		t.Fatal("refusal of a current-epoch append accepted")
	}
	acked := appendOp(0, 2)
	acked.In.Epoch = 0 // acknowledged with a stale epoch: G4 broken
	acked.Status = history.OK
	if ok, _, _ := Step(s, &acked); ok {
		t.Fatal("acknowledged stale-epoch append accepted")
	}
}

func TestResolveChecks(t *testing.T) {
	s := NewStream(1)
	_, s, _ = Step(s, &history.Op{Kind: history.KindOpen, Status: history.OK, Out: &history.Output{Epoch: 1}})
	a := appendOp(0, 4)
	_, s, _ = Step(s, &a)
	_, s, _ = Step(s, &history.Op{Kind: history.KindTrim, Status: history.OK, In: history.Input{Offset: 1}, Out: &history.Output{Trim: 1, CommittedEnd: 4}})
	target := func(view string, resolved history.Range) *history.Output {
		obj, b := *a.In.Object, *a.In.Bytes
		return &history.Output{Outcome: "TARGET", Trim: 1, CommittedEnd: 4, Target: &history.Target{View: view, Stream: 1,
			RecordRange: history.Range{Start: 0, End: 4}, Resolved: resolved, Object: obj, Bytes: b, PinID: 1,
			Checksum: Checksum(1, view, 0, history.Range{Start: 0, End: 4}, nil, obj, b, nil)}}
	}
	cases := []struct {
		name   string
		view   string
		offset uint64
		out    *history.Output
		wantOK bool
	}{
		{"target", Committed, 2, target(Committed, history.Range{Start: 2, End: 4}), true},
		{"wrong resolved range", Committed, 2, target(Committed, history.Range{Start: 1, End: 4}), false},
		{"other view (G6)", TopicCompacted, 2, target(Committed, history.Range{Start: 2, End: 4}), false},
		{"EOF at end", Committed, 4, &history.Output{Outcome: "EOF", CommittedEnd: 4, Trim: 1}, true},
		{"EOF below end", Committed, 3, &history.Output{Outcome: "EOF", CommittedEnd: 4, Trim: 1}, false},
		{"trimmed below trim", Committed, 0, &history.Output{Outcome: "OFFSET_TRIMMED", Trim: 1, CommittedEnd: 4}, true},
		{"trimmed at trim", Committed, 1, &history.Output{Outcome: "OFFSET_TRIMMED", Trim: 1, CommittedEnd: 4}, false},
		{"view end in the dense view", Committed, 2, &history.Output{Outcome: "VIEW_END", Trim: 1, CommittedEnd: 4, ViewEnd: 2}, false},
		{"sparse view with nothing published", TopicCompacted, 2, &history.Output{Outcome: "VIEW_END", Trim: 1, CommittedEnd: 4, ViewEnd: 2}, true},
	}
	for _, c := range cases {
		op := &history.Op{Kind: history.KindResolve, Status: history.OK, In: history.Input{View: c.view, Offset: c.offset}, Out: c.out}
		if ok, _, why := Step(s, op); ok != c.wantOK {
			t.Errorf("%s: ok=%v (%s), want %v", c.name, ok, why, c.wantOK)
		}
	}
	// A replaced object's record is no longer admissible (G8).
	r := history.Op{Kind: history.KindReplace, Status: history.OK, In: history.Input{Object: &history.Object{Key: a.In.Object.Key, Identity: "sha256:y"}}}
	_, s2, _ := Step(s, &r)
	op := &history.Op{Kind: history.KindResolve, Status: history.OK, In: history.Input{View: Committed, Offset: 2}, Out: target(Committed, history.Range{Start: 2, End: 4})}
	if ok, _, _ := Step(s2, op); ok {
		t.Error("target naming replaced bytes accepted")
	}
}

func TestSparseViewAndNewestCandidate(t *testing.T) {
	s := NewStream(1)
	_, s, _ = Step(s, &history.Op{Kind: history.KindOpen, Status: history.OK, Out: &history.Output{Epoch: 1}})
	a := appendOp(0, 10)
	_, s, _ = Step(s, &a)
	obj := history.Object{Key: "c", Identity: "sha256:c"}
	rec := history.Record{Range: history.Range{Start: 0, End: 10}, Survivors: []history.Range{{Start: 5, End: 6}}, Object: obj, Bytes: history.Bytes{Length: 3}}
	pub := &history.Op{Kind: history.KindPublish, Status: history.OK, In: history.Input{Epoch: 1, View: TopicCompacted, Generation: 1,
		Coverage: &history.Range{Start: 0, End: 10}, Records: []history.Record{rec}, Complete: true}, Out: &history.Output{Generation: 1}}
	ok, s, why := Step(s, pub)
	if !ok {
		t.Fatal(why)
	}
	sparse := func(resolved history.Range) *history.Op {
		return &history.Op{Kind: history.KindResolve, Status: history.OK, In: history.Input{View: TopicCompacted, Offset: 2},
			Out: &history.Output{Outcome: "TARGET", CommittedEnd: 10, Target: &history.Target{View: TopicCompacted, Stream: 1, Generation: 1,
				RecordRange: rec.Range, Resolved: resolved, Object: obj, Bytes: rec.Bytes, PinID: 1,
				Checksum: Checksum(1, TopicCompacted, 1, rec.Range, rec.Survivors, obj, rec.Bytes, nil)}}}
	}
	if ok, _, why := Step(s, sparse(history.Range{Start: 5, End: 6})); !ok {
		t.Fatalf("next surviving offset refused: %s", why)
	}
	if ok, _, _ := Step(s, sparse(history.Range{Start: 2, End: 10})); ok {
		t.Fatal("dense coverage manufactured for the sparse view accepted (G6)")
	}
	viewEnd := &history.Op{Kind: history.KindResolve, Status: history.OK, In: history.Input{View: TopicCompacted, Offset: 7},
		Out: &history.Output{Outcome: "VIEW_END", CommittedEnd: 10, ViewEnd: 10}}
	if ok, _, why := Step(s, viewEnd); !ok {
		t.Fatalf("view end after the last survivor refused: %s", why)
	}
	// A published COMMITTED generation 1 covering the offset must win over
	// generation 0 (G7: the newest admissible candidate).
	c := history.Record{Range: history.Range{Start: 0, End: 10}, Object: history.Object{Key: "r", Identity: "sha256:r"}, Bytes: history.Bytes{Length: 9}}
	c.Checksum = Checksum(1, Committed, 1, c.Range, nil, c.Object, c.Bytes, nil)
	pubC := &history.Op{Kind: history.KindPublish, Status: history.OK, In: history.Input{Epoch: 1, View: Committed, Generation: 1,
		Coverage: &history.Range{Start: 0, End: 10}, Records: []history.Record{c}, Complete: true}, Out: &history.Output{Generation: 1}}
	_, s, _ = Step(s, pubC)
	gen0 := &history.Op{Kind: history.KindResolve, Status: history.OK, In: history.Input{View: Committed, Offset: 3},
		Out: &history.Output{Outcome: "TARGET", CommittedEnd: 10, Target: &history.Target{View: Committed, Stream: 1,
			RecordRange: history.Range{Start: 0, End: 10}, Resolved: history.Range{Start: 3, End: 10}, Object: *a.In.Object, Bytes: *a.In.Bytes, PinID: 1,
			Checksum: Checksum(1, Committed, 0, history.Range{Start: 0, End: 10}, nil, *a.In.Object, *a.In.Bytes, nil)}}}
	if ok, _, why := Step(s, gen0); ok || !strings.Contains(why, "newest") {
		t.Fatalf("older generation accepted over the newest: ok=%v %s", ok, why)
	}
}

func TestMonotoneAndData(t *testing.T) {
	var b builder
	b.add(describeOp(5, 0), 0, 1)
	b.add(describeOp(4, 0), 2, 3)
	if a := CheckMonotone(b.h); len(a) != 1 || a[0].Check != "G3" {
		t.Fatalf("end going back not reported: %v", a)
	}
	var d builder
	r := d.add(history.Op{Kind: history.KindResolve, In: history.Input{View: Committed, Offset: 1}, Out: &history.Output{Outcome: "TARGET",
		Trim: 0, CommittedEnd: 3, Target: &history.Target{View: Committed, RecordRange: history.Range{Start: 0, End: 2},
			Resolved: history.Range{Start: 1, End: 2}, PinID: 1, PinTTL: int64(time.Minute)}, Data: Payloads(1, []history.Range{{Start: 0, End: 2}}),
		Read: &history.Watch{Result: "ok"}}}, 0, 1)
	if a := CheckData(d.h); len(a) != 0 {
		t.Fatalf("right bytes refused: %v", a)
	}
	r.Out.Data = Payloads(1, []history.Range{{Start: 1, End: 3}})
	if a := CheckData(d.h); len(a) != 1 || a[0].Check != "G8" {
		t.Fatalf("wrong bytes not reported: %v", a)
	}
	r.Out.Read = &history.Watch{Result: "missing", At: 2}
	if a := CheckData(d.h); len(a) != 1 || a[0].Check != "G9" {
		t.Fatalf("object gone under a pin not reported: %v", a)
	}
}

// TestResolveReadIndexIsOrdered: a resolve's read_index is its
// linearization point in log order, so it is never below the index of a
// write acknowledged before the resolve was asked; a resolve that ran
// concurrently with the write may read before it.
func TestResolveReadIndexIsOrdered(t *testing.T) {
	resolveAt := func(index uint64) history.Op {
		return history.Op{Kind: history.KindResolve, In: history.Input{View: Committed, Offset: 9},
			Out: &history.Output{Outcome: "EOF", CommittedEnd: 5, AppliedIndex: index}}
	}
	var b builder
	w := appendOp(0, 5)
	w.Out.Version = 10
	b.add(w, 0, 2)
	b.add(resolveAt(9), 1, 3)  // concurrent with the append: may read before it
	b.add(resolveAt(10), 3, 4) // after it, at it
	b.add(resolveAt(0), 5, 6)  // a server that sends no read_index is not judged
	if a := CheckMonotone(b.h); len(a) != 0 {
		t.Fatalf("ordered read indexes refused: %v", a)
	}
	b.add(resolveAt(9), 7, 8) // after the append, before it in the log: a stale read
	a := CheckMonotone(b.h)
	if len(a) != 1 || a[0].Check != "G3" || a[0].Op != 4 || !strings.Contains(a[0].Detail, "index went back: 9") {
		t.Fatalf("stale resolve not reported: %v", a)
	}
}

// TestEvidenceBranchesStayApart: states share their append evidence, and
// two branches of porcupine's search that extend the same state differently
// never see each other's appends.
func TestEvidenceBranchesStayApart(t *testing.T) {
	app := func(start, end uint64, key string) Append {
		return Append{Range: history.Range{Start: start, End: end}, Object: history.Object{Key: key}}
	}
	keys := func(e evidence) string {
		var ks []string
		for _, a := range e.list() {
			ks = append(ks, a.Object.Key)
		}
		return strings.Join(ks, ",")
	}
	var root evidence
	x := root.with(app(0, 1, "x"))
	b1 := x.with(app(1, 2, "b1")) // extends the shared buffer
	b2 := x.with(app(1, 3, "b2")) // x was extended already: copies
	c1 := b1.with(app(2, 3, "c1"))
	c2 := b2.with(app(3, 4, "c2"))
	again := x.with(app(1, 2, "b3"))
	for _, tc := range []struct {
		e    evidence
		want string
	}{{root, ""}, {x, "x"}, {b1, "x,b1"}, {b2, "x,b2"}, {c1, "x,b1,c1"}, {c2, "x,b2,c2"}, {again, "x,b3"}} {
		if got := keys(tc.e); got != tc.want {
			t.Errorf("evidence %q, want %q", got, tc.want)
		}
	}
}
