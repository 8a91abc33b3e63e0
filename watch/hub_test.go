package watch

import (
	"errors"
	"testing"
	"time"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

func newHub(t *testing.T, history, buffer, max int) *Hub {
	t.Helper()
	h, err := New(Config{History: history, Buffer: buffer, MaxWatchers: max, StaleAfter: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func appended(stream, version uint64) Event {
	return Event{Kind: Appended, Stream: stream, Version: version, CommittedEnd: version}
}

func versions(evs []Event) []uint64 {
	var out []uint64
	for _, e := range evs {
		out = append(out, e.Version)
	}
	return out
}

func drain(w *Watcher) []Event {
	var out []Event
	for {
		select {
		case ev := <-w.Events():
			out = append(out, *ev)
		default:
			return out
		}
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestRingKeepsTheNewestHistoryEvents(t *testing.T) {
	h := newHub(t, 3, 8, 10)
	for v := uint64(1); v <= 5; v++ {
		h.publish(appended(1, v*10))
	}
	// Held: 30, 40, 50; everything after 20 is complete.
	_, backlog, err := h.Subscribe(1, 20, 50)
	if err != nil || !equal(versions(backlog), []uint64{30, 40, 50}) {
		t.Fatalf("from 20: %v %v", versions(backlog), err)
	}
	_, backlog, err = h.Subscribe(1, 40, 50)
	if err != nil || !equal(versions(backlog), []uint64{50}) {
		t.Fatalf("from 40: %v %v", versions(backlog), err)
	}
}

func TestResumeBeforeTheRingIsCompacted(t *testing.T) {
	h := newHub(t, 3, 8, 10)
	for v := uint64(1); v <= 5; v++ {
		h.publish(appended(1, v*10))
	}
	if _, _, err := h.Subscribe(1, 19, 50); !errors.Is(err, ErrCompacted) {
		t.Fatalf("from 19 after evicting 20: %v, want ErrCompacted", err)
	}
	// A version at or past the stream's newest change missed nothing.
	if _, backlog, err := h.Subscribe(1, 50, 50); err != nil || len(backlog) != 0 {
		t.Fatalf("from the current version: %v %v", backlog, err)
	}
}

func TestRestoreForgetsHistoryAndCutsWatchers(t *testing.T) {
	h := newHub(t, 8, 8, 10)
	h.publish(appended(1, 10))
	w, _, err := h.Subscribe(1, 10, 10)
	if err != nil {
		t.Fatal(err)
	}
	h.Restored(100)
	<-w.Done()
	if !errors.Is(w.Err(), ErrReset) {
		t.Fatalf("watcher ended with %v, want ErrReset", w.Err())
	}
	if _, _, err := h.Subscribe(1, 10, 90); !errors.Is(err, ErrCompacted) {
		t.Fatalf("from 10 after a restore at 100: %v, want ErrCompacted", err)
	}
	if _, _, err := h.Subscribe(1, 100, 90); err != nil {
		t.Fatalf("from the restore point: %v", err)
	}
	if h.Watchers() != 1 {
		t.Fatalf("%d watchers, want 1", h.Watchers())
	}
}

func TestSlowConsumerIsCutOffOthersGoOn(t *testing.T) {
	h := newHub(t, 8, 2, 10)
	slow, _, _ := h.Subscribe(1, 0, 0)
	fast, _, _ := h.Subscribe(1, 0, 0)
	var got []Event
	for v := uint64(1); v <= 4; v++ {
		h.publish(appended(1, v))
		got = append(got, drain(fast)...)
	}
	<-slow.Done()
	if !errors.Is(slow.Err(), ErrSlowConsumer) || h.Cutoffs() != 1 {
		t.Fatalf("slow watcher: %v, cutoffs %d", slow.Err(), h.Cutoffs())
	}
	if q := versions(drain(slow)); !equal(q, []uint64{1, 2}) {
		t.Fatalf("slow watcher's queue %v, want [1 2]", q)
	}
	if !equal(versions(got), []uint64{1, 2, 3, 4}) {
		t.Fatalf("fast watcher got %v", versions(got))
	}
	if h.Watchers() != 1 {
		t.Fatalf("%d watchers, want 1", h.Watchers())
	}
}

func TestEventsGoOnlyToTheChangedStreamsWatchers(t *testing.T) {
	h := newHub(t, 8, 8, 10)
	w1, _, _ := h.Subscribe(1, 0, 0)
	w2, _, _ := h.Subscribe(2, 0, 0)
	h.publish(appended(1, 5))
	h.publish(appended(1, 6))
	if got := versions(drain(w1)); !equal(got, []uint64{5, 6}) {
		t.Fatalf("stream 1 watcher got %v", got)
	}
	if got := drain(w2); len(got) != 0 {
		t.Fatalf("stream 2 watcher got %v", got)
	}
}

func TestWatcherLimitAndClose(t *testing.T) {
	h := newHub(t, 8, 8, 2)
	a, _, _ := h.Subscribe(1, 0, 0)
	if _, _, err := h.Subscribe(2, 0, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Subscribe(3, 0, 0); !errors.Is(err, ErrTooManyWatchers) {
		t.Fatalf("third watcher: %v, want ErrTooManyWatchers", err)
	}
	a.Close()
	a.Close()
	if _, _, err := h.Subscribe(3, 0, 0); err != nil {
		t.Fatalf("after a close: %v", err)
	}
}

func TestDeleteEndsTheFeed(t *testing.T) {
	h := newHub(t, 8, 8, 10)
	w, _, _ := h.Subscribe(1, 0, 0)
	h.publish(Event{Kind: Deleted, Stream: 1, Version: 9})
	if got := drain(w); len(got) != 1 || got[0].Kind != Deleted {
		t.Fatalf("got %v", got)
	}
	w.Close()
	if h.Watchers() != 0 || len(h.feeds) != 0 {
		t.Fatalf("watchers %d feeds %d after delete", h.Watchers(), len(h.feeds))
	}
}

// TestAppliedFollowsTheMachine drives a real machine and checks the hub
// sees exactly its changes.
func TestAppliedFollowsTheMachine(t *testing.T) {
	h := newHub(t, 64, 64, 10)
	m := fsm.New()
	obj := &fsmpb.ObjectRef{Key: "k", Identity: "i"}
	index := uint64(0)
	apply := func(cmd *fsmpb.Command) *fsmpb.Result {
		index++
		res := m.Apply(index, cmd)
		h.Applied(m, index, cmd, res)
		return res
	}
	apply(&fsmpb.Command{Op: &fsmpb.Command_CreateStream{CreateStream: &fsmpb.CreateStream{Name: "s"}}})
	w, _, err := h.Subscribe(1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	apply(&fsmpb.Command{Op: &fsmpb.Command_RegisterObject{RegisterObject: &fsmpb.RegisterObject{Object: obj, Size: 100}}})
	apply(&fsmpb.Command{Op: &fsmpb.Command_OpenForWrite{OpenForWrite: &fsmpb.OpenForWrite{StreamId: 1}}})
	app := &fsmpb.Command{RequestId: "r1", Op: &fsmpb.Command_CommitAppend{CommitAppend: &fsmpb.CommitAppend{
		StreamId: 1, WriterEpoch: 1, ExpectedStart: 0, End: 10, Object: obj, Bytes: &fsmpb.ByteRange{Length: 100}}}}
	if res := apply(app); res.Rejection != nil {
		t.Fatal(res.Rejection)
	}
	apply(app) // deduplicated retry
	apply(&fsmpb.Command{Op: &fsmpb.Command_CommitAppend{CommitAppend: &fsmpb.CommitAppend{
		StreamId: 1, WriterEpoch: 1, ExpectedStart: 3, End: 10, Object: obj, Bytes: &fsmpb.ByteRange{Length: 100}}}}) // refused
	apply(&fsmpb.Command{Op: &fsmpb.Command_Trim{Trim: &fsmpb.Trim{StreamId: 1, Offset: 4}}})
	apply(&fsmpb.Command{Op: &fsmpb.Command_Trim{Trim: &fsmpb.Trim{StreamId: 1, Offset: 4}}}) // no change
	apply(&fsmpb.Command{Op: &fsmpb.Command_Seal{Seal: &fsmpb.Seal{StreamId: 1}}})
	apply(&fsmpb.Command{Op: &fsmpb.Command_DeleteStream{DeleteStream: &fsmpb.DeleteStream{StreamId: 1}}})
	var kinds []Kind
	for _, ev := range drain(w) {
		kinds = append(kinds, ev.Kind)
	}
	want := []Kind{Opened, Appended, Trimmed, Sealed, Deleted}
	if len(kinds) != len(want) {
		t.Fatalf("kinds %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("kinds %v, want %v", kinds, want)
		}
	}
}
