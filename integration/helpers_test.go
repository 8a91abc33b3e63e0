package integration

import (
	"context"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/internal/proc"
)

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// leadElsewhere moves leadership off node i if it leads, for a test whose
// victim must be a follower, and waits until another node leads.
func leadElsewhere(t *testing.T, c *proc.Cluster, i int) {
	t.Helper()
	if c.Leader(0) != i {
		return
	}
	to := (i + 1) % len(c.Nodes)
	cl := c.Client(i)
	if _, err := client.Call(ctxT(t, 30*time.Second), cl, cl.Cluster.TransferLeadership,
		&metadpb.TransferLeadershipRequest{ToNodeId: c.Nodes[to].ID}); err != nil {
		t.Fatalf("move leadership off %s: %v", c.Nodes[i].ID, err)
	}
	c.WaitFor("a leader other than "+c.Nodes[i].ID, 30*time.Second, func() bool { l := c.Leader(0); return l >= 0 && l != i })
}
