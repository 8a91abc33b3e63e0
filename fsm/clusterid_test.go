package fsm

import (
	"bytes"
	"slices"
	"testing"

	"github.com/metad/metad/fsm/fsmpb"
)

func cmdClusterID(id string) *fsmpb.Command {
	return &fsmpb.Command{Op: &fsmpb.Command_SetClusterId{SetClusterId: &fsmpb.SetClusterID{ClusterId: id}}}
}

// TestClusterIDIsSetOnce: below level 2 it is refused; at level 2 the
// first id sticks, the same id again is a no-op, another is refused.
func TestClusterIDIsSetOnce(t *testing.T) {
	m := richMachine(t)
	a := &applier{t: t, m: m, idx: m.AppliedIndex(), now: m.Clock()}
	a.refused(cmdClusterID("aaaa"), fsmpb.RejectCode_INVALID_ARGUMENT)
	if m.ClusterID() != "" {
		t.Fatalf("cluster id %q set at level 1", m.ClusterID())
	}
	a.ok(cmdLevel(2))
	a.ok(cmdClusterID("aaaa"))
	a.ok(cmdClusterID("aaaa"))
	a.refused(cmdClusterID("bbbb"), fsmpb.RejectCode_CONDITION_FAILED)
	if m.ClusterID() != "aaaa" {
		t.Fatalf("cluster id %q, want aaaa", m.ClusterID())
	}
	if RequiredLevel(cmdClusterID("x")) != 2 {
		t.Fatal("SetClusterID proposable below level 2")
	}
}

func TestValidateClusterID(t *testing.T) {
	for _, id := range []string{"", "has space", "tab\t", string(make([]byte, MaxClusterIDLen+1))} {
		if err := Validate(cmdClusterID(id)); err == nil {
			t.Errorf("Validate accepted cluster id %q", id)
		}
	}
	if err := Validate(cmdClusterID("0123456789abcdef0123456789abcdef")); err != nil {
		t.Errorf("Validate refused a 128-bit hex id: %v", err)
	}
}

// TestClusterIDSurvivesSnapshot: written in the meta record, restored, and
// a level-1 state's meta record (no id) is unchanged.
func TestClusterIDSurvivesSnapshot(t *testing.T) {
	level1 := snapshotBytes(t, richMachine(t))
	_, recs := snapshotRecords(t, level1)
	if recs[0].GetMeta().ClusterId != "" {
		t.Fatal("level-1 snapshot carries a cluster id")
	}
	m := richMachine(t)
	a := &applier{t: t, m: m, idx: m.AppliedIndex(), now: m.Clock()}
	a.ok(cmdLevel(2))
	a.ok(cmdClusterID("c1d2"))
	snap := snapshotBytes(t, m)
	back, err := Restore(bytes.NewReader(snap), WithInvariantChecks())
	if err != nil {
		t.Fatal(err)
	}
	if back.ClusterID() != "c1d2" {
		t.Fatalf("restored cluster id %q", back.ClusterID())
	}
	if !bytes.Equal(snapshotBytes(t, back), snap) {
		t.Fatal("the restored machine writes different bytes")
	}
	// A level-1 meta record naming an id is corrupt.
	_, recs = snapshotRecords(t, snap)
	bad := slices.Clone(recs)
	meta := bad[0].GetMeta()
	bad[0] = &fsmpb.SnapshotRecord{Record: &fsmpb.SnapshotRecord_Meta{Meta: &fsmpb.MachineMeta{
		ClockUnixNano: meta.ClockUnixNano, NextStreamId: meta.NextStreamId, NextPinId: meta.NextPinId,
		FeatureLevel: 1, ClusterId: "c1d2"}}}
	wantCorrupt(t, "cluster id at level 1", encodeSnapshot(t, 1000, bad))
}

// TestForgetIdentity: the id and every tombstone go, the rest stays, and
// the result is a valid state that takes a new id.
func TestForgetIdentity(t *testing.T) {
	m := richMachine(t)
	a := &applier{t: t, m: m, idx: m.AppliedIndex(), now: m.Clock()}
	a.ok(cmdLevel(2))
	a.ok(cmdClusterID("c1d2"))
	a.ok(&fsmpb.Command{Op: &fsmpb.Command_AddTombstone{AddTombstone: &fsmpb.AddTombstone{NodeId: "n9"}}})
	streams, applied := len(m.sortedStreamIDs()), m.AppliedIndex()
	m.ForgetIdentity()
	if m.ClusterID() != "" || len(m.Tombstones()) != 0 {
		t.Fatalf("after ForgetIdentity: cluster id %q, tombstones %v", m.ClusterID(), m.Tombstones())
	}
	if len(m.sortedStreamIDs()) != streams || m.AppliedIndex() != applied {
		t.Fatalf("ForgetIdentity changed the rest: %d streams at %d, want %d at %d", len(m.sortedStreamIDs()), m.AppliedIndex(), streams, applied)
	}
	if err := m.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
	a.ok(cmdClusterID("e5f6"))
	if m.ClusterID() != "e5f6" {
		t.Fatalf("new id %q", m.ClusterID())
	}
}
