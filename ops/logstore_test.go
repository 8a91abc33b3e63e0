package ops

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/metad/metad/internal/proc"
)

// TestKill9KeepsAcknowledgedWritesPerLogStore runs, for each raft log
// store, a 3-node cluster under a steady append load through three crashes
// (SIGKILL): the leader, then a follower, then all three servers at once,
// each restarted on its own data dir. Only the last puts every copy of an
// acknowledged append on a crashed server's disk. At the end every server
// holds every acknowledged append, exactly once and in order, with its
// index record (finishAndCheckAcks). A kill -9 loses the process, not the
// page cache: this proves the log store's recovery of what it wrote, and
// raft's rule that a write is acknowledged only once it is in a quorum's
// logs, not fsync against power loss.
func TestKill9KeepsAcknowledgedWritesPerLogStore(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts servers under load, twice")
	}
	for _, store := range []string{"bolt", "wal"} {
		t.Run(store, func(t *testing.T) {
			c := proc.New(t, 3, "--raft-log-store", store)
			c.StartAll()
			formed(t, c, 3)
			w := proc.NewWriter(t, c.Client(), "crash-"+store)
			l := startLoad(t, w)
			l.waitAcks(c, 50)

			leader := c.WaitLeader(0)
			c.Kill(leader)
			l.waitAcks(c, 50) // a new leader takes the writes
			c.Start(leader)
			formed(t, c, 3)
			caughtUp(t, c, leader, 10)

			follower := (c.Leader(0) + 1) % 3
			c.Kill(follower)
			l.waitAcks(c, 50)
			c.Start(follower)
			formed(t, c, 3)
			caughtUp(t, c, follower, 10)

			before, _ := l.acked()
			c.KillAll()
			c.StartAll(2, 0, 1)
			formed(t, c, 3)
			l.waitAcks(c, 50)
			acks := finishAndCheckAcks(t, c, l, w)
			t.Logf("%s: %d appends acknowledged (%d before the whole cluster was killed), all on every server after 3 crashes",
				store, acks, before)

			for i, nd := range c.Nodes {
				if !strings.Contains(c.Log(i), "raft_log_store="+store) {
					t.Errorf("%s: no start-up line names log store %s", nd.ID, store)
				}
				segments, _ := filepath.Glob(filepath.Join(nd.DataDir, "raft", "wal", "*.wal"))
				if (len(segments) > 0) != (store == "wal") {
					t.Errorf("%s on %s: wal segments %v", nd.ID, store, segments)
				}
			}
		})
	}
}
