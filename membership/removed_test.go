package membership

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// incarnationBook is what the fake servers answer as their incarnations,
// and the replicated tombstones the leader's Hooks.Tombstones reads.
type incarnationBook struct {
	mu    sync.Mutex
	incs  map[string]string
	tombs []Tombstone
}

func (b *incarnationBook) set(id, inc string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.incs[id] = inc
}

func (b *incarnationBook) tombstone(t ...Tombstone) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tombs = t
}

func (b *incarnationBook) hooks() Hooks {
	h := fakeHooks()
	h.FetchStats = func(ctx context.Context, m Member) (*ServerStats, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		return &ServerStats{LastContact: 0, LastTerm: 1, Incarnation: b.incs[m.ID]}, nil
	}
	h.Tombstones = func() []Tombstone {
		b.mu.Lock()
		defer b.mu.Unlock()
		return slices.Clone(b.tombs)
	}
	return h
}

// TestRemovedServerStaysRemoved: an operator removes d (remove-peer) while
// d is alive in gossip. Without a record of the removal the leader adds d
// back within a few rounds (the bug of issue 16: "alive in gossip, not in
// the raft configuration"); with the level-1 memory, and with a replicated
// tombstone, it never does; a new incarnation of d (a wiped data dir) is
// added.
func TestRemovedServerStaysRemoved(t *testing.T) {
	sink, log := newLogSink(t)
	ids := []string{"a", "b", "c", "d"}
	var servers []Server
	for _, id := range ids {
		servers = append(servers, Server{ID: id, Address: id + ".raft:7421", Voter: true})
	}
	leader := newFakeRaft(true, servers...)
	book := &incarnationBook{incs: map[string]string{"a": "inc-a", "b": "inc-b", "c": "inc-c", "d": "inc-d1"}}
	addrs := map[string]string{}
	for _, id := range ids {
		addrs[id] = freeAddr(t)
	}
	agents := map[string]*Agent{}
	for _, id := range ids {
		cfg := testConfig(id, addrs[id])
		cfg.Join = []string{addrs["a"]}
		r := newFakeRaft(false)
		if id == "a" {
			r = leader
		}
		ag, err := New(cfg, r, book.hooks(), log)
		if err != nil {
			t.Fatal(err)
		}
		agents[id] = ag
		t.Cleanup(func() { ag.Close() })
	}
	waitFor(t, 10*time.Second, "a sees all alive", func() error { return wantStatuses(agents["a"], ids, StatusAlive) })
	waitFor(t, 10*time.Second, "the leader learns d's incarnation", func() error {
		if inc := agents["a"].Incarnation("d"); inc != "inc-d1" {
			return fmt.Errorf("incarnation %q", inc)
		}
		return nil
	})
	added := func() error {
		if slices.Contains(leader.callLog(), "add-nonvoter:d") {
			return nil
		}
		return fmt.Errorf("calls %v", leader.callLog())
	}

	// Control: removed with no record, d comes back (what remove-peer did).
	if _, err := leader.RemoveServer(context.Background(), "d"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "d re-added without a record of its removal", added)

	// Level 1: the leader remembers the removal.
	leader.mu.Lock()
	leader.calls = nil
	leader.mu.Unlock()
	agents["a"].NoteRemoved("d", agents["a"].Incarnation("d"))
	if _, err := leader.RemoveServer(context.Background(), "d"); err != nil {
		t.Fatal(err)
	}
	holdLine := func(n int) func() error {
		return func() error {
			if got := sink.count("hold=tombstoned", "server=d"); got < n {
				return fmt.Errorf("%d hold lines", got)
			}
			return nil
		}
	}
	waitFor(t, 10*time.Second, "the leader holds d (level-1 memory)", holdLine(1))

	// Level 2: a replicated tombstone, and a new leadership that has no
	// memory of the removal.
	agents["a"].ForgetRemoved("d")
	book.tombstone(Tombstone{NodeID: "d", Incarnation: "inc-d1"})
	leader.setLeader(false)
	waitFor(t, 10*time.Second, "reconcile stopped", func() error {
		if sink.count("no longer raft leader") < 1 {
			return fmt.Errorf("still leading")
		}
		return nil
	})
	leader.setLeader(true)
	waitFor(t, 10*time.Second, "the leader holds d (tombstone)", holdLine(2))
	if err := added(); err == nil {
		t.Fatalf("a removed incarnation was re-added: %v", leader.callLog())
	}

	// d's data dir is wiped: a new incarnation, which no tombstone names.
	book.set("d", "inc-d2")
	waitFor(t, 10*time.Second, "the new incarnation of d added", added)
}
