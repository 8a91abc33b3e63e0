package raftstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/fsm"
)

// TestTCPClusterThroughOpen runs the production wiring (Open: TCP transport,
// bolt log, file snapshots, logger bridge) on loopback.
func TestTCPClusterThroughOpen(t *testing.T) {
	c := &testCluster{t: t, net: &testNet{cut: map[[2]string]bool{}, peerCut: map[[2]string]bool{}}, logger: testLogger(t)}
	t.Cleanup(c.closeAll)
	dir := t.TempDir()
	var servers []Server
	for i := range 3 {
		id := fmt.Sprintf("n%d", i+1)
		node := &testNode{id: id, cfg: testConfig(id, filepath.Join(dir, id))}
		c.nodes = append(c.nodes, node)
		s, err := Open(node.cfg, &testPeers{c: c, self: id}, c.logger)
		if err != nil {
			t.Fatalf("open %s: %v", id, err)
		}
		node.store.Store(s)
		if !strings.HasPrefix(s.Addr(), "127.0.0.1:") || strings.HasSuffix(s.Addr(), ":0") {
			t.Fatalf("advertised address %q", s.Addr())
		}
		servers = append(servers, Server{ID: id, Address: s.Addr()})
	}
	if c.store(0).HasState() {
		t.Fatal("a new node claims raft state")
	}
	if err := c.store(0).Bootstrap(servers); err != nil {
		t.Fatal(err)
	}
	if !c.store(0).HasState() {
		t.Fatal("no raft state after Bootstrap")
	}
	c.propose(createStream("over-tcp"))
	for i := range 3 {
		if !c.hasStream(c.store(i), "over-tcp") {
			t.Fatalf("%s misses the write", c.nodes[i].id)
		}
	}
	// A second Open of the same data dir fails instead of hanging on the
	// bolt file lock.
	cfg := c.nodes[0].cfg
	start := time.Now()
	if s, err := Open(cfg, nil, nil); err == nil {
		s.Close()
		t.Fatal("second Open of a data dir in use succeeded")
	} else {
		t.Logf("second open refused after %v: %v", time.Since(start).Round(time.Millisecond), err)
	}
}

// TestSingleNodeCluster is metad's default deployment: one server, no
// Peers, no logger. Its reads need no confirmation from anyone.
func TestSingleNodeCluster(t *testing.T) {
	cfg := testConfig("solo", t.TempDir())
	s, err := Open(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Bootstrap([]Server{{ID: "solo", Address: s.Addr()}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Bootstrap([]Server{{ID: "solo", Address: s.Addr()}}); !errors.Is(err, ErrAlreadyBootstrapped) {
		t.Errorf("second bootstrap: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	lctx, term, err := s.AwaitLeadership(ctx)
	if err != nil || term == 0 || lctx.Err() != nil {
		t.Fatalf("AwaitLeadership: %v", err)
	}
	res, err := s.Propose(ctx, createStream("a"))
	if err != nil || res.Rejection != nil {
		t.Fatalf("propose: %v %v", res, err)
	}
	var has bool
	if err := s.Read(ctx, func(m *fsm.Machine) error { _, has = m.StreamByName("a"); return nil }); err != nil || !has {
		t.Fatalf("read: %v, saw write %v", err, has)
	}
	if s.CommitIndex() < res.Version || s.AppliedIndex() < res.Version {
		t.Errorf("commit %d applied %d below the write's %d", s.CommitIndex(), s.AppliedIndex(), res.Version)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if lctx.Err() == nil {
		t.Error("leader context survives Close")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
