package ops

import (
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/internal/proc"
)

// previousRelease is the commit of the release before this one (RELEASES.md):
// the cluster this test upgrades runs it first.
const previousRelease = "3fc933d"

// TestRollingUpgradeUnderWrites (G15): a 3-node cluster of the previous
// release is upgraded to this build one server at a time, the leader last,
// while a client appends without pause. The cluster stays writable with
// every server down in turn, no acknowledged append is lost or doubled, no
// server of either release stops or panics, and the cluster's feature level
// stays at 1 — no new command kind is proposed — until the last server runs
// this build; then it is raised to this build's level.
func TestRollingUpgradeUnderWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the previous release and restarts three servers in turn")
	}
	old := proc.ReleaseBinary(t, previousRelease)
	c := proc.New(t, 3)
	upgraded := make([][]string, len(c.Nodes)) // this release's flags, peer secret included
	for i, nd := range c.Nodes {
		upgraded[i] = nd.Args
	}
	c.WithoutPeerSecret() // the previous release has no such flag
	for _, nd := range c.Nodes {
		nd.Bin = old
	}
	c.StartAll()
	formed(t, c, 3)
	w := proc.NewWriter(t, c.Client(), "upgrade")
	l := startLoad(t, w)
	l.waitAcks(c, 20)

	order := []int{}
	leader := c.WaitLeader(0)
	for i := range c.Nodes {
		if i != leader {
			order = append(order, i)
		}
	}
	order = append(order, leader)
	for k, i := range order {
		c.Stop(i)
		l.waitAcks(c, 5) // writable with one server down
		c.Nodes[i].Bin, c.Nodes[i].Args = "", upgraded[i]
		c.Start(i)
		formed(t, c, 3)
		caughtUp(t, c, i, 10)
		l.waitAcks(c, 5)
		if k < len(order)-1 {
			// A server of the previous release remains: the level stays.
			if lvl := clusterLevel(t, c, i); lvl != fsm.BaseLevel {
				t.Fatalf("with %d server(s) still on %s the cluster is at level %d", len(order)-1-k, previousRelease, lvl)
			}
			if st, err := c.Status(i); err == nil && st.ClusterId != "" {
				t.Fatalf("with %d server(s) still on %s the cluster has an id (%s)", len(order)-1-k, previousRelease, st.ClusterId)
			}
		}
		for j := range c.Nodes {
			if !c.Running(j) {
				t.Fatalf("%s stopped during the upgrade:\n%s", c.Nodes[j].ID, c.Log(j))
			}
		}
		t.Logf("%s upgraded", c.Nodes[i].ID)
	}
	c.WaitFor("the feature level raised on every server", 30*time.Second, func() bool {
		for i := range c.Nodes {
			if clusterLevel(t, c, i) != fsm.MaxLevel {
				return false
			}
		}
		return true
	})
	// At level 2 the leader gives the cluster its id (README: Cluster
	// identity), while the writes go on; every server then reports it.
	c.WaitFor("one cluster id on every server", 30*time.Second, func() bool {
		var id string
		for i := range c.Nodes {
			st, err := c.Status(i)
			if err != nil || st.ClusterId == "" || (id != "" && st.ClusterId != id) {
				return false
			}
			id = st.ClusterId
		}
		return true
	})
	l.waitAcks(c, 5)
	acks := finishAndCheckAcks(t, c, l, w)
	for i := range c.Nodes {
		if log := c.Log(i); strings.Contains(log, "panic") {
			t.Errorf("%s panicked:\n%s", c.Nodes[i].ID, log)
		}
	}
	t.Logf("%d appends acknowledged across the upgrade, all present on every server", acks)
}

// clusterLevel is the cluster feature level server i reports (0 from a
// release without levels, which counts as level 1).
func clusterLevel(t *testing.T, c *proc.Cluster, i int) uint32 {
	t.Helper()
	st, err := c.Status(i)
	if err != nil {
		return 0
	}
	return max(st.ClusterFeatureLevel, fsm.BaseLevel)
}
