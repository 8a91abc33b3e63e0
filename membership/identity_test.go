package membership

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMetaV2CarriesClusterID: with a cluster id the metadata is version 2
// and round-trips; without one it is exactly the version-1 bytes.
func TestMetaV2CarriesClusterID(t *testing.T) {
	base := Meta{RaftAddr: "127.0.0.1:7421", GRPCAddr: "127.0.0.1:7420", Expect: 3, Bootstrapped: true}
	v1, err := EncodeMeta(base)
	if err != nil || v1[0] != MetaVersion {
		t.Fatalf("v1: %x, %v", v1, err)
	}
	withID := base
	withID.ClusterID = strings.Repeat("f", MaxClusterIDLen)
	withID.RaftAddr, withID.GRPCAddr = longAddr(), longAddr()
	v2, err := EncodeMeta(withID)
	if err != nil {
		t.Fatal(err)
	}
	if v2[0] != MetaVersionClusterID || len(v2) > metaMaxSize {
		t.Fatalf("v2: version %d, %d bytes", v2[0], len(v2))
	}
	got, err := DecodeMeta(v2)
	withID.Version = MetaVersionClusterID
	if err != nil || got != withID {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	// Version 1 with the id appended (what a 0.1.0 node would refuse) is
	// refused here too: the version byte says what follows.
	if _, err := DecodeMeta(append(bytes.Clone(v1), 4, 'a', 'b', 'c', 'd')); err == nil {
		t.Error("version 1 with trailing bytes accepted")
	}
	bad := bytes.Clone(v2)
	bad[len(bad)-1] = ' '
	if _, err := DecodeMeta(bad); err == nil {
		t.Error("cluster id with a space accepted")
	}
}

// TestGossipRefusesAnotherCluster: a node whose metadata names another
// cluster id never merges into the gossip pool nor the raft
// configuration, and both sides log both ids; a node with the same id,
// and a new node with none, join.
func TestGossipRefusesAnotherCluster(t *testing.T) {
	c := newCluster(t)
	withID := func(id string) func(*Config) { return func(cfg *Config) { cfg.ClusterID = id } }
	c.start("n1", 1, nil, withID("aaaa1111"))
	c.wantConfig(voters("n1"))
	c.start("n2", 0, c.joinAddrs("n1"), withID("bbbb2222"))
	waitFor(t, 10*time.Second, "the refusal logged", func() error {
		if c.sink.count("refusing gossip with node n2 of another cluster", "aaaa1111", "bbbb2222") == 0 {
			return fmt.Errorf("not logged")
		}
		return nil
	})
	c.start("n3", 0, c.joinAddrs("n1"), withID("aaaa1111"))
	c.start("n4", 0, c.joinAddrs("n1"), nil)
	c.leaderConfigHas("n1", "n3", "n4")
	if _, ok := c.node("n1").agent.Lookup("n2"); ok {
		t.Error("n2 of another cluster is in n1's gossip view")
	}
	for _, id := range []string{"n1", "n3"} {
		if _, ok := c.node("n2").agent.Lookup(id); ok {
			t.Errorf("n2 has %s of another cluster in its gossip view", id)
		}
	}
	if n := foreignRefusals(t, c.node("n1").agent, "gossip"); n == 0 {
		t.Error("refusal not counted")
	}
	c.kill("n2")
	c.wantConfig(voters("n1", "n3", "n4"))
}

// TestReconcileRefusesAForeignAnswer: a node that advertises no cluster id
// in gossip but answers the leader's probe with another cluster's id is
// never added; the hold names both ids.
func TestReconcileRefusesAForeignAnswer(t *testing.T) {
	c := newCluster(t)
	c.mu.Lock()
	c.probeIDs = map[string]string{"n2": "cccc3333"}
	c.mu.Unlock()
	c.start("n1", 1, nil, func(cfg *Config) { cfg.ClusterID = "aaaa1111" })
	c.wantConfig(voters("n1"))
	c.start("n2", 0, c.joinAddrs("n1"), nil)
	waitFor(t, 10*time.Second, "the hold logged", func() error {
		if c.sink.count("not adding n2", "cccc3333", "aaaa1111") == 0 {
			return fmt.Errorf("not logged")
		}
		return nil
	})
	c.start("n3", 0, c.joinAddrs("n1"), nil)
	c.leaderConfigHas("n1", "n3")
	if n := foreignRefusals(t, c.node("n1").agent, "reconcile"); n == 0 {
		t.Error("refusal not counted")
	}
	c.kill("n2")
	c.wantConfig(voters("n1", "n3"))
}

// TestGossipKeyring: nodes with the same key gossip; a node with another
// key is not merged; rotating [k1] → [k1 k3] → [k3 k1] → [k3] keeps the
// nodes together, after which a node with only k3 joins and one with only
// k1 does not.
func TestGossipKeyring(t *testing.T) {
	k1, k2, k3 := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 16), bytes.Repeat([]byte{3}, 24)
	keys := func(k ...[]byte) func(*Config) { return func(cfg *Config) { cfg.GossipKeys = k } }
	c := newCluster(t)
	c.start("n1", 2, c.joinAddrs("n2"), keys(k1))
	c.start("n2", 2, c.joinAddrs("n1"), keys(k1))
	c.wantConfig(voters("n1", "n2"))
	c.start("n3", 0, c.joinAddrs("n1"), keys(k2))
	for _, step := range [][][]byte{{k1, k3}, {k3, k1}, {k3}} {
		for _, id := range []string{"n1", "n2"} {
			if err := c.node(id).agent.SetGossipKeys(step); err != nil {
				t.Fatalf("%s: %v", id, err)
			}
		}
	}
	c.start("n4", 0, c.joinAddrs("n2"), keys(k3))
	c.start("n5", 0, c.joinAddrs("n1", "n2"), keys(k1))
	c.leaderConfigHas("n1", "n4")
	waitFor(t, 10*time.Second, "n1 and n2 see each other and n4 alive", func() error {
		for _, id := range []string{"n1", "n2"} {
			if err := wantStatuses(c.node(id).agent, []string{"n1", "n2", "n4"}, StatusAlive); err != nil {
				return fmt.Errorf("%s: %w", id, err)
			}
		}
		return nil
	})
	for _, id := range []string{"n3", "n5"} {
		if _, ok := c.node("n1").agent.Lookup(id); ok {
			t.Errorf("%s, with a key n1 does not hold, is in n1's gossip view", id)
		}
	}
	if err := c.node("n1").agent.SetGossipKeys([][]byte{{1, 2, 3}}); err == nil {
		t.Error("a 3-byte key accepted")
	}
	c.kill("n3")
	c.kill("n5")
	c.wantConfig(voters("n1", "n2", "n4"))
}

