package raftstore

import (
	"testing"

	"github.com/metad/metad/fsm/fsmpb"
)

// TestEveryRecordTypeIsNamed: every kind of snapshot record (tombstones
// too) is counted under its own name by snapshot inspect and data inspect,
// never as "unknown".
func TestEveryRecordTypeIsNamed(t *testing.T) {
	fields := recordOneof.Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		rec := &fsmpb.SnapshotRecord{}
		m := rec.ProtoReflect()
		m.Set(f, m.NewField(f))
		if got := recordType(rec); got != string(f.Name()) {
			t.Errorf("a %s record is named %q", f.Name(), got)
		}
	}
	if got := recordType(&fsmpb.SnapshotRecord{}); got != "unknown" {
		t.Errorf("a record of no type is named %q", got)
	}
}
