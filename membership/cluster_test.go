package membership

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// checkOneBootstrapConfig: every bootstrap that happened used the same
// configuration, and at least one happened.
func checkOneBootstrapConfig(t *testing.T, c *cluster) {
	t.Helper()
	calls := c.bootstrapCalls()
	if len(calls) == 0 {
		t.Fatal("no node bootstrapped")
	}
	first := calls[0][strings.Index(calls[0], ":")+1:]
	for _, call := range calls[1:] {
		if got := call[strings.Index(call, ":")+1:]; got != first {
			t.Fatalf("two different bootstrap configurations: %q and %q", first, got)
		}
	}
}

// TestFormCluster: nodes with the same --bootstrap-expect and --join,
// started in various orders (the joined-to node last included), form
// exactly one raft cluster with one leader and every node a voter.
func TestFormCluster(t *testing.T) {
	cases := []struct {
		name  string
		ids   []string
		order []string
		join  func(c *cluster, id string) []string
	}{
		{"star, hub first", []string{"n1", "n2", "n3"}, []string{"n1", "n2", "n3"},
			func(c *cluster, id string) []string { return c.joinAddrs("n1") }},
		{"star, hub last", []string{"n1", "n2", "n3"}, []string{"n3", "n2", "n1"},
			func(c *cluster, id string) []string { return c.joinAddrs("n1") }},
		{"chain, tail first", []string{"n1", "n2", "n3"}, []string{"n3", "n1", "n2"},
			func(c *cluster, id string) []string {
				next := map[string]string{"n1": "n2", "n2": "n3", "n3": "n1"}
				return c.joinAddrs(next[id])
			}},
		{"five, everyone lists everyone", []string{"n1", "n2", "n3", "n4", "n5"}, []string{"n4", "n2", "n5", "n1", "n3"},
			func(c *cluster, id string) []string { return c.joinAddrs("n1", "n2", "n3", "n4", "n5") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t)
			for _, id := range tc.order {
				c.start(id, len(tc.ids), tc.join(c, id), nil)
				waitRounds(t, c.node(id).agent, 1) // let the order matter: it has looked before the next starts
			}
			leader := c.wantConfig(voters(tc.ids...))
			checkOneBootstrapConfig(t, c)
			waitFor(t, 10*time.Second, "every gossip view complete", func() error {
				for _, id := range tc.ids {
					if err := wantStatuses(c.node(id).agent, tc.ids, StatusAlive); err != nil {
						return fmt.Errorf("%s: %w", id, err)
					}
				}
				return nil
			})
			if m, ok := c.node(tc.ids[0]).agent.Lookup(leader); !ok || m.Meta.GRPCAddr != leader+".grpc:7420" {
				t.Errorf("Lookup(leader %s) = %+v, %v", leader, m, ok)
			}
		})
	}
}

// TestGrowShrinkRestart walks one cluster through the leader's reconcile
// duties: a late joiner becomes a non-voter then a voter; a killed node is
// removed after DeadServerTimeout; a restart with the same flags does not
// bootstrap again; a restart on a new raft address updates the address.
func TestGrowShrinkRestart(t *testing.T) {
	c := newCluster(t)
	ids := []string{"n1", "n2", "n3"}
	for _, id := range ids {
		c.start(id, 3, c.joinAddrs("n1", "n2", "n3"), nil)
	}
	c.wantConfig(voters(ids...))
	boots := len(c.bootstrapCalls())

	// A fourth node with only --join: added as a non-voter, then promoted.
	c.start("n4", 0, c.joinAddrs("n2"), func(cfg *Config) { cfg.ServerStabilizationTime = time.Second })
	c.wantConfig(voters("n1", "n2", "n3") + " n4=N@n4.raft:7421")
	c.wantConfig(voters("n1", "n2", "n3", "n4"))
	// Each decision is logged once its change commits, which may be after
	// every node already shows the new configuration.
	waitFor(t, 20*time.Second, "add and promote decisions logged", func() error {
		if c.sink.count("promoting n4 to voter") == 0 || c.sink.count("adding n4 at n4.raft:7421 as a non-voter") == 0 {
			return errors.New("not yet")
		}
		return nil
	})

	// Kill n4: dead in gossip, removed after DeadServerTimeout.
	c.kill("n4")
	c.wantConfig(voters(ids...))
	waitFor(t, 20*time.Second, "removal of n4 logged", func() error {
		if n := c.sink.count("removing n4 from raft: dead in gossip"); n != 1 {
			return fmt.Errorf("logged %d times, want once", n)
		}
		return nil
	})

	// Restart a voter with the same flags: no second bootstrap.
	victim := "n2"
	c.kill(victim)
	c.start(victim, 3, c.joinAddrs("n1", "n2", "n3"), nil)
	c.wantConfig(voters(ids...))
	waitRounds(t, c.node(victim).agent, 5) // give a wrong bootstrap the chance to happen
	if got := len(c.bootstrapCalls()); got != boots {
		t.Fatalf("bootstrap calls went from %d to %d after a restart", boots, got)
	}

	// Restart n3 on a new raft address: same server, new address.
	c.kill("n3")
	c.start("n3", 3, c.joinAddrs("n1"), func(cfg *Config) { cfg.RaftAddr = "n3-moved.raft:7421" })
	c.wantConfig(strings.Replace(voters(ids...), "n3=V@n3.raft:7421", "n3=V@n3-moved.raft:7421", 1))
	if got := len(c.bootstrapCalls()); got != boots {
		t.Fatalf("bootstrap calls went from %d to %d", boots, got)
	}
}

// TestMismatchedExpect: a node expecting a different cluster size makes
// nobody bootstrap (all log the conflict); once restarted with the right
// value, the cluster forms, which shows the first phase could have.
func TestMismatchedExpect(t *testing.T) {
	c := newCluster(t)
	join := c.joinAddrs("n1", "n2", "n3")
	c.start("n1", 3, join, nil)
	c.start("n2", 3, join, nil)
	c.start("n3", 2, join, nil)
	waitFor(t, 10*time.Second, "all see all", func() error {
		for _, id := range []string{"n1", "n2", "n3"} {
			if n := len(c.node(id).agent.Members()); n != 3 {
				return fmt.Errorf("%s sees %d", id, n)
			}
		}
		return nil
	})
	waitFor(t, 10*time.Second, "conflict logged by all", func() error {
		for _, id := range []string{"n1", "n2", "n3"} {
			if c.sink.count("level=ERROR", "node="+id, "must be started with the same --bootstrap-expect") == 0 {
				return fmt.Errorf("%s has not logged the conflict", id)
			}
		}
		return nil
	})
	for _, id := range []string{"n1", "n2", "n3"} {
		waitRounds(t, c.node(id).agent, 5) // each had five chances to bootstrap
	}
	if calls := c.bootstrapCalls(); len(calls) != 0 {
		t.Fatalf("bootstrapped despite mismatched expect: %v", calls)
	}
	c.kill("n3")
	c.start("n3", 3, join, nil)
	c.wantConfig(voters("n1", "n2", "n3"))
}
