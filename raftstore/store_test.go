package raftstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

func TestProposeOnLeaderAndFollower(t *testing.T) {
	c := newCluster(t, 3, nil)
	l := c.leader()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	before := time.Now().UnixNano()
	cmd := createStream("a")
	res, err := l.Propose(ctx, cmd)
	if err != nil {
		t.Fatalf("propose on leader: %v", err)
	}
	if res.Rejection != nil || res.StreamId == 0 || res.Version == 0 {
		t.Fatalf("create stream result = %v", res)
	}
	if cmd.StampUnixNano < before || cmd.StampUnixNano > time.Now().UnixNano() {
		t.Errorf("command stamped %d, want the leader's clock during Propose", cmd.StampUnixNano)
	}

	// A deterministic refusal is a Result, not an error.
	res, err = l.Propose(ctx, &fsmpb.Command{RequestId: "open-999",
		Op: &fsmpb.Command_OpenForWrite{OpenForWrite: &fsmpb.OpenForWrite{StreamId: 999}}})
	if err != nil {
		t.Fatalf("propose rejected command: %v", err)
	}
	if res.Rejection == nil || res.Rejection.Code != fsmpb.RejectCode_STREAM_NOT_FOUND {
		t.Fatalf("open unknown stream: result %v, want STREAM_NOT_FOUND rejection", res)
	}

	for i := range c.nodes {
		f := c.store(i)
		if f == l {
			continue
		}
		// A follower that has not heard from the leader yet answers "no
		// leader", not "not the leader": wait until it knows the leader.
		waitFor(t, f.ID()+" to know the leader", func() bool { id, _ := f.Leader(); return id == l.ID() })
		_, err := f.Propose(ctx, createStream("b"))
		var nl *NotLeaderError
		if !errors.As(err, &nl) || !errors.Is(err, ErrNotLeader) {
			t.Fatalf("propose on follower %s: %v, want *NotLeaderError", f.ID(), err)
		}
		if nl.LeaderID != l.ID() || nl.LeaderAddr != l.Addr() {
			t.Errorf("leader hint %+v, want %s at %s", nl, l.ID(), l.Addr())
		}
		if Indeterminate(err) || !Retryable(err) {
			t.Errorf("not-leader error must be definite and retryable: %v", err)
		}
	}
}

func TestWriteIsVisibleToReadsOnEveryNode(t *testing.T) {
	c := newCluster(t, 3, nil)
	for i := range 20 {
		name := fmt.Sprintf("s%d", i)
		c.propose(createStream(name))
		// Immediately after the acknowledgement, every node's linearizable
		// read must see the write; c.read retries only failed reads.
		for j := range c.nodes {
			if !c.hasStream(c.store(j), name) {
				t.Fatalf("write %d acknowledged, but a read on %s does not see it", i, c.nodes[j].id)
			}
		}
	}
	if s := c.leader().ReadIndexStats(); s.Rounds == 0 || s.Reads < 40 {
		t.Errorf("leader stats %+v: follower reads did not go through the leader's read index", s)
	}
	// With one follower down, the other follower and the leader still form
	// the quorum that confirms reads.
	down := (c.index(c.leader()) + 1) % 3
	c.stop(down)
	c.propose(createStream("one-down"))
	for j := range c.nodes {
		if j != down && !c.hasStream(c.store(j), "one-down") {
			t.Fatalf("with %s down, a read on %s misses the write", c.nodes[down].id, c.nodes[j].id)
		}
	}
}

// converge waits until every running node's state machine has the same
// hash at the same index, and returns it.
func (c *testCluster) converge() ([32]byte, uint64) {
	c.t.Helper()
	var sum [32]byte
	var index uint64
	waitFor(c.t, "replicas to converge", func() bool {
		first := true
		for i := range c.nodes {
			s := c.store(i)
			if s == nil {
				continue
			}
			h, idx, err := s.StateHash()
			if err != nil {
				c.t.Fatalf("state hash of %s: %v", s.ID(), err)
			}
			if first {
				sum, index, first = h, idx, false
			} else if h != sum || idx != index {
				return false
			}
		}
		return true
	})
	return sum, index
}

