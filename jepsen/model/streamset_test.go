package model

import (
	"strings"
	"testing"

	"github.com/metad/metad/jepsen/history"
)

// setHistory is a hand-made stream-set history: one object (op 0) with an
// append [0,2) to each of streams 1, 2 and 3, committed at version 10 with
// status st, then what reads and watchers saw of it. applied lists the
// streams the cluster really applied it to: each of those shows it to a
// watcher (a session per stream covering (5, 15]), to a describe at index
// 12, and in its final evidence; the others show nothing there.
func setHistory(st history.Status, applied ...uint64) history.History {
	obj := history.Object{Key: "jepsen/set/w300-1", Identity: "sha256:set"}
	var apps []history.ObjectAppend
	for s := uint64(1); s <= 3; s++ {
		apps = append(apps, history.ObjectAppend{Stream: s, Epoch: 1, ExpectedStart: 0, End: 2,
			Bytes: history.Bytes{Offset: 10 * (s - 1), Length: 10}})
	}
	var h history.History
	add := func(op history.Op) {
		op.ID = len(h.Ops)
		if op.Status == "" {
			op.Status = history.OK
		}
		h.Ops = append(h.Ops, op)
	}
	objOp := history.Op{Kind: history.KindObject, Client: 300, Status: st, Call: 1, Return: 2,
		In: history.Input{Object: &obj, Size: 30, Appends: apps}}
	if st == history.OK {
		objOp.Out = &history.Output{Version: 10}
	} else if st == history.Rejected {
		objOp.Reason = ReasonNotAtEnd
	}
	add(objOp)
	on := map[uint64]bool{}
	for _, s := range applied {
		on[s] = true
	}
	for s := uint64(1); s <= 3; s++ {
		events := []history.Event{{Kind: history.EventStarted, Version: 5}}
		end := uint64(0)
		var evidence []history.Evidence
		if on[s] {
			r := apps[s-1].Range()
			events = append(events, history.Event{Kind: history.EventAppended, Version: 10, End: 2, Range: &r, Object: &obj})
			evidence = append(evidence, history.Evidence{Range: r, Object: obj, Version: 10})
			end = 2
		}
		events = append(events, history.Event{Kind: history.EventOpened, Version: 15, End: end, Epoch: 2})
		add(history.Op{Kind: history.KindWatch, Client: 200 + int(s), Stream: s, Call: 0, Return: 20, Out: &history.Output{Events: events}})
		add(history.Op{Kind: history.KindDescribe, Client: 100, Stream: s, Call: 21, Return: 22,
			Out: &history.Output{CommittedEnd: end, AppliedIndex: 12}})
		add(history.Op{Kind: history.KindDescribe, Client: 999, Stream: s, Call: 30, Return: 31, Final: true,
			Out: &history.Output{CommittedEnd: end, AppliedIndex: 16}})
		add(history.Op{Kind: history.KindEvidence, Client: 998, Stream: s, Call: 32, Return: 33, Final: true,
			Out: &history.Output{Evidence: evidence}})
	}
	return h
}

func g16(anomalies []Anomaly) []string {
	var out []string
	for _, a := range anomalies {
		if a.Check == "G16" {
			out = append(out, a.Detail)
		}
	}
	return out
}

// TestStreamSetAllOrNone: an object seen in all of its streams, or in
// none, passes, whatever its outcome was.
func TestStreamSetAllOrNone(t *testing.T) {
	for _, c := range []struct {
		name    string
		st      history.Status
		applied []uint64
	}{
		{"acknowledged, in all", history.OK, []uint64{1, 2, 3}},
		{"indeterminate, in all", history.Info, []uint64{1, 2, 3}},
		{"indeterminate, in none", history.Info, nil},
		{"refused, in none", history.Rejected, nil},
	} {
		if got := g16(CheckStreamSets(setHistory(c.st, c.applied...))); len(got) > 0 {
			t.Errorf("%s: G16 reported:\n%s", c.name, strings.Join(got, "\n"))
		}
	}
}

// TestStreamSetHalfAppliedIsCaught is the checker's planted bug: the
// object applied to its first stream only (the planted server bug
// half-object applies the first half of an object's appends). The
// final evidence, the describe at index 12 ≥ 10 and the watcher of
// stream 2 must each say so, acknowledged or not (stream 3's describe
// and watcher too, past the cap of maxSetAnomalies per object).
func TestStreamSetHalfAppliedIsCaught(t *testing.T) {
	for _, st := range []history.Status{history.OK, history.Info} {
		got := strings.Join(g16(CheckStreamSets(setHistory(st, 1))), "\n")
		for _, want := range []string{
			"stream 2's final evidence (trim 0) lacks its append [0,2) there: a stream-set object applied in part",
			"stream 3's final evidence (trim 0) lacks its append [0,2)",
			"describe op 6 read stream 2 at index 12 with committed end 0, below the end 2",
			"watcher 202's session (op 5) on stream 2 covered (5, 15], but it never delivered object jepsen/set/w300-1's append [0,2) at version 10",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: no G16 anomaly says %q; got:\n%s", st, want, got)
			}
		}
	}
}

// TestStreamSetRefusedButSeen: nothing of a refused object may be seen,
// and one object's appends carry one version.
func TestStreamSetRefusedButSeen(t *testing.T) {
	got := strings.Join(g16(CheckStreamSets(setHistory(history.Rejected, 1, 2, 3))), "\n")
	if !strings.Contains(got, "was rejected (op 0: APPEND_NOT_AT_END), but") {
		t.Errorf("a refused object seen is not reported; got:\n%s", got)
	}
	h := setHistory(history.OK, 1, 2, 3)
	for i := range h.Ops {
		if op := &h.Ops[i]; op.Kind == history.KindEvidence && op.Stream == 2 {
			op.Out.Evidence[0].Version = 11
		}
	}
	got = strings.Join(g16(CheckStreamSets(h)), "\n")
	if !strings.Contains(got, "shows object jepsen/set/w300-1's append to stream 2 at version 11; it was acknowledged at version 10") {
		t.Errorf("two versions of one object are not reported; got:\n%s", got)
	}
}

// TestStreamSetReadAtVersionMisses: a resolve answered from the state at
// index 9 (before the object's version 10) may show stream 2 empty; one
// at index 11 may not.
func TestStreamSetReadAtVersionMisses(t *testing.T) {
	resolveAt := func(index uint64) history.Op {
		return history.Op{Kind: history.KindResolve, Status: history.OK, Client: 101, Stream: 2, Call: 21, Return: 22,
			In: history.Input{View: Committed, Offset: 0}, Out: &history.Output{Outcome: "EOF", AppliedIndex: index}}
	}
	for _, c := range []struct {
		index uint64
		want  string
	}{
		{9, ""},
		{11, "resolve op 13 read stream 2 at index 11 with committed end 0, below the end 2 of object jepsen/set/w300-1's append [0,2)"},
	} {
		h := setHistory(history.OK, 1, 2, 3)
		op := resolveAt(c.index)
		op.ID = len(h.Ops)
		h.Ops = append(h.Ops, op)
		got := strings.Join(g16(CheckStreamSets(h)), "\n")
		if c.want == "" && got != "" || !strings.Contains(got, c.want) {
			t.Errorf("resolve at index %d: want %q; got:\n%s", c.index, c.want, got)
		}
	}
}
