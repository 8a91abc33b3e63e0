package fsm

import (
	"bytes"
	"slices"
	"testing"

	"github.com/metad/metad/fsm/fsmpb"
)

func cmdTombstone(id, inc string) *fsmpb.Command {
	return &fsmpb.Command{Op: &fsmpb.Command_AddTombstone{AddTombstone: &fsmpb.AddTombstone{NodeId: id, Incarnation: inc}}}
}

// tombstonedMachine is richMachine raised to level 2 with two tombstones.
func tombstonedMachine(t *testing.T) *Machine {
	m := richMachine(t)
	a := &applier{t: t, m: m, idx: m.AppliedIndex(), now: m.Clock()}
	a.ok(cmdLevel(2))
	a.ok(cmdTombstone("n5", "inc-5"))
	a.ok(cmdTombstone("n2", ""))
	return m
}

// TestTombstonesSurviveSnapshot: tombstones are written after the dedup
// entries, by node id, and a restore gives them back unchanged.
func TestTombstonesSurviveSnapshot(t *testing.T) {
	m := tombstonedMachine(t)
	snap := snapshotBytes(t, m)
	_, recs := snapshotRecords(t, snap)
	var ids []string
	for _, r := range recs {
		if ts := r.GetTombstone(); ts != nil {
			ids = append(ids, ts.NodeId)
		}
	}
	if !slices.Equal(ids, []string{"n2", "n5"}) {
		t.Fatalf("tombstone records %v, want [n2 n5]", ids)
	}
	if recs[len(recs)-1].GetTombstone() == nil {
		t.Fatal("tombstones are not the last phase")
	}
	back, err := Restore(bytes.NewReader(snap), WithInvariantChecks())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := back.Tombstones(), m.Tombstones(); !slices.Equal(got, want) {
		t.Fatalf("restored %+v, want %+v", got, want)
	}
	if !bytes.Equal(snapshotBytes(t, back), snap) {
		t.Fatal("the restored machine writes different bytes")
	}
	c := m.Clone()
	a := &applier{t: t, m: m, idx: m.AppliedIndex(), now: m.Clock()}
	a.ok(&fsmpb.Command{Op: &fsmpb.Command_LiftTombstone{LiftTombstone: &fsmpb.LiftTombstone{NodeId: "n5"}}})
	if len(c.Tombstones()) != 2 || len(m.Tombstones()) != 1 {
		t.Fatalf("clone not isolated: clone %v, machine %v", c.Tombstones(), m.Tombstones())
	}
}

// TestLevel1SnapshotHasNoTombstones: a level-1 state writes no record of
// the new kind, so its snapshot is what release 0.1.0 wrote.
func TestLevel1SnapshotHasNoTombstones(t *testing.T) {
	_, recs := snapshotRecords(t, snapshotBytes(t, richMachine(t)))
	for _, r := range recs {
		if r.GetTombstone() != nil {
			t.Fatalf("level-1 snapshot holds %v", r)
		}
	}
}

func TestDiffSnapshotsNamesTombstones(t *testing.T) {
	m := tombstonedMachine(t)
	before := snapshotBytes(t, m.Clone())
	a := &applier{t: t, m: m, idx: m.AppliedIndex(), now: m.Clock()}
	a.ok(cmdTombstone("n5", "inc-6"))
	a.ok(cmdTombstone("n7", "inc-7"))
	want := []string{`~ tombstone "n5"`, `+ tombstone "n7"`}
	if got := diffKeys(t, before, snapshotBytes(t, m.Clone())); !slices.Equal(got, want) {
		t.Fatalf("diff %q, want %q", got, want)
	}
}

// TestRestoreRefusesBadTombstones: out of order, or below level 2.
func TestRestoreRefusesBadTombstones(t *testing.T) {
	_, recs := snapshotRecords(t, snapshotBytes(t, tombstonedMachine(t)))
	n := len(recs)
	swapped := slices.Clone(recs)
	swapped[n-1], swapped[n-2] = swapped[n-2], swapped[n-1]
	wantCorrupt(t, "tombstones out of order", encodeSnapshot(t, 1000, swapped))
	level1 := slices.Clone(recs)
	meta := level1[0].GetMeta()
	level1[0] = &fsmpb.SnapshotRecord{Record: &fsmpb.SnapshotRecord_Meta{Meta: &fsmpb.MachineMeta{
		ClockUnixNano: meta.ClockUnixNano, NextStreamId: meta.NextStreamId, NextPinId: meta.NextPinId, FeatureLevel: 1}}}
	wantCorrupt(t, "tombstones at level 1", encodeSnapshot(t, 1000, level1))
}

func TestTombstonesNeedLevel2(t *testing.T) {
	if RequiredLevel(cmdTombstone("n1", "")) != 2 {
		t.Fatal("AddTombstone proposable below level 2")
	}
	lift := &fsmpb.Command{Op: &fsmpb.Command_LiftTombstone{LiftTombstone: &fsmpb.LiftTombstone{NodeId: "n1"}}}
	if RequiredLevel(lift) != 2 {
		t.Fatal("LiftTombstone proposable below level 2")
	}
}
