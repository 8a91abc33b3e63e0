package raftstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

func TestProposeDefiniteFailures(t *testing.T) {
	c := newCluster(t, 3, nil)
	l := c.leader()

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := l.Propose(ctx, createStream("cancelled"))
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.Canceled) || Indeterminate(err) {
		t.Errorf("propose with a cancelled context: %v, want definite ErrTimeout", err)
	}

	// A node that knows no leader refuses definitely.
	li := c.index(l)
	f := (li + 1) % 3
	c.stop(li)
	c.stop((li + 2) % 3)
	s := c.store(f)
	waitFor(t, "the survivor to lose its leader", func() bool { id, _ := s.Leader(); return id == "" && !s.IsLeader() })
	_, err = s.Propose(context.Background(), createStream("alone"))
	if !errors.Is(err, ErrNoLeader) || Indeterminate(err) || !Retryable(err) {
		t.Errorf("propose with no leader: %v, want definite retryable ErrNoLeader", err)
	}
	if ok, _, err := sawStream(s, "x", time.Second); ok || !errors.Is(err, ErrNoLeader) {
		t.Errorf("read with no leader: ok=%v %v, want ErrNoLeader", ok, err)
	}

	// A closed store refuses definitely.
	c.stop(f)
	_, err = s.Propose(context.Background(), createStream("closed"))
	if !errors.Is(err, ErrClosed) || Indeterminate(err) {
		t.Errorf("propose on a closed store: %v, want definite ErrClosed", err)
	}
	if err := s.Read(context.Background(), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("read on a closed store: %v, want ErrClosed", err)
	}
}

// TestProposeTimeoutIsIndeterminate shows why a timeout after enqueue must be
// reported as "may have happened": the command that timed out for its caller
// commits once the partition heals.
func TestProposeTimeoutIsIndeterminate(t *testing.T) {
	c := newCluster(t, 3, func(i int, cfg *Config, _ *openOptions) {
		if i == 0 {
			*cfg = slowConfig(*cfg)
		}
	})
	old := c.makeStickyLeader(0)
	c.net.isolate("n1", []string{"n2", "n3"}, false)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := old.Propose(ctx, createStream("maybe"))
	if !Indeterminate(err) || !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("propose timing out while waiting for commit: %v, want indeterminate ErrTimeout", err)
	}
	// The followers (still on 30 s timeouts) never elected anyone else, so
	// when the partition heals n1 replicates the entry and it commits.
	c.net.heal()
	waitFor(t, "the timed-out command to take effect", func() bool { return c.hasStream(old, "maybe") })
}

func TestProposeLeadershipLostAndOverload(t *testing.T) {
	c := newCluster(t, 3, func(_ int, cfg *Config, _ *openOptions) { cfg.MaxPendingProposals = 1 })
	l := c.leader()
	li := c.index(l)
	c.net.isolate(l.ID(), c.others(li), false)
	errs := make(chan error, 1)
	go func() {
		_, err := l.Propose(context.Background(), createStream("lost"))
		errs <- err
	}()
	waitFor(t, "the first proposal to be pending", func() bool { return len(l.proposals) == 1 })
	if _, err := l.Propose(context.Background(), createStream("second")); !errors.Is(err, ErrOverloaded) || Indeterminate(err) {
		t.Errorf("propose beyond MaxPendingProposals: %v, want definite ErrOverloaded", err)
	}
	// The cut-off leader steps down after LeaderLeaseTimeout; its
	// uncommitted entry is left to the next leader.
	err := <-errs
	if !errors.Is(err, ErrLeadershipLost) || !Indeterminate(err) || !Retryable(err) {
		t.Errorf("propose on a leader that lost leadership: %v, want indeterminate ErrLeadershipLost", err)
	}
}

