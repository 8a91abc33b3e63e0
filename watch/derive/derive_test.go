package derive

import (
	"testing"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

func TestDeriveEveryCommandKind(t *testing.T) {
	const idx = 42
	obj := &fsmpb.ObjectRef{Key: "k", Identity: "i"}
	active := fsm.StreamInfo{ID: 7, Version: idx, CommittedEnd: 30, Trim: 10, WriterEpoch: 3, Status: fsm.StreamActive}
	sealed := active
	sealed.Status = fsm.StreamSealed
	unchanged := active
	unchanged.Version = idx - 5
	ok := &fsmpb.Result{Version: idx, StreamId: 7}
	state := func(ev Event) Event {
		ev.Version, ev.Stream, ev.CommittedEnd, ev.Trim, ev.WriterEpoch = idx, 7, 30, 10, 3
		return ev
	}
	cases := []struct {
		name  string
		cmd   *fsmpb.Command
		res   *fsmpb.Result
		after fsm.StreamInfo
		want  *Event
	}{
		{"create", &fsmpb.Command{Op: &fsmpb.Command_CreateStream{CreateStream: &fsmpb.CreateStream{Name: "s"}}}, ok, active, nil},
		{"open", &fsmpb.Command{Op: &fsmpb.Command_OpenForWrite{OpenForWrite: &fsmpb.OpenForWrite{StreamId: 7}}}, ok, active,
			&Event{Kind: Opened}},
		{"append", &fsmpb.Command{Op: &fsmpb.Command_CommitAppend{CommitAppend: &fsmpb.CommitAppend{
			StreamId: 7, WriterEpoch: 3, ExpectedStart: 20, End: 30, Object: obj, Bytes: &fsmpb.ByteRange{Offset: 5, Length: 99}}}}, ok, active,
			&Event{Kind: Appended, Range: fsm.Range{Start: 20, End: 30}, Object: fsm.ObjectRef{Key: "k", Identity: "i"}, Bytes: fsm.ByteRange{Offset: 5, Length: 99}}},
		{"append refused", &fsmpb.Command{Op: &fsmpb.Command_CommitAppend{CommitAppend: &fsmpb.CommitAppend{StreamId: 7}}},
			&fsmpb.Result{Version: idx, Rejection: &fsmpb.Rejection{Code: fsmpb.RejectCode_APPEND_NOT_AT_END}}, active, nil},
		{"append deduplicated", &fsmpb.Command{Op: &fsmpb.Command_CommitAppend{CommitAppend: &fsmpb.CommitAppend{StreamId: 7}}},
			&fsmpb.Result{Version: 40, StreamId: 7, Deduplicated: true}, active, nil},
		{"trim", &fsmpb.Command{Op: &fsmpb.Command_Trim{Trim: &fsmpb.Trim{StreamId: 7, Offset: 10}}}, ok, active, &Event{Kind: Trimmed}},
		{"trim to the trim point", &fsmpb.Command{Op: &fsmpb.Command_Trim{Trim: &fsmpb.Trim{StreamId: 7, Offset: 10}}}, ok, unchanged, nil},
		{"seal", &fsmpb.Command{Op: &fsmpb.Command_Seal{Seal: &fsmpb.Seal{StreamId: 7}}}, ok, sealed, &Event{Kind: Sealed, Sealed: true}},
		{"seal sealed", &fsmpb.Command{Op: &fsmpb.Command_Seal{Seal: &fsmpb.Seal{StreamId: 7}}}, ok, func() fsm.StreamInfo { s := sealed; s.Version = 1; return s }(), nil},
		{"publish complete", &fsmpb.Command{Op: &fsmpb.Command_PublishGeneration{PublishGeneration: &fsmpb.PublishGeneration{
			StreamId: 7, View: fsm.TopicCompacted, Generation: 4, Complete: true}}}, ok, unchanged,
			&Event{Kind: Published, View: fsm.TopicCompacted, Generation: 4}},
		{"publish part", &fsmpb.Command{Op: &fsmpb.Command_PublishGeneration{PublishGeneration: &fsmpb.PublishGeneration{
			StreamId: 7, View: fsm.TopicCompacted, Generation: 4}}}, ok, unchanged, nil},
		{"retire", &fsmpb.Command{Op: &fsmpb.Command_RetireGeneration{RetireGeneration: &fsmpb.RetireGeneration{
			StreamId: 7, View: fsm.Committed, Generation: 2}}}, ok, unchanged,
			&Event{Kind: Retired, View: fsm.Committed, Generation: 2}},
		{"delete", &fsmpb.Command{Op: &fsmpb.Command_DeleteStream{DeleteStream: &fsmpb.DeleteStream{StreamId: 7}}}, ok, fsm.StreamInfo{}, nil},
		{"register object", &fsmpb.Command{Op: &fsmpb.Command_RegisterObject{RegisterObject: &fsmpb.RegisterObject{Object: obj}}}, ok, fsm.StreamInfo{}, nil},
		{"pin", &fsmpb.Command{Op: &fsmpb.Command_PinObject{PinObject: &fsmpb.PinObject{Object: obj}}}, ok, fsm.StreamInfo{}, nil},
		{"repair gen0", &fsmpb.Command{Op: &fsmpb.Command_RepairGen0{RepairGen0: &fsmpb.RepairGen0{StreamId: 7}}}, ok, active, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := Derive(idx, c.cmd, c.res, c.after)
			if c.name == "delete" {
				want := Event{Kind: Deleted, Version: idx, Stream: 7}
				if !ok || got != want {
					t.Fatalf("got %+v %v, want %+v", got, ok, want)
				}
				return
			}
			if c.want == nil {
				if ok {
					t.Fatalf("got %+v, want no event", got)
				}
				return
			}
			want := state(*c.want)
			if c.after.Version != idx && c.name != "seal" { // generation events: state as given
				want.CommittedEnd, want.Trim, want.WriterEpoch = c.after.CommittedEnd, c.after.Trim, c.after.WriterEpoch
			}
			if !ok || got != want {
				t.Fatalf("got %+v %v\nwant %+v", got, ok, want)
			}
		})
	}
}