func TestRestartedNodeKeepsStateAndCatchesUp(t *testing.T) {
	c := newCluster(t, 3, nil)
	for i := range 5 {
		c.propose(createStream(fmt.Sprintf("early%d", i)))
	}
	f := (c.index(c.leader()) + 1) % 3
	c.stop(f)
	for i := range 5 {
		c.propose(createStream(fmt.Sprintf("late%d", i)))
	}
	c.start(f)
	s := c.store(f)
	// Its own state came back from its own disk before it heard from anyone.
	var early bool
	_ = s.ReadLocal(func(m *fsm.Machine) error { _, early = m.StreamByName("early4"); return nil })
	waitFor(t, "restarted node to replay its log", func() bool {
		_ = s.ReadLocal(func(m *fsm.Machine) error { _, early = m.StreamByName("early4"); return nil })
		return early
	})
	for i := range 5 {
		if !c.hasStream(s, fmt.Sprintf("late%d", i)) {
			t.Fatalf("restarted node misses late%d", i)
		}
	}
	c.converge()
}

func TestWholeClusterRestartKeepsAcknowledgedWrites(t *testing.T) {
	c := newCluster(t, 3, nil)
	var names []string
	for i := range 20 {
		name := fmt.Sprintf("w%d", i)
		c.propose(createStream(name))
		names = append(names, name)
	}
	c.closeAll()
	for i := range c.nodes {
		c.start(i)
	}
	c.leader()
	for i := range c.nodes {
		for _, name := range names {
			if !c.hasStream(c.store(i), name) {
				t.Fatalf("after a full restart %s misses acknowledged %s", c.nodes[i].id, name)
			}
		}
	}
	c.converge()
}

