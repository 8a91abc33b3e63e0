package fsm

import (
	"bytes"
	"errors"
	"testing"

	"github.com/metad/metad/checksum"
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

// A record carrying a data checksum has a record checksum that replicas
// below level 3 cannot verify, so publishing one needs level 3; an append
// carrying one does not (below level 3 the field is ignored alike by every
// replica, old binaries included).
func TestDataChecksumsNeedLevel3ToPublish(t *testing.T) {
	key := IndexKey{Stream: 1, View: Committed, Generation: 1}
	obj := ObjectRef{Key: "o", Identity: "A"}
	plain := NewIndexRecord(key, Range{Start: 0, End: 1}, nil, obj, ByteRange{Length: 1})
	withData := NewIndexRecordData(key, Range{Start: 1, End: 2}, nil, obj, ByteRange{Offset: 1, Length: 1}, checksum.Of([]byte("x")))
	if l := RequiredLevel(cmdPublish(1, Committed, 1, 1, Range{Start: 0, End: 2}, true, plain)); l != BaseLevel {
		t.Errorf("publishing a record without a data checksum needs level %d", l)
	}
	if l := RequiredLevel(cmdPublish(1, Committed, 1, 1, Range{Start: 0, End: 2}, true, plain, withData)); l != 3 {
		t.Errorf("publishing a record with a data checksum needs level %d, want 3", l)
	}
	app := cmdAppend(1, 1, 0, 1, obj, ByteRange{Length: 1}, true)
	app.GetCommitAppend().DataCrc32C = checksum.Of([]byte("x")).Ptr()
	if l := RequiredLevel(app); l != BaseLevel {
		t.Errorf("an append with a data checksum needs level %d", l)
	}
}
