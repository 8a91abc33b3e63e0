package integration

import (
	"testing"
	"time"

	"github.com/metad/metad/client"
	"github.com/metad/metad/internal/proc"
)

// TestClientFollowsTheLeader: a default client sends calls to the leader;
// when the leader dies it finds the new one and carries on, losing no
// acknowledged write.
func TestClientFollowsTheLeader(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	formed(t, c, 3)
	cl, err := client.New(client.Config{Addrs: addrs(c), Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	w := proc.NewWriter(t, cl, "follow")
	for range 20 {
		w.MustAppend(t, 1)
	}
	old := c.WaitLeader(0)
	c.Kill(old)
	start := time.Now()
	for range 20 {
		w.MustAppend(t, 1) // retried under the same request id until the new leader answers
	}
	t.Logf("20 appends after kill -9 of the leader took %s", time.Since(start).Round(time.Millisecond))
	for i := range c.Nodes {
		if i == old {
			continue
		}
		s, err := c.Describe(i, w.Stream)
		if err != nil || s.CommittedEnd != w.End || w.End != 40 {
			t.Fatalf("node %d: %+v %v, want committed end %d = 40", i, s, err, w.End)
		}
	}
}
