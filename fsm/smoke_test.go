package fsm

import (
	"bytes"
	"testing"

	"github.com/metad/metad/fsm/fsmpb"
)

func TestSmoke(t *testing.T) {
	m := New(WithInvariantChecks())
	idx := uint64(0)
	apply := func(c *fsmpb.Command) *fsmpb.Result {
		idx++
		c.StampUnixNano = int64(idx) * 1e9
		r := m.Apply(idx, c)
		if r.Rejection != nil {
			t.Fatalf("index %d: %v", idx, r.Rejection)
		}
		return r
	}
	r := apply(&fsmpb.Command{Op: &fsmpb.Command_CreateStream{CreateStream: &fsmpb.CreateStream{Name: "a"}}})
	sid := r.StreamId
	apply(&fsmpb.Command{Op: &fsmpb.Command_OpenForWrite{OpenForWrite: &fsmpb.OpenForWrite{StreamId: sid}}})
	obj := ObjectRef{"o1", "sha256:1"}
	apply(&fsmpb.Command{Op: &fsmpb.Command_RegisterObject{RegisterObject: &fsmpb.RegisterObject{Object: obj.PB(), Size: 100}}})
	apply(&fsmpb.Command{RequestId: "r1", Op: &fsmpb.Command_CommitAppend{CommitAppend: &fsmpb.CommitAppend{
		StreamId: sid, WriterEpoch: 1, ExpectedStart: 0, End: 10, Object: obj.PB(), Bytes: ByteRange{0, 100}.PB(), IndexGen0: true}}})
	key := IndexKey{sid, TopicCompacted, 1, 0}
	apply(&fsmpb.Command{Op: &fsmpb.Command_PublishGeneration{PublishGeneration: &fsmpb.PublishGeneration{
		StreamId: sid, View: TopicCompacted, Generation: 1, WriterEpoch: 1, Coverage: Range{0, 10}.PB(), Complete: true,
		Records: []*fsmpb.IndexRecord{NewIndexRecord(key, Range{0, 10}, []Range{{2, 3}, {5, 7}}, obj, ByteRange{0, 50})}}}})
	apply(&fsmpb.Command{Op: &fsmpb.Command_PinObject{PinObject: &fsmpb.PinObject{Object: obj.PB(), Holder: "b", TtlNanos: 1e9}}})
	apply(&fsmpb.Command{Op: &fsmpb.Command_Trim{Trim: &fsmpb.Trim{StreamId: sid, Offset: 4}}})
	var buf bytes.Buffer
	if err := m.Clone().WriteSnapshot(&buf); err != nil {
		t.Fatal(err)
	}
	m2, err := Restore(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var buf2 bytes.Buffer
	if err := m2.WriteSnapshot(&buf2); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), buf2.Bytes()) {
		t.Fatal("snapshot round trip differs")
	}
	if rec, ok := m.RecordFrom(sid, Committed, 0, 5); !ok || !rec.Verify() {
		t.Fatalf("record %v %v", rec, ok)
	}
}
