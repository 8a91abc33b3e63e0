package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/internal/proc"
)

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
		code, body := lone.Readyz(i)
		return code == http.StatusServiceUnavailable && strings.Contains(body, "not a member of the raft configuration")
	})
	for n := range c.Nodes {
		c.WaitFor("a formed server ready", 30*time.Second, func() bool {
			code, _ := c.Readyz(n)
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
		code, _ := c.Readyz(0)
		return code == http.StatusOK
	})
	log := c.Log(0)
	gossip, raft := strings.Index(log, "membership started"), strings.Index(log, "raftstore: opened")
	if gossip < 0 || raft < 0 || gossip > raft {
		t.Fatalf("gossip started at byte %d of the log, raft opened at %d: want gossip first", gossip, raft)
	}
}
