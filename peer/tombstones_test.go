package peer

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/raftstore"
)

// openAlone opens a one-voter Raft store on a real TCP transport and waits
// until it leads.
func openAlone(t *testing.T) *raftstore.Store {
	t.Helper()
	cfg := raftstore.DefaultConfig()
	cfg.NodeID, cfg.DataDir, cfg.BindAddr = "n1", t.TempDir(), "127.0.0.1:0"
	cfg.HeartbeatTimeout, cfg.ElectionTimeout = 200*time.Millisecond, 200*time.Millisecond
	cfg.LeaderLeaseTimeout = 100 * time.Millisecond
	s, err := raftstore.Open(cfg, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Bootstrap([]raftstore.Server{{ID: "n1", Address: s.Addr()}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, _, err := s.AwaitLeadership(ctx); err != nil {
		t.Fatalf("did not lead: %v", err)
	}
	return s
}

// nobody is a directory that knows no other node: every question to a
// peer fails at once.
type nobody struct{}

func (nobody) GRPCAddr(string) (string, bool) { return "", false }
func (nobody) Members() []*metadpb.Member     { return nil }

// memory is the leader's memory of incarnations and removals.
type memory struct {
	mu      sync.Mutex
	seen    map[string]string
	removed map[string]string
}

func (m *memory) Incarnation(id string) string { m.mu.Lock(); defer m.mu.Unlock(); return m.seen[id] }
func (m *memory) LearnIncarnation(id, inc string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seen[id] = inc
}
func (m *memory) NoteRemoved(id, inc string) { m.mu.Lock(); defer m.mu.Unlock(); m.removed[id] = inc }
func (m *memory) ForgetRemoved(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.removed[id]
	delete(m.removed, id)
	return ok
}

// aloneNode is a Node over a one-voter store that leads, knowing no other
// node (New's other collaborators are not needed here).
func aloneNode(t *testing.T, removals Removals) *Node {
	t.Helper()
	st := openAlone(t)
	c, err := NewClient(ClientConfig{Directory: nobody{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &Node{cfg: DefaultConfig(), store: st, client: c, log: slog.New(slog.DiscardHandler),
		toStatus: func(err error) error { return err }, removals: removals, ownClusterID: st.ClusterID}
}

// TestRemovalSticksAtEveryLevel: at feature level 1 a removal is only the
// leader's memory, with the incarnation it last saw of the unreachable
// server, and lifting it forgets it; once the leader has raised the level
// (every server applies it: here the one), a removal is a replicated
// tombstone on that incarnation, listed until lifted. Lifting what is not
// there says so.
func TestRemovalSticksAtEveryLevel(t *testing.T) {
	mem := &memory{seen: map[string]string{"n9": "inc-9"}, removed: map[string]string{}}
	n := aloneNode(t, mem)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var none *NoRemovalError

	if level, err := n.ClusterLevel(); err != nil || level != fsm.BaseLevel {
		t.Fatalf("new cluster at level %d (%v), want the base level %d", level, err, fsm.BaseLevel)
	}
	tombstoned, inc, err := n.TombstoneBeforeRemoval(ctx, "n9")
	if err != nil || tombstoned || inc != "inc-9" || mem.removed["n9"] != "inc-9" {
		t.Fatalf("level 1 removal: tombstoned %v, inc %q, err %v, memory %v; want remembered only, with inc-9", tombstoned, inc, err, mem.removed)
	}
	if _, err := n.Untombstone(ctx, "n9"); err != nil {
		t.Fatalf("level 1 lift: %v", err)
	}
	if _, err := n.Untombstone(ctx, "n9"); !errors.As(err, &none) {
		t.Fatalf("level 1 lift of nothing: %v, want a NoRemovalError", err)
	}

	level, err := n.RaiseFeatureLevel(ctx)
	if err != nil || level != fsm.MaxLevel {
		t.Fatalf("raise: level %d, %v; want %d", level, err, fsm.MaxLevel)
	}
	if tombstoned, inc, err = n.TombstoneBeforeRemoval(ctx, "n9"); err != nil || !tombstoned || inc != "inc-9" {
		t.Fatalf("level %d removal: tombstoned %v, inc %q, err %v; want a tombstone on inc-9", level, tombstoned, inc, err)
	}
	if ts := n.Tombstones(); len(ts) != 1 || ts[0].NodeId != "n9" || ts[0].Incarnation != "inc-9" {
		t.Fatalf("tombstones %v, want n9's", ts)
	}
	if v, err := n.Untombstone(ctx, "n9"); err != nil || v == 0 {
		t.Fatalf("lift: version %d, %v", v, err)
	}
	if ts := n.Tombstones(); len(ts) != 0 {
		t.Fatalf("tombstones after the lift: %v", ts)
	}
	if _, err := n.Untombstone(ctx, "n9"); !errors.As(err, &none) {
		t.Fatalf("lift of nothing: %v, want a NoRemovalError", err)
	}
}
