package ops

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/internal/proc"
)

// TestRecoverFromLostMajority: two of three servers are destroyed; the
// survivor alone cannot take writes. The operator stops it, inspects its
// data dir, is refused without confirmation, recovers it to a
// configuration of itself, and starts it with its usual command: it leads,
// serves every write it had (here: every acknowledged write, since it had
// applied them all), and takes new ones.
func TestRecoverFromLostMajority(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a majority and waits for the survivor to give up")
	}
	c := proc.New(t, 3)
	c.StartAll()
	formed(t, c, 3)
	w := proc.NewWriter(t, c.Client(), "survives")
	for range 40 {
		w.MustAppend(t, 1)
	}
	survivor := (c.Leader(0) + 1) % 3
	caughtUp(t, c, survivor, 0) // so that it holds every acknowledged write
	for i := range c.Nodes {
		if i != survivor {
			c.Kill(i)
		}
	}
	// Without a quorum the survivor cannot commit.
	ctx := ctxT(t, 3*time.Second)
	if err := w.Append(ctx, 1); err == nil {
		t.Fatal("a write was acknowledged by one server of three")
	}
	w.Forget()       // it cannot have committed
	c.Stop(survivor) // SIGTERM: graceful even without a quorum

	nd := c.Nodes[survivor]
	out := mustCLI(t, "data", "inspect", "--data-dir", nd.DataDir, "-o", "json")
	var rep struct {
		NodeID string `json:"node_id"`
		Raft   struct {
			Servers []struct{ ID string }
			State   struct{ Counts map[string]uint64 }
		} `json:"raft"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("data inspect: %v\n%s", err, out)
	}
	if rep.NodeID != nd.ID || len(rep.Raft.Servers) != 3 || rep.Raft.State.Counts["stream"] != 1 {
		t.Fatalf("data inspect: %s", out)
	}

	if out, code := cli(t, "wrong\n", "data", "recover", "--data-dir", nd.DataDir); code == 0 || !strings.Contains(out, "QUORUM-LOSS") {
		t.Fatalf("recover without confirmation: exit %d\n%s", code, out)
	}
	if out := mustCLI(t, "data", "inspect", "--data-dir", nd.DataDir, "--no-replay"); !strings.Contains(out, c.Nodes[(survivor+1)%3].ID) {
		t.Fatalf("an unconfirmed recovery changed the configuration:\n%s", out)
	}
	out, code := cli(t, nd.ID+"\n", "data", "recover", "--data-dir", nd.DataDir)
	if code != 0 || !strings.Contains(out, "recovered") {
		t.Fatalf("recover: exit %d\n%s", code, out)
	}

	c.Start(survivor)
	c.WaitFor("the survivor leads", 30*time.Second, func() bool { return c.Leader(survivor) == survivor })
	s, err := c.Describe(survivor, w.Stream)
	if err != nil || s.CommittedEnd != w.End {
		t.Fatalf("after recovery: %v %v, want committed end %d", s, err, w.End)
	}
	checkContiguous(t, gen0Records(t, c, survivor, w.Stream), w.End)
	w.Client = c.Client(survivor)
	w.MustAppend(t, 1)
	st, err := c.Status(survivor)
	if err != nil || st.Voters != 1 || st.LeaderId != nd.ID {
		t.Fatalf("status after recovery: %v %v", st, err)
	}
}