func TestCloseWhileProposing(t *testing.T) {
	c := newCluster(t, 3, func(i int, cfg *Config, _ *openOptions) {
		if i == 0 {
			*cfg = slowConfig(*cfg)
			cfg.ApplyTimeout = 200 * time.Millisecond // Close waits this long for raft to resolve it
		}
	})
	old := c.makeStickyLeader(0)
	c.net.isolate("n1", []string{"n2", "n3"}, false)
	errs := make(chan error, 1)
	go func() {
		_, err := old.Propose(context.Background(), createStream("closing"))
		errs <- err
	}()
	waitFor(t, "the proposal to be pending", func() bool { return len(old.proposals) == 1 })
	c.stop(0)
	err := <-errs
	if !Indeterminate(err) || !(errors.Is(err, ErrClosed) || errors.Is(err, ErrLeadershipLost)) {
		t.Errorf("propose interrupted by Close: %v, want indeterminate ErrClosed or ErrLeadershipLost", err)
	}
}

func TestClassifyApplyError(t *testing.T) {
	c := newCluster(t, 3, nil)
	l := c.leader()
	f := c.store((c.index(l) + 1) % 3)
	// ErrNotLeader carries the leader the follower knows, which it learns
	// from its first AppendEntries: wait for it (it may not have arrived
	// under load, and the error is then ErrNoLeader, rightly).
	waitFor(t, "the follower to hear from the leader", func() bool { return f.Status().LeaderID == l.ID() })
	for _, tc := range []struct {
		raftErr       error
		want          error
		indeterminate bool
	}{
		{raft.ErrNotLeader, ErrNotLeader, false},
		{raft.ErrLeadershipTransferInProgress, ErrNoLeader, false},
		{raft.ErrEnqueueTimeout, ErrTimeout, false},
		{raft.ErrLeadershipLost, ErrLeadershipLost, true},
		{raft.ErrRaftShutdown, ErrClosed, true},
		{raft.ErrAbortedByRestore, raft.ErrAbortedByRestore, true},
	} {
		got := f.classifyApplyError(tc.raftErr)
		if !errors.Is(got, tc.want) || Indeterminate(got) != tc.indeterminate {
			t.Errorf("%v -> %v (indeterminate %v), want %v (indeterminate %v)",
				tc.raftErr, got, Indeterminate(got), tc.want, tc.indeterminate)
		}
	}
	var nl *NotLeaderError
	if !errors.As(f.classifyApplyError(raft.ErrNotLeader), &nl) || nl.LeaderID != l.ID() {
		t.Errorf("ErrNotLeader on a follower lost the leader hint")
	}
}

// TestProposeEncoded: a command encoded elsewhere (a follower's forward)
// is stamped with the leader's clock as it is and applied; bytes that do
// not decode are refused before raft, definite; a follower says NOT_LEADER.
func TestProposeEncoded(t *testing.T) {
	c := newCluster(t, 3, nil)
	l := c.leader()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := createStream("fwd")
	cmd.StampUnixNano = 1 // a follower's stale stamp, overridden by the leader's
	data, err := proto.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now().UnixNano()
	res, err := l.ProposeEncoded(ctx, data)
	if err != nil || res.Rejection != nil || res.StreamId == 0 {
		t.Fatalf("propose encoded: %v, %v", res, err)
	}
	var clock int64
	c.read(l, func(m *fsm.Machine) error { clock = m.Clock(); return nil })
	if clock < before || clock > time.Now().UnixNano() {
		t.Errorf("machine clock %d after the command, want the leader's stamp during the call (>= %d)", clock, before)
	}
	if !c.hasStream(l, "fwd") {
		t.Error("stream not created")
	}

	if _, err := l.ProposeEncoded(ctx, []byte{0xff, 0xff}); !errors.Is(err, ErrBadCommand) || Indeterminate(err) || Retryable(err) {
		t.Errorf("undecodable bytes: %v, want definite ErrBadCommand", err)
	}
	noOp, _ := proto.Marshal(&fsmpb.Command{RequestId: "no-op"})
	if _, err := l.ProposeEncoded(ctx, noOp); !errors.Is(err, ErrBadCommand) {
		t.Errorf("a command without an operation: %v, want ErrBadCommand", err)
	}
	f := c.store((c.index(l) + 1) % 3)
	waitFor(t, "the follower to hear from the leader", func() bool { return f.Status().LeaderID == l.ID() })
	var nle *NotLeaderError
	if _, err := f.ProposeEncoded(ctx, data); !errors.As(err, &nle) || nle.LeaderID != l.ID() {
		t.Errorf("on a follower: %v, want NotLeaderError naming %s", err, l.ID())
	}
}