func TestSnapshotAndRestoreFromSnapshotPlusLog(t *testing.T) {
	c := newCluster(t, 3, nil)
	for i := range 10 {
		c.propose(createStream(fmt.Sprintf("a%d", i)))
	}
	c.converge()
	for i := range c.nodes {
		if err := c.store(i).raft.Snapshot().Error(); err != nil {
			t.Fatalf("snapshot on %s: %v", c.nodes[i].id, err)
		}
	}
	for i := range 10 {
		c.propose(createStream(fmt.Sprintf("b%d", i)))
	}
	want, _ := c.converge()
	f := (c.index(c.leader()) + 1) % 3
	c.restart(f)
	got, _ := c.converge()
	if got != want {
		t.Fatalf("state after restore from snapshot + log differs")
	}
	if !c.hasStream(c.store(f), "b9") || !c.hasStream(c.store(f), "a0") {
		t.Fatal("node restored from snapshot misses writes")
	}

	// SnapshotRetain (2) bounds the snapshots kept on disk.
	l := c.leader()
	for i := range 3 {
		c.propose(createStream(fmt.Sprintf("c%d", i)))
		if err := l.raft.Snapshot().Error(); err != nil {
			t.Fatalf("snapshot %d: %v", i, err)
		}
	}
	entries, err := os.ReadDir(filepath.Join(c.nodes[c.index(l)].cfg.DataDir, "snapshots"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("%d snapshots on disk, want SnapshotRetain = 2", len(entries))
	}
}

// restartBehindSnapshot stops server f, commits streams x0..x19, has
// every live store snapshot (and so compact its log, with TrailingLogs
// small) so the leader no longer holds the entries f needs, restarts f and
// returns its store: its catch-up must come by InstallSnapshot.
func (c *testCluster) restartBehindSnapshot(t *testing.T, f int) *Store {
	t.Helper()
	c.stop(f)
	for i := range 20 {
		c.propose(createStream(fmt.Sprintf("x%d", i)))
	}
	for i := range c.nodes {
		if s := c.store(i); s != nil {
			if err := s.raft.Snapshot().Error(); err != nil {
				t.Fatalf("snapshot: %v", err)
			}
		}
	}
	c.start(f)
	return c.store(f)
}

func TestLaggingFollowerCatchesUpByInstallSnapshot(t *testing.T) {
	// bolt: a WAL leader may still serve a follower below its FirstIndex
	// from the tail segment (TestWALAndBoltNodesInOneCluster covers a WAL
	// follower behind a bolt leader).
	c := newCluster(t, 3, func(_ int, cfg *Config, _ *openOptions) { cfg.TrailingLogs, cfg.LogStore = 2, LogStoreBolt })
	c.propose(createStream("first"))
	f := (c.index(c.leader()) + 1) % 3
	s := c.restartBehindSnapshot(t, f)
	if !c.hasStream(s, "x19") || !c.hasStream(s, "first") {
		t.Fatal("follower did not catch up")
	}
	snaps, err := s.snaps.List()
	if err != nil || len(snaps) == 0 {
		t.Fatalf("follower has no installed snapshot (%v): it did not catch up by InstallSnapshot", err)
	}
	c.converge()
	// Reads that wait for an index reached only through the restored
	// snapshot's header must not hang.
	c.propose(createStream("after"))
	if !c.hasStream(s, "after") {
		t.Fatal("follower misses a write after the snapshot")
	}
}

func TestStatusAndConfiguration(t *testing.T) {
	c := newCluster(t, 3, nil)
	l := c.leader()
	c.propose(createStream("a"))
	st := l.Status()
	if st.State != "Leader" || !st.Leader || !st.ReadReady || !st.Voter || st.LeaderID != l.ID() || st.NodeID != l.ID() ||
		st.Term == 0 || st.CommitIndex == 0 || st.AppliedIndex == 0 || st.LastLogIndex < st.CommitIndex {
		t.Errorf("leader status %+v", st)
	}
	servers, err := l.Configuration()
	if err != nil || len(servers) != 3 {
		t.Fatalf("configuration %v, %v", servers, err)
	}
	for _, sv := range servers {
		if sv.Suffrage != Voter || sv.Address != sv.ID {
			t.Errorf("server %+v", sv)
		}
	}
	f := c.store((c.index(l) + 1) % 3)
	// A follower learns the leader from its first AppendEntries, which
	// may not have arrived yet: wait for it, then check the whole status.
	waitFor(t, "the follower to hear from the leader", func() bool {
		fs := f.Status()
		return fs.LeaderID != "" && !fs.LastContact.IsZero()
	})
	fs := f.Status()
	if fs.State != "Follower" || fs.Leader || fs.ReadReady || fs.LeaderID != l.ID() || fs.LeaderAddr != l.Addr() || fs.LastContact.IsZero() {
		t.Errorf("follower status %+v", fs)
	}
	if err := f.Bootstrap(nil); !errors.Is(err, ErrAlreadyBootstrapped) {
		t.Errorf("bootstrap of a running node: %v, want ErrAlreadyBootstrapped", err)
	}
	if !f.HasState() {
		t.Error("HasState false on a running node")
	}
}

func TestTransferLeadership(t *testing.T) {
	c := newCluster(t, 3, nil)
	l := c.leader()
	target := c.nodes[(c.index(l)+1)%3].id
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := l.TransferLeadership(ctx, "nobody"); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("transfer to unknown id: %v", err)
	}
	if err := l.TransferLeadership(ctx, target); err != nil {
		t.Fatalf("transfer: %v", err)
	}
	if got := c.leader(); got.ID() != target {
		t.Errorf("leader after transfer is %s, want %s", got.ID(), target)
	}
	if err := l.TransferLeadership(ctx, ""); !errors.Is(err, ErrNotLeader) {
		t.Errorf("transfer from a follower: %v, want ErrNotLeader", err)
	}
}