// TestDeriveObjectIsItsAppends: a stream-set object yields, per stream in
// the command's order, the event a CommitAppend of the same fields yields,
// all at the object's version; refused or deduplicated, nothing.
func TestDeriveObjectIsItsAppends(t *testing.T) {
	const idx = 42
	obj := &fsmpb.ObjectRef{Key: "set", Identity: "v1"}
	c := &fsmpb.CommitObject{Object: obj, Size: 100, Appends: []*fsmpb.ObjectAppend{
		{StreamId: 9, WriterEpoch: 2, ExpectedStart: 0, End: 4, Bytes: &fsmpb.ByteRange{Offset: 0, Length: 40}},
		{StreamId: 3, WriterEpoch: 1, ExpectedStart: 10, End: 12, Bytes: &fsmpb.ByteRange{Offset: 40, Length: 60}},
	}}
	after := map[uint64]fsm.StreamInfo{
		9: {ID: 9, Version: idx, CommittedEnd: 4, WriterEpoch: 2, Status: fsm.StreamActive},
		3: {ID: 3, Version: idx, CommittedEnd: 12, Trim: 5, WriterEpoch: 1, Status: fsm.StreamActive},
	}
	lookup := func(id uint64) (fsm.StreamInfo, bool) { s, ok := after[id]; return s, ok }
	ok := &fsmpb.Result{Version: idx}
	got := DeriveObject(idx, c, ok, lookup)
	if len(got) != len(c.Appends) {
		t.Fatalf("%d events for %d appends: %+v", len(got), len(c.Appends), got)
	}
	for i, a := range c.Appends {
		alone := &fsmpb.Command{Op: &fsmpb.Command_CommitAppend{CommitAppend: &fsmpb.CommitAppend{
			StreamId: a.StreamId, WriterEpoch: a.WriterEpoch, ExpectedStart: a.ExpectedStart, End: a.End, Object: obj, Bytes: a.Bytes,
		}}}
		want, _ := Derive(idx, alone, &fsmpb.Result{Version: idx, StreamId: a.StreamId}, after[a.StreamId])
		if got[i] != want {
			t.Errorf("event %d = %+v, want %+v", i, got[i], want)
		}
	}
	refused := &fsmpb.Result{Version: idx, Rejection: &fsmpb.Rejection{Code: fsmpb.RejectCode_STALE_EPOCH}}
	if evs := DeriveObject(idx, c, refused, lookup); len(evs) != 0 {
		t.Errorf("a refused object yields %+v", evs)
	}
	if evs := DeriveObject(idx, c, &fsmpb.Result{Version: 40, Deduplicated: true}, lookup); len(evs) != 0 {
		t.Errorf("a deduplicated object yields %+v", evs)
	}
}
