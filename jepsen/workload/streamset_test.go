package workload

import (
	"testing"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/jepsen/history"
)

// TestProjection: each append of a recorded CommitObject becomes its
// stream's append op: acknowledged at the object's version, refused with
// its own reason, failed when the object was refused for another append
// (nothing of a refused object is applied), indeterminate with the object.
func TestProjection(t *testing.T) {
	obj := history.Object{Key: "jepsen/set/w300-1", Identity: "sha256:x"}
	apps := []history.ObjectAppend{
		{Stream: 1, Epoch: 1, ExpectedStart: 0, End: 2, Bytes: history.Bytes{Offset: 0, Length: 10}},
		{Stream: 2, Epoch: 1, ExpectedStart: 5, End: 6, Bytes: history.Bytes{Offset: 10, Length: 5}},
	}
	base := history.Op{Kind: history.KindObject, Client: 300, Call: 1, Return: 2,
		In: history.Input{RequestID: "r", Object: &obj, Size: 15, Appends: apps}}
	type want struct {
		status       history.Status
		reason       string
		end, version uint64
	}
	cases := []struct {
		name   string
		status history.Status
		out    setOutcome
		want   []want
	}{
		{"acknowledged", history.OK, setOutcome{op: 7, ends: []uint64{2, 6}},
			[]want{{history.OK, "", 2, 9}, {history.OK, "", 6, 9}}},
		{"second refused", history.Rejected, setOutcome{op: 7, refused: map[int]*metadpb.AppendRefusal{
			1: {Index: 1, StreamId: 2, Reason: "APPEND_NOT_AT_END", CommittedEnd: 4}}},
			[]want{{history.Fail, "", 0, 0}, {history.Rejected, "APPEND_NOT_AT_END", 0, 0}}},
		{"indeterminate", history.Info, setOutcome{op: 7},
			[]want{{history.Info, "", 0, 0}, {history.Info, "", 0, 0}}},
	}
	for _, c := range cases {
		op := base
		op.Status = c.status
		if c.status == history.OK {
			op.Out = &history.Output{Version: 9}
		}
		for i, a := range apps {
			p := projection(op, c.out, i, a, true)
			w := c.want[i]
			if p.Kind != history.KindAppend || p.Stream != a.Stream || p.In.Set != 7 || p.In.ExpectedStart != a.ExpectedStart ||
				p.In.End != a.End || *p.In.Object != obj || *p.In.Bytes != a.Bytes || p.Call != 1 || p.Return != 2 {
				t.Errorf("%s: append %d projected as %+v", c.name, i, p)
			}
			if p.Status != w.status || p.Reason != w.reason {
				t.Errorf("%s: append %d is %s %q, want %s %q", c.name, i, p.Status, p.Reason, w.status, w.reason)
			}
			if w.status == history.OK && (p.Out == nil || p.Out.CommittedEnd != w.end || p.Out.Version != w.version) {
				t.Errorf("%s: append %d answered %+v, want end %d at version %d", c.name, i, p.Out, w.end, w.version)
			}
		}
	}
}
