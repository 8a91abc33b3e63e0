package integration

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/internal/proc"
)

// The state machine's state is on disk (the state store), its raft
// snapshots are points in it, and a follower that needs the whole state
// gets it streamed and builds it beside its live store. These tests kill
// -9 a node at the crash points of those paths (raftstore's crashPoint,
// in the fault-injection build) and check that it opens cleanly, loses no
// acknowledged append and agrees with the others.

// holdsOn reports whether node i serves stream up to end (a stale read of
// its own state).
func holdsOn(t *testing.T, c *proc.Cluster, i int, stream, end uint64) bool {
	cl := c.Client(i)
	r, err := client.Call(ctxT(t, 5*time.Second), cl, cl.Metad.DescribeStream,
		&metadpb.DescribeStreamRequest{StreamId: stream, Consistency: metadpb.Consistency_STALE})
	return err == nil && r.Stream.CommittedEnd >= end
}

// sameStateEverywhere waits until every node reports its state hash at one
// applied index, and fails if the hashes differ there.
func sameStateEverywhere(t *testing.T, c *proc.Cluster) {
	t.Helper()
	var last string
	c.WaitFor("every node's state hash at one index", time.Minute, func() bool {
		cl := c.Client(0)
		st, err := cl.Cluster.Status(ctxT(t, 30*time.Second), &metadpb.StatusRequest{WithHash: true})
		if err != nil || len(st.Nodes) != len(c.Nodes) {
			return false
		}
		var lines []string
		for _, n := range st.Nodes {
			lines = append(lines, fmt.Sprintf("%s at %d: %x %s", n.NodeId, n.AppliedIndex, n.StateHash, n.Error))
			if len(n.StateHash) == 0 || n.AppliedIndex != st.Nodes[0].AppliedIndex {
				return false
			}
		}
		last = strings.Join(lines, "; ")
		for _, n := range st.Nodes[1:] {
			if !bytes.Equal(n.StateHash, st.Nodes[0].StateHash) {
				t.Fatalf("state hashes differ: %s", last)
			}
		}
		return true
	})
	t.Logf("equal state everywhere: %s", last)
}

// crashAt runs node i on the fault-injection binary holding at crash
// point where (raftstore/faults_on.go).
func crashAt(t *testing.T, c *proc.Cluster, i int, where string) {
	c.Nodes[i].Bin = proc.FaultsBinary(t)
	c.Nodes[i].Env = []string{"METAD_FAULTS=hang-" + where}
}

// healed makes node i an ordinary server again.
func healed(c *proc.Cluster, i int) {
	c.Nodes[i].Bin, c.Nodes[i].Env = "", nil
}

func reached(c *proc.Cluster, i int, where string) bool {
	return strings.Contains(c.Log(i), "crash point "+where+" reached")
}

// TestKillDuringPointSnapshot: a follower killed while it records a raft
// snapshot (its state store synced, the snapshot not yet recorded)
// restarts from its state store and the log, with every acknowledged
// append, and agrees with the others.
func TestKillDuringPointSnapshot(t *testing.T) {
	c := proc.New(t, 3, "--raft-snapshot-threshold", "32", "--raft-snapshot-interval", "200ms", "--raft-trailing-logs", "8")
	const victim = 2
	crashAt(t, c, victim, "point-persist")
	c.StartAll()
	c.WaitFormed(3)
	leadElsewhere(t, c, victim)
	w := proc.NewWriter(t, c.Client(0, 1), "point")
	c.WaitFor("the victim at its crash point", time.Minute, func() bool {
		w.MustAppend(t, 1)
		return reached(c, victim, "point-persist")
	})
	w.MustAppend(t, 3)
	c.Kill(victim)
	w.MustAppend(t, 3)
	healed(c, victim)
	c.Start(victim)
	acked := w.End
	c.WaitFor("the restarted victim holds every acknowledged append", time.Minute, func() bool {
		return holdsOn(t, c, victim, w.Stream, acked)
	})
	w.MustAppend(t, 1)
	sameStateEverywhere(t, c)
}

// TestKillDuringInstallSnapshotIngest: a follower that fell behind the
// leader's log gets the state streamed (InstallSnapshot) and is killed
// while it builds it into a new store beside its live one. Restarted, it
// opens the old store, rebuilds from the snapshot it had received (or
// gets it again), and catches up with every acknowledged append.
func TestKillDuringInstallSnapshotIngest(t *testing.T) {
	// raft.db logs: raft-wal frees only whole 64 MiB segments, and a
	// leader on it would serve the victim from its log.
	c := proc.New(t, 3, "--raft-snapshot-threshold", "32", "--raft-snapshot-interval", "200ms", "--raft-trailing-logs", "8",
		"--raft-log-store", "bolt")
	const victim = 2
	c.StartAll()
	c.WaitFormed(3)
	leadElsewhere(t, c, victim)
	w := proc.NewWriter(t, c.Client(0, 1), "install")
	w.MustAppend(t, 5)
	c.WaitFor("the victim holds the first appends", 30*time.Second, func() bool { return holdsOn(t, c, victim, w.Stream, w.End) })
	c.Stop(victim)
	// The others go on, far past the leader's trailing log, and snapshot.
	for range 100 {
		w.MustAppend(t, 1)
	}
	crashAt(t, c, victim, "state-build")
	c.Start(victim)
	c.WaitFor("the victim building the streamed state", time.Minute, func() bool { return reached(c, victim, "state-build") })
	c.Kill(victim)
	w.MustAppend(t, 3)
	healed(c, victim)
	logBefore := len(c.Log(victim))
	c.Start(victim)
	acked := w.End
	c.WaitFor("the restarted victim holds every acknowledged append", time.Minute, func() bool {
		return holdsOn(t, c, victim, w.Stream, acked)
	})
	if restart := c.Log(victim)[logBefore:]; !strings.Contains(restart, "state store") {
		t.Logf("restart log:\n%s", tail(restart, 30))
	}
	w.MustAppend(t, 1)
	sameStateEverywhere(t, c)
}

// TestKillLeaderWhileStreamingState: the leader is killed half way through
// streaming its state to a follower that fell behind; the follower gets
// it whole from the next leader.
func TestKillLeaderWhileStreamingState(t *testing.T) {
	c := proc.New(t, 3, "--raft-snapshot-threshold", "32", "--raft-snapshot-interval", "200ms", "--raft-trailing-logs", "8",
		"--raft-log-store", "bolt")
	const follower = 2
	for i := range c.Nodes {
		if i != follower {
			crashAt(t, c, i, "state-stream")
		}
	}
	c.StartAll()
	c.WaitFormed(3)
	leadElsewhere(t, c, follower)
	w := proc.NewWriter(t, c.Client(0, 1), "stream")
	w.MustAppend(t, 5)
	c.Stop(follower)
	for range 100 {
		w.MustAppend(t, 1)
	}
	acked := w.End
	leader := c.Leader(0)
	c.Start(follower)
	c.WaitFor("the leader half way through streaming", time.Minute, func() bool { return reached(c, leader, "state-stream") })
	c.Kill(leader)
	healed(c, leader)
	// The survivor leads now; it too holds at the crash point when it
	// streams, so it runs healed from its next start: restart it healed.
	other := 1 - leader
	c.Stop(other)
	healed(c, other)
	c.Start(other)
	c.Start(leader)
	c.WaitFor("the follower holds every acknowledged append", 2*time.Minute, func() bool {
		return holdsOn(t, c, follower, w.Stream, acked)
	})
	w.MustAppend(t, 1)
	sameStateEverywhere(t, c)
}
