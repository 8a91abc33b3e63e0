package raftstore

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/metad/metad/fsm/fsmpb"
)

// lowDisk is a SpaceGuard an operator's ballast would flip.
type lowDisk struct{ low atomic.Bool }

var errLow = errors.New("the filesystem of data dir /d has 1 MiB free, below the reserve")

func (d *lowDisk) Refuse() error {
	if d.low.Load() {
		return errLow
	}
	return nil
}

// A node whose disk is low refuses a command that grows the state with
// ErrDiskFull naming its disk, leader or follower (a follower does not
// forward it); a command that does not grow goes on (NOT_LEADER on a
// follower, for the caller to forward); space back, growth is accepted.
func TestLowDiskRefusesGrowthOnAnyNode(t *testing.T) {
	guards := []*lowDisk{{}, {}, {}}
	c := newCluster(t, 3, func(i int, cfg *Config, _ *openOptions) { cfg.Space = guards[i] })
	leader := c.leader()
	var follower *Store
	for i := range c.nodes {
		if s := c.store(i); s != leader {
			follower = s
			guards[i].low.Store(true)
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := follower.Propose(ctx, createStream("refused")); !errors.Is(err, ErrDiskFull) || !errors.Is(err, errLow) {
		t.Fatalf("growth on a follower with a low disk: %v, want ErrDiskFull naming the disk", err)
	}
	trim := &fsmpb.Command{RequestId: "trim", Op: &fsmpb.Command_Trim{Trim: &fsmpb.Trim{StreamId: 1, Offset: 0}}}
	var nle *NotLeaderError
	if _, err := follower.Propose(ctx, trim); !errors.As(err, &nle) {
		t.Fatalf("a command that does not grow, on the low follower: %v, want NOT_LEADER to forward", err)
	}
	c.propose(createStream("through-the-leader")) // the leader's disk decides its own writes

	guards[c.index(leader)].low.Store(true)
	if _, err := leader.Propose(ctx, createStream("refused-too")); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("growth on a leader with a low disk: %v, want ErrDiskFull", err)
	}
	for _, g := range guards {
		g.low.Store(false)
	}
	c.propose(createStream("after"))
}