// foreignRefusals reads metad_membership_foreign_refusals_total{where}.
func foreignRefusals(t *testing.T, a *Agent, where string) float64 {
	reg := prometheus.NewRegistry()
	if err := a.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "metad_membership_foreign_refusals_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "where" && l.GetValue() == where {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// leaderConfigHas waits until node leader's raft configuration has every
// one of ids as a voter (other nodes may run outside it).
func (c *cluster) leaderConfigHas(leader string, ids ...string) {
	c.t.Helper()
	waitFor(c.t, 20*time.Second, leader+"'s configuration to hold "+strings.Join(ids, ","), func() error {
		f := c.node(leader).r.GetConfiguration()
		if err := f.Error(); err != nil {
			return err
		}
		got := describeConfig(f.Configuration())
		for _, id := range ids {
			if !strings.Contains(got, id+"=V@") {
				return fmt.Errorf("configuration %q", got)
			}
		}
		return nil
	})
}

// TestForeignCheckTable is the reconcile loop's rule for newcomers.
func TestForeignCheckTable(t *testing.T) {
	member := func(id, metaID string) Member {
		return Member{ID: id, Status: StatusAlive, Meta: Meta{RaftAddr: id + ":1", GRPCAddr: id + ":2", ClusterID: metaID}}
	}
	cases := []struct {
		name   string
		own    string
		probes map[string]string
		m      Member
		want   holdClass
	}{
		{"names another cluster in gossip", "aaaa", nil, member("x", "bbbb"), holdForeign},
		{"answers with another cluster", "aaaa", map[string]string{"x": "bbbb"}, member("x", ""), holdForeign},
		{"answers with this cluster", "aaaa", map[string]string{"x": "aaaa"}, member("x", ""), holdNone},
		{"a new server: answers with none", "aaaa", map[string]string{"x": ""}, member("x", ""), holdNone},
		{"has not answered", "aaaa", nil, member("x", ""), holdUnprobed},
		{"level 1: no id here, none there", "", nil, member("x", ""), holdNone},
		{"no id here, one there", "", map[string]string{"x": "bbbb"}, member("x", ""), holdForeign},
	}
	for _, tc := range cases {
		a := &Agent{cfg: Config{ClusterID: tc.own}, foreign: newForeignLog(), log: slog.New(slog.DiscardHandler)}
		a.loop.probes = tc.probes
		why, got := a.foreignCheck()(tc.m)
		if got != tc.want {
			t.Errorf("%s: %q (%s), want %q", tc.name, got, why, tc.want)
		}
	}
}
