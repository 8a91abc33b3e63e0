package model

import (
	"strings"
	"testing"

	"github.com/metad/metad/jepsen/history"
)

// watchHistory is a stream with three acknowledged appends (versions 10,
// 12, 15), the final read-back (describe and evidence), and one watcher
// whose sessions are given.
func watchHistory(sessions ...history.Op) history.History {
	obj := func(k string) *history.Object { return &history.Object{Key: k, Identity: "id-" + k} }
	appendOp := func(id int, start, end, version uint64, key string) history.Op {
		return history.Op{ID: id, Kind: history.KindAppend, Stream: 1, Status: history.OK, Call: int64(id), Return: int64(id) + 1,
			In: history.Input{ExpectedStart: start, End: end, Object: obj(key)}, Out: &history.Output{Version: version, CommittedEnd: end}}
	}
	h := history.History{Ops: []history.Op{
		appendOp(1, 0, 2, 10, "a"), appendOp(2, 2, 3, 12, "b"), appendOp(3, 3, 5, 15, "c"),
		{ID: 90, Kind: history.KindDescribe, Stream: 1, Status: history.OK, Final: true, Out: &history.Output{CommittedEnd: 5}},
		{ID: 91, Kind: history.KindEvidence, Stream: 1, Status: history.OK, Final: true, Out: &history.Output{Evidence: []history.Evidence{
			{Range: history.Range{Start: 0, End: 2}, Object: *obj("a"), Version: 10},
			{Range: history.Range{Start: 2, End: 3}, Object: *obj("b"), Version: 12},
			{Range: history.Range{Start: 3, End: 5}, Object: *obj("c"), Version: 15}}}},
	}}
	for i, s := range sessions {
		s.ID, s.Kind, s.Stream, s.Client, s.Status, s.Call = 100+i, history.KindWatch, 1, 200, history.OK, int64(100+i)
		h.Ops = append(h.Ops, s)
	}
	return h
}

func session(from uint64, events ...history.Event) history.Op {
	return history.Op{In: history.Input{From: from}, Out: &history.Output{Events: events}}
}

func started(v, end uint64) history.Event {
	return history.Event{Kind: history.EventStarted, Version: v, End: end}
}

// appended is the event of the history's append at version v.
func appended(v uint64) history.Event {
	r := map[uint64]history.Range{10: {Start: 0, End: 2}, 12: {Start: 2, End: 3}, 15: {Start: 3, End: 5}}[v]
	key := map[uint64]string{10: "a", 12: "b", 15: "c"}[v]
	return history.Event{Kind: history.EventAppended, Version: v, End: r.End, Range: &r,
		Object: &history.Object{Key: key, Identity: "id-" + key}}
}

func TestCheckWatchPassesAGoodWatcher(t *testing.T) {
	h := watchHistory(
		session(0, started(5, 0), appended(10), appended(12)),
		session(12, appended(15), started(20, 5)),
		session(20),
	)
	if a := CheckWatch(h); len(a) != 0 {
		t.Fatalf("a watcher that saw every change once, in order, reported: %v", a)
	}
}

// The planted-style cases: each breaks one promise, and CheckWatch must
// say which.
func TestCheckWatchFlagsGapDuplicateReorderAndBadResume(t *testing.T) {
	cases := []struct {
		name     string
		sessions []history.Op
		want     string
	}{
		{"gap", []history.Op{session(0, started(5, 0), appended(10), appended(15))}, "missed version 12"},
		{"gap across a resume", []history.Op{
			session(0, started(5, 0), appended(10)),
			session(10, appended(15))}, "missed version 12"},
		{"duplicate", []history.Op{session(0, started(5, 0), appended(10), appended(10), appended(12))}, "twice"},
		{"duplicate after a resume", []history.Op{
			session(0, started(5, 0), appended(10), appended(12)),
			session(12, appended(12), appended(15))}, "did not start after the last event seen"},
		{"reorder", []history.Op{session(0, started(5, 0), appended(12), appended(10), appended(15))}, "out of order"},
		{"resume not after the last event", []history.Op{
			session(0, started(5, 0), appended(10), appended(12)),
			session(10, appended(15))}, "resumed after version 10, but the last event it received was version 12"},
		{"lost append", []history.Op{session(0, started(5, 0), appended(10), appended(12),
			history.Event{Kind: history.EventAppended, Version: 15, End: 4, Range: &history.Range{Start: 3, End: 4},
				Object: &history.Object{Key: "x", Identity: "id-x"}})}, "version 15"},
		{"append the read-back lacks", []history.Op{session(0, started(5, 0), appended(10), appended(12), appended(15),
			history.Event{Kind: history.EventAppended, Version: 16, End: 6, Range: &history.Range{Start: 5, End: 6},
				Object: &history.Object{Key: "y", Identity: "id-y"}})}, "which the final evidence (trim 0) does not hold"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			as := CheckWatch(watchHistory(c.sessions...))
			for _, a := range as {
				if a.Check == "G14" && strings.Contains(a.Detail, c.want) {
					return
				}
			}
			t.Fatalf("want a G14 anomaly saying %q, got %v", c.want, as)
		})
	}
}
