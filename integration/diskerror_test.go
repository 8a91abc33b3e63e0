package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/internal/faultfs"
	"github.com/metad/metad/internal/proc"
)

// mountFaultFS mounts a fault filesystem over a new backing dir and
// returns it and its mountpoint. Call it before proc.New: its unmount,
// registered first, runs after the servers have stopped.
func mountFaultFS(t *testing.T) (*faultfs.FS, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a FUSE filesystem for the data dir needs root (CI runs as root)")
	}
	backing, mnt := t.TempDir(), t.TempDir()
	f, err := faultfs.Mount(backing, mnt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return f, mnt
}

// onFaultFS starts a one-node cluster whose data dir is on a fault
// filesystem, run by bin ("" the normal binary) with env.
func onFaultFS(t *testing.T, bin string, env ...string) (*proc.Cluster, *faultfs.FS, string) {
	f, mnt := mountFaultFS(t)
	c := proc.New(t, 1)
	nd := c.Nodes[0]
	nd.SetDataDir(filepath.Join(mnt, "n1"))
	nd.Bin, nd.Env = bin, env
	c.StartAll()
	c.WaitLeader(0)
	return c, f, nd.DataDir
}

// failedFsync runs the scenario of a raft log fsync that fails once (the
// fault filesystem drops the unsynced entry, as Linux does) and returns
// every violation of what must hold: the node stops at once, naming the
// segment file; restarted, it holds every acknowledged append and takes
// new ones.
func failedFsync(t *testing.T, bin string, env ...string) []string {
	c, f, dataDir := onFaultFS(t, bin, env...)
	w := proc.NewWriter(t, c.Client(0), "fsync")
	w.MustAppend(t, 10)
	acked := w.End

	f.Fail(faultfs.Fsync, ".wal")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err := w.Append(ctx, 5)
	cancel()
	if err == nil {
		return []string{"an append whose fsync failed was acknowledged"}
	}
	t.Logf("append with the fault: %v", err)
	var violations []string
	code, exited := c.WaitExit(0, 30*time.Second)
	f.Heal()
	switch {
	case !exited:
		violations = append(violations, "the node kept running after its raft log's fsync failed")
		// Write on, as the node does: the next appends land after what
		// the failed fsync dropped.
		w.Forget()
		w.MustAppend(t, 10)
		acked = w.End
		c.Kill(0)
	case code == 0:
		violations = append(violations, "the node exited 0 after a failed fsync")
	}
	log := c.Log(0)
	if exited && (!strings.Contains(log, "writing the raft log failed at "+filepath.Join(dataDir, "raft", "wal")) || !strings.Contains(log, "input/output error")) {
		violations = append(violations, fmt.Sprintf("the log does not name the segment file and the error:\n%s", tail(log, 20)))
	}
	if f.Injected(faultfs.Fsync) == 0 {
		t.Fatal("no fsync failed: the fault never bit")
	}

	c.Start(0)
	c.WaitLeader(0)
	s, err := c.Describe(0, w.Stream)
	switch {
	case err != nil:
		t.Fatalf("describe after the restart: %v", err)
	case s.CommittedEnd < acked:
		violations = append(violations, fmt.Sprintf("acknowledged appends lost: committed end %d after the restart, %d acknowledged", s.CommittedEnd, acked))
	}
	if s.CommittedEnd > acked {
		// The append whose fsync failed reached the disk anyway: it was
		// in doubt, never acknowledged, and now it is committed.
		w.Forget()
		w.End = s.CommittedEnd
	}
	if err := w.Append(ctxT(t, 30*time.Second), 3); err != nil {
		violations = append(violations, fmt.Sprintf("append after the restart: %v", err))
	}
	return violations
}

// TestFailedFsyncStopsTheNode: an fsync of the raft log that fails with
// EIO stops the server (exit status 1, the segment file named), and it
// restarts from its last durable state with every acknowledged append.
func TestFailedFsyncStopsTheNode(t *testing.T) {
	if v := failedFsync(t, ""); len(v) > 0 {
		t.Fatalf("after a failed fsync:\n%s", strings.Join(v, "\n"))
	}
}

// TestPlantedRetriedFsyncIsCaught: the planted bug retry-fsync hands the
// failure back to raft, which writes on; the scenario must see it.
func TestPlantedRetriedFsyncIsCaught(t *testing.T) {
	v := failedFsync(t, proc.FaultsBinary(t), "METAD_FAULTS=retry-fsync")
	if len(v) == 0 {
		t.Fatal("the planted bug retry-fsync went unnoticed")
	}
	t.Logf("retry-fsync caught:\n%s", strings.Join(v, "\n"))
}

// TestFollowerFailedFsyncLosesNoAcknowledgedWrite: in three nodes, a
// follower whose log fsync fails stops; the other two go on committing,
// and once restarted the follower holds every acknowledged append (read
// from its own state, STALE).
func TestFollowerFailedFsyncLosesNoAcknowledgedWrite(t *testing.T) {
	f, mnt := mountFaultFS(t)
	c := proc.New(t, 3)
	const victim = 2
	nd := c.Nodes[victim]
	nd.SetDataDir(filepath.Join(mnt, nd.ID))
	c.StartAll()
	c.WaitFormed(3)
	leadElsewhere(t, c, victim)
	w := proc.NewWriter(t, c.Client(0, 1), "follower-fsync")
	w.MustAppend(t, 10)

	f.Fail(faultfs.Fsync, ".wal")
	for f.Injected(faultfs.Fsync) == 0 {
		w.MustAppend(t, 1) // acknowledged by the two healthy nodes
	}
	code, exited := c.WaitExit(victim, 30*time.Second)
	if !exited || code == 0 {
		t.Fatalf("the follower whose fsync failed: exited %v, code %d; want it stopped, non-zero", exited, code)
	}
	if log := c.Log(victim); !strings.Contains(log, "writing the raft log failed at "+filepath.Join(nd.DataDir, "raft", "wal")) {
		t.Fatalf("the follower's log does not name its segment file:\n%s", tail(log, 20))
	}
	w.MustAppend(t, 10) // the other two still commit
	acked := w.End

	f.Heal()
	c.Start(victim)
	c.WaitFor("the restarted follower holds every acknowledged append", 30*time.Second, func() bool {
		cl := c.Client(victim)
		resp, err := client.Call(ctxT(t, 5*time.Second), cl, cl.Metad.DescribeStream,
			&metadpb.DescribeStreamRequest{StreamId: w.Stream, Consistency: metadpb.Consistency_STALE})
		return err == nil && resp.Stream.CommittedEnd >= acked
	})
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
