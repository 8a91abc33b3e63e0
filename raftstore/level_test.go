package raftstore

import (
	"context"
	"errors"
	"sync"
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

// stallObserver holds raft's FSM goroutine on the first command it sees
// until released: a state machine that has not yet applied its log.
type stallObserver struct {
	once    sync.Once
	release chan struct{}
}

func (o *stallObserver) Applied(*fsm.Machine, uint64, *fsmpb.Command, *fsmpb.Result) {
	o.once.Do(func() { <-o.release })
}
func (o *stallObserver) Restored(uint64) {}

// TestRestartedLeaderRefusesNoFeatureOnAStaleLevel: a leader that has
// restarted applies its log only once its own term commits, and until then
// holds a state below the level the cluster raised long ago. A command that
// needs that level must wait for the leader's barrier, not be refused
// FEATURE_LEVEL (definite) by a level read too early. Without the wait the
// first Propose below fails with ErrFeatureLevel at once.
func TestRestartedLeaderRefusesNoFeatureOnAStaleLevel(t *testing.T) {
	c := newCluster(t, 1, nil)
	c.propose(createStream("before-the-raise")) // applied before the level, so the stall holds it back
	c.propose(setLevel(fsm.MaxLevel))
	c.stop(0)
	// The state store loses what it holds, as one whose last commits
	// never reached the disk before a crash would (there is no snapshot
	// yet): the restarted node rebuilds its state from the log, and
	// until then holds one below the raised level.
	if err := removeStateDir(c.nodes[0].cfg.DataDir); err != nil {
		t.Fatal(err)
	}
	obs := &stallObserver{release: make(chan struct{})}
	var released sync.Once
	release := func() { released.Do(func() { close(obs.release) }) }
	t.Cleanup(release) // before the cluster's Close, which waits for the FSM goroutine
	c.nodes[0].opts.observer = obs
	c.start(0)
	s := c.store(0)
	waitFor(t, "the restarted node to lead", s.IsLeader)
	if got := s.fsm.level.Load(); got == fsm.MaxLevel {
		t.Fatalf("the restarted leader's state is already at level %d; the test needs it stale", got)
	}
	lift := &fsmpb.Command{RequestId: "lift", Op: &fsmpb.Command_LiftQuarantine{LiftQuarantine: &fsmpb.LiftQuarantine{}}}
	if fsm.RequiredLevel(lift) <= fsm.BaseLevel {
		t.Fatal("LiftQuarantine no longer needs a raised level; pick another command")
	}

	// The state cannot catch up while the observer holds it, so the call
	// can only end at its deadline; what matters is how.
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := s.Propose(ctx, lift)
	cancel()
	if errors.Is(err, ErrFeatureLevel) {
		t.Fatalf("refused on the stale level: %v", err)
	}
	if !errors.Is(err, ErrTimeout) || Indeterminate(err) {
		t.Fatalf("Propose before the barrier: %v, want a definite ErrTimeout", err)
	}

	release()
	ctx, cancel = context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if _, err := s.Propose(ctx, lift); err != nil {
		t.Fatalf("Propose once the log is applied: %v", err)
	}
	if got := s.fsm.level.Load(); got != fsm.MaxLevel {
		t.Errorf("level %d after the log is applied, want %d", got, fsm.MaxLevel)
	}
}
