package fsm

import (
	"bytes"
	"errors"
	"testing"

	"github.com/metad/metad/fsm/fsmpb"
)

func cmdLevel(l uint32) *fsmpb.Command {
	return &fsmpb.Command{Op: &fsmpb.Command_SetFeatureLevel{SetFeatureLevel: &fsmpb.SetFeatureLevel{Level: l}}}
}

// TestLevelSurvivesSnapshots: the level is state: a snapshot carries it, and
// a level-1 state's snapshot is the bytes a release without levels writes
// (no feature_level field), so replicas of mixed releases hash alike.
func TestLevelSurvivesSnapshots(t *testing.T) {
	m := richMachine(t)
	base := snapshotBytes(t, m)
	before, err := Restore(bytes.NewReader(base))
	if err != nil || before.Level() != BaseLevel {
		t.Fatalf("restore level-1: level %d, %v", before.Level(), err)
	}
	m.Apply(m.AppliedIndex()+1, cmdLevel(1))
	if m.Level() != BaseLevel {
		t.Fatalf("level 1 asked, got %d", m.Level())
	}
	m.Apply(m.AppliedIndex()+1, cmdLevel(2))
	raised := snapshotBytes(t, m)
	after, err := Restore(bytes.NewReader(raised))
	if err != nil || after.Level() != 2 {
		t.Fatalf("restore level-2: level %d, %v", after.Level(), err)
	}
	if !bytes.Equal(snapshotBytes(t, after), raised) {
		t.Fatal("level-2 snapshot does not round-trip to the same bytes")
	}
	if c := m.Clone(); c.Level() != 2 {
		t.Fatalf("clone level %d", c.Level())
	}
}

// TestSnapshotAboveMaxLevelIsUnsupported: a binary never restores a state
// whose level it cannot apply; it says so instead of running the state
// under older rules.
func TestSnapshotAboveMaxLevelIsUnsupported(t *testing.T) {
	m := New()
	m.level = MaxLevel + 1
	_, err := Restore(bytes.NewReader(snapshotBytes(t, m)))
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("got %v, want ErrUnsupported", err)
	}
}

func TestRequiredLevel(t *testing.T) {
	if RequiredLevel(cmdLevel(2)) != BaseLevel || RequiredLevel(cmdCreate("a")) != BaseLevel {
		t.Fatal("RequiredLevel")
	}
	// Every operation a release knows needs at most the level it applies.
	ops := (&fsmpb.Command{}).ProtoReflect().Descriptor().Oneofs().ByName("op").Fields()
	for i := 0; i < ops.Len(); i++ {
		cmd := &fsmpb.Command{}
		fd := ops.Get(i)
		cmd.ProtoReflect().Set(fd, cmd.ProtoReflect().NewField(fd))
		if l := RequiredLevel(cmd); l < BaseLevel || l > MaxLevel {
			t.Errorf("%s needs level %d, outside [%d, %d]", fd.Name(), l, BaseLevel, MaxLevel)
		}
	}
}
