package integration

import (
	"context"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/internal/proc"
)

// inConfiguration reports whether node id is in the configuration server
// i reports, and as a voter.
func inConfiguration(c *proc.Cluster, i int, id string) (present, voter bool, err error) {
	st, err := c.Status(i)
	if err != nil {
		return false, false, err
	}
	for _, n := range st.Nodes {
		if n.NodeId == id {
			return true, n.Voter, nil
		}
	}
	return false, false, nil
}

// readyz returns server i's /readyz status code and body.
func readyz(c *proc.Cluster, i int) (int, string) {
	cl := http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get("http://" + c.Nodes[i].HTTP + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestPartitionedFollowerNotRemoved: with the default --dead-server-timeout
// (72h), a follower cut off for 40 s (SIGSTOP: it answers nothing, so
// gossip declares it dead within seconds; the old 30 s timeout removed it)
// stays a voter all along, and when it comes back it catches up and is
// ready without any configuration change.
func TestPartitionedFollowerNotRemoved(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	formed(t, c, 3)
	leader := c.Leader(0)
	f := (leader + 1) % 3
	w := proc.NewWriter(t, c.Client(leader), "partitioned")
	c.Pause(f)
	start := time.Now()
	for time.Since(start) < 40*time.Second {
		present, voter, err := inConfiguration(c, leader, c.Nodes[f].ID)
		if err == nil && (!present || !voter) {
			t.Fatalf("after %v partitioned, %s is in the configuration: %v, voter: %v", time.Since(start).Round(time.Second), c.Nodes[f].ID, present, voter)
		}
		w.MustAppend(t, 1)
		time.Sleep(time.Second) // pacing of the check, not synchronisation
	}
	if !strings.Contains(c.Log(leader), "is dead in gossip; removing it from raft after 72h0m0s unless it returns") {
		t.Fatalf("the leader never saw %s dead in gossip (the partition did not take)", c.Nodes[f].ID)
	}
	c.Resume(f)
	c.WaitFor("the partitioned follower caught up and ready", 30*time.Second, func() bool {
		code, _ := readyz(c, f)
		s, err := c.Describe(f, w.Stream)
		return code == http.StatusOK && err == nil && s.CommittedEnd == w.End
	})
	for _, decision := range []string{"decision=remove", "decision=add-nonvoter"} {
		if strings.Contains(c.Log(leader), decision) {
			t.Errorf("the leader logged %s: the configuration changed", decision)
		}
	}
}

// TestRemovedServerStaysRemoved: a server killed with -9 and removed with
// remove-peer at once (while gossip still has it alive: the leader used to
// re-add it within seconds) stays out of the configuration, checked for 30
// s (the issue asks 2 minutes; 30 s covers the old 0.3-3 s re-add by a wide
// margin and keeps the suite short); restarted with its data it stops and
// says how to rejoin; wiped and restarted it joins as a new incarnation.
func TestRemovedServerStaysRemoved(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	formed(t, c, 3)
	c.WaitFor("feature level 2 (tombstones)", 30*time.Second, func() bool {
		st, err := c.Status(0)
		return err == nil && st.ClusterFeatureLevel == 2
	})
	leader := c.Leader(0)
	victim := (leader + 1) % 3
	id := c.Nodes[victim].ID
	st, err := c.Status(leader)
	if err != nil {
		t.Fatal(err)
	}
	var oldInc string
	for _, n := range st.Nodes {
		if n.NodeId == id {
			oldInc = n.Incarnation
		}
	}
	if oldInc == "" {
		t.Fatalf("%s reports no incarnation: %v", id, st)
	}
	c.WaitFor("the leader knows the victim's incarnation", 30*time.Second, func() bool {
		cl := c.Client(leader)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp, err := cl.Cluster.Members(ctx, &metadpb.MembersRequest{})
		if err != nil {
			return false
		}
		for _, m := range resp.Members {
			if m.NodeId == id {
				return m.Incarnation == oldInc
			}
		}
		return false
	})
	c.Kill(victim)
	cl := c.Client(leader)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := client.Call(ctx, cl, cl.Cluster.RemovePeer, &metadpb.RemovePeerRequest{NodeId: id})
	if err != nil || !resp.Tombstoned || resp.Incarnation != oldInc {
		t.Fatalf("remove-peer: %+v %v; want a tombstone on incarnation %s", resp, err, oldInc)
	}
	stillRemoved := func() {
		t.Helper()
		st, err := c.Status(leader)
		if err != nil {
			return
		}
		for _, n := range st.Nodes {
			if n.NodeId == id {
				t.Fatalf("%s is back in the configuration: %v", id, st.Nodes)
			}
		}
		if len(st.Tombstones) != 1 || st.Tombstones[0].NodeId != id || st.Tombstones[0].Incarnation != oldInc {
			t.Fatalf("status tombstones %v, want %s/%s", st.Tombstones, id, oldInc)
		}
	}
	for start := time.Now(); time.Since(start) < 30*time.Second; time.Sleep(500 * time.Millisecond) {
		stillRemoved()
	}

	// Restarted with its data: alive in gossip, never re-added; it stops.
	c.Start(victim)
	c.WaitFor("the removed server stops with instructions", 30*time.Second, func() bool {
		stillRemoved()
		return strings.Contains(c.Log(victim), "was removed from the cluster by an operator") &&
			strings.Contains(c.Log(victim), "delete its data dir")
	})
	c.Kill(victim)
	stillRemoved()
	if !strings.Contains(c.Log(leader), "not adding "+id+": incarnation") {
		t.Errorf("the leader never logged why it did not re-add %s", id)
	}

	// Wiped: a new incarnation, added and promoted through the normal path.
	if err := os.RemoveAll(c.Nodes[victim].DataDir); err != nil {
		t.Fatal(err)
	}
	c.Start(victim)
	c.WaitFor("the new incarnation promoted", 60*time.Second, func() bool {
		st, err := c.Status(leader)
		if err != nil {
			return false
		}
		for _, n := range st.Nodes {
			if n.NodeId == id {
				return n.Voter && n.Incarnation != "" && n.Incarnation != oldInc
			}
		}
		return false
	})
}

// TestNotReadyUnlessMember: readiness requires membership of the raft
// configuration. A server that nobody adds (no --join, expect 0) answers
// /readyz 503 saying so, however long it runs; the servers of a formed
// cluster answer 200.
func TestNotReadyUnlessMember(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	formed(t, c, 3)
	lone := proc.New(t, 0)
	i := lone.AddNode()
	lone.Start(i)
	lone.WaitFor("the lone server says why it is not ready", 30*time.Second, func() bool {
		code, body := readyz(lone, i)
		return code == http.StatusServiceUnavailable && strings.Contains(body, "not a member of the raft configuration")
	})
	for n := range c.Nodes {
		c.WaitFor("a formed server ready", 30*time.Second, func() bool {
			code, _ := readyz(c, n)
			return code == http.StatusOK
		})
	}
}

// TestGossipBeforeRaftOpens: a server joins gossip before it opens Raft
// (which restores its latest snapshot, minutes for a large state), so the
// leader sees a restarting server alive all along, never as a removal
// candidate.
func TestGossipBeforeRaftOpens(t *testing.T) {
	c := proc.New(t, 1)
	c.StartAll()
	c.WaitFor("the server ready", 30*time.Second, func() bool {
		code, _ := readyz(c, 0)
		return code == http.StatusOK
	})
	log := c.Log(0)
	gossip, raft := strings.Index(log, "membership started"), strings.Index(log, "raftstore: opened")
	if gossip < 0 || raft < 0 || gossip > raft {
		t.Fatalf("gossip started at byte %d of the log, raft opened at %d: want gossip first", gossip, raft)
	}
}
