package raftstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

func setLevel(l uint32) *fsmpb.Command {
	return &fsmpb.Command{RequestId: "level", Op: &fsmpb.Command_SetFeatureLevel{SetFeatureLevel: &fsmpb.SetFeatureLevel{Level: l}}}
}

// TestUnsupportedEntryHaltsEveryReplica: a committed entry this binary
// cannot apply (here a feature level above fsm.MaxLevel, as a newer
// release would commit) stops every replica cleanly: Halted says why,
// nothing after it is applied, and no replica panics or skips it.
func TestUnsupportedEntryHaltsEveryReplica(t *testing.T) {
	c := newCluster(t, 3, nil)
	res, _ := c.propose(createStream("before"))
	before := res.Version
	l := c.leader()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := l.Propose(ctx, setLevel(fsm.MaxLevel+1))
	if err == nil {
		t.Fatal("an entry nobody can apply was acknowledged")
	}
	for i := range c.nodes {
		s := c.store(i)
		select {
		case err := <-s.Halted():
			if !errors.Is(err, fsm.ErrUnsupported) {
				t.Errorf("%s halted with %v, want fsm.ErrUnsupported", s.ID(), err)
			}
		case <-time.After(waitLimit):
			t.Fatalf("%s never halted", s.ID())
		}
		if s.AppliedIndex() < before {
			t.Errorf("%s applied %d, below %d", s.ID(), s.AppliedIndex(), before)
		}
		if got := s.fsm.level.Load(); got != fsm.BaseLevel {
			t.Errorf("%s is at level %d after halting", s.ID(), got)
		}
	}
}

// TestFeatureLevelRaisesAndPersists: SetFeatureLevel within MaxLevel is
// applied by every replica and the level survives a restart.
func TestFeatureLevelRaisesAndPersists(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.propose(setLevel(fsm.MaxLevel))
	for i := range c.nodes {
		s := c.store(i)
		waitFor(t, s.ID()+" at the raised level", func() bool { return s.fsm.level.Load() == fsm.MaxLevel })
	}
	c.restart(0)
	s := c.store(0)
	waitFor(t, "the restarted node back at the raised level", func() bool { return s.fsm.level.Load() == fsm.MaxLevel })
}
