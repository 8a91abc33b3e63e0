package ops

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/internal/proc"
)

// TestRollingRestartUnderWrites: every server of a 3-node cluster is
// stopped with SIGTERM and restarted in turn, the leader included, while
// a client appends without pause. Each graceful stop hands leadership over
// if it leads and leaves the Raft configuration as it was; writes are
// acknowledged while each server is down; at the end every server holds
// every acknowledged append, with its index record, and nothing else.
func TestRollingRestartUnderWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("restarts three servers in turn")
	}
	c := proc.New(t, 3)
	c.StartAll()
	formed(t, c, 3)
	w := proc.NewWriter(t, c.Client(), "rolling")
	l := startLoad(t, w)
	l.waitAcks(c, 20)

	// Stop the followers first and the leader last, so that at least one
	// stop hands leadership over (the leader can change along the way).
	order := []int{}
	leader := c.WaitLeader(0)
	for i := range c.Nodes {
		if i != leader {
			order = append(order, i)
		}
	}
	order = append(order, leader)
	stoppedLeader := false
	for _, i := range order {
		wasLeader := c.Leader((i+1)%3) == i
		stoppedLeader = stoppedLeader || wasLeader
		before, _ := l.acked()
		c.Stop(i) // SIGTERM; waits for the process to exit
		if !strings.Contains(c.Log(i), "shutdown: done") || !strings.Contains(c.Log(i), "raftstore: closed") {
			t.Fatalf("%s did not shut down cleanly", c.Nodes[i].ID)
		}
		if wasLeader && !strings.Contains(c.Log(i), "shutdown: leadership transferred") {
			t.Errorf("%s led but did not hand leadership over", c.Nodes[i].ID)
		}
		l.waitAcks(c, 5) // available with one server down
		during, _ := l.acked()
		c.Start(i)
		formed(t, c, 3) // back as a voter: the stop did not remove it
		caughtUp(t, c, i, 10)
		t.Logf("%s (leader %v) restarted; %d appends acknowledged while it was down", c.Nodes[i].ID, wasLeader, during-before)
	}
	if !stoppedLeader {
		t.Error("no stop hit the leader")
	}
	acks := finishAndCheckAcks(t, c, l, w)
	t.Logf("%d appends acknowledged, all present on every server", acks)
}

// caughtUp waits until server i has applied what the leader committed,
// but for slack entries.
func caughtUp(t *testing.T, c *proc.Cluster, i int, slack uint64) {
	t.Helper()
	c.WaitFor(fmt.Sprintf("%s caught up", c.Nodes[i].ID), 30*time.Second, func() bool {
		st, err := c.Status(i)
		if err != nil {
			return false
		}
		var commit, applied uint64
		for _, n := range st.Nodes {
			if n.NodeId == st.LeaderId {
				commit = n.CommitIndex
			}
			if n.NodeId == c.Nodes[i].ID {
				applied = n.AppliedIndex
			}
		}
		return commit > 0 && applied+slack >= commit
	})
}
