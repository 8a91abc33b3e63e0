package integration

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/internal/proc"
	"github.com/metad/metad/node"
)

// formedCluster starts c and waits until server 0 sees a leader and the
// cluster has its id; it returns the id.
func formedCluster(t *testing.T, c *proc.Cluster) string {
	t.Helper()
	c.StartAll()
	var id string
	c.WaitFor("a leader and a cluster id", time.Minute, func() bool {
		st, err := c.Status(0)
		if err != nil || st.LeaderId == "" || st.ClusterId == "" {
			return false
		}
		id = st.ClusterId
		return true
	})
	return id
}

// voterIDs is the sorted ids of the voters server i's status lists.
func voterIDs(t *testing.T, c *proc.Cluster, i int) []string {
	t.Helper()
	st, err := c.Status(i)
	if err != nil {
		t.Fatalf("status of %s: %v", c.Nodes[i].ID, err)
	}
	var ids []string
	for _, n := range st.Nodes {
		if n.Voter {
			ids = append(ids, n.NodeId)
		}
	}
	slices.Sort(ids)
	return ids
}

// renameNode gives server i of c another node id (flags and record).
func renameNode(c *proc.Cluster, i int, id string) {
	nd := c.Nodes[i]
	for j := range nd.Args {
		if nd.Args[j] == "--node-id" {
			nd.Args[j+1] = id
		}
	}
	nd.ID = id
}

// withFlagValue replaces the value of flag in server i's flags.
func withFlagValue(c *proc.Cluster, i int, flag, value string) {
	nd := c.Nodes[i]
	for j := range nd.Args {
		if nd.Args[j] == flag {
			nd.Args[j+1] = value
		}
	}
}

// TestNodeOfAnotherClusterIsRefused is issue 10's "a data dir that held its
// own one-node cluster was added as a fourth voter of another": a lone
// server with its own bootstrapped data dir (and, to leave the cluster id
// as the only guard, the same peer secret) is restarted with --join at a
// three-node cluster's gossip address. It is refused with log lines naming
// both cluster ids; the three voters stay the three, and the lone server
// still leads its own cluster with its own state.
func TestNodeOfAnotherClusterIsRefused(t *testing.T) {
	big := proc.New(t, 3)
	bigID := formedCluster(t, big)

	lone := proc.New(t, 1)
	renameNode(lone, 0, "lone")
	withFlagValue(lone, 0, "--peer-secret-file", big.Dir+"/peer-secret")
	loneID := formedCluster(t, lone)
	if loneID == bigID {
		t.Fatalf("two clusters share the id %s", bigID)
	}
	cl := lone.Client()
	ctx := ctxT(t, 30*time.Second)
	created, err := client.Call(ctx, cl, cl.Metad.CreateStream, &metadpb.CreateStreamRequest{Name: "lone-stream", RequestId: client.NewRequestID()})
	if err != nil {
		t.Fatal(err)
	}
	lone.WaitFor("the lone server's data dir to record its cluster id", 30*time.Second, func() bool {
		return strings.Contains(lone.Log(0), "cluster id recorded in the data dir")
	})
	lone.Stop(0)
	lone.Nodes[0].Args = append(lone.Nodes[0].Args, "--join", big.Nodes[0].Gossip)
	lone.Start(0)

	bothIDs := func(log string) bool { return strings.Contains(log, bigID) && strings.Contains(log, loneID) }
	big.WaitFor("a log line naming both cluster ids", time.Minute, func() bool {
		if bothIDs(lone.Log(0)) {
			return true
		}
		for i := range big.Nodes {
			if bothIDs(big.Log(i)) {
				return true
			}
		}
		return false
	})
	// The lone server keeps retrying its join (with backoff from 0.5 s);
	// once the big cluster has refused it a few times, the leader's
	// reconcile loop (every 2 s) has had rounds to act, and nothing moved.
	lone.WaitFor("the lone server to lead its own cluster again", time.Minute, func() bool { return lone.Leader(0) == 0 })
	big.WaitFor("the big cluster to refuse the lone server's gossip 4 times", time.Minute, func() bool {
		return gossipRefusals(big) >= 4
	})
	for i := range big.Nodes {
		if got := voterIDs(t, big, i); !slices.Equal(got, []string{"n1", "n2", "n3"}) {
			t.Errorf("%s lists voters %v, want n1 n2 n3", big.Nodes[i].ID, got)
		}
		if strings.Contains(big.Log(i), "adding lone") {
			t.Errorf("%s's log shows the lone server being added", big.Nodes[i].ID)
		}
	}
	st, err := lone.Status(0)
	if err != nil || st.ClusterId != loneID || st.LeaderId != "lone" || len(st.Nodes) != 1 {
		t.Fatalf("the lone server's own cluster changed: %v, %v", st, err)
	}
	got, err := lone.Describe(0, created.StreamId)
	if err != nil || got.Name != "lone-stream" {
		t.Fatalf("the lone server's stream: %v, %v", got, err)
	}
	t.Logf("refused: cluster %s kept voters n1 n2 n3; lone server of cluster %s kept its state", bigID, loneID)
}

// TestNeighboursJoinAddressIsRefused is issue 10's "a server given a
// neighbour's port": a server of a formed three-node cluster B is
// restarted with the gossip address of a server of cluster A among its
// --join addresses (a typo, a copied config). The two clusters' gossip and
// Raft configurations never merge.
func TestNeighboursJoinAddressIsRefused(t *testing.T) {
	a := proc.New(t, 3)
	aID := formedCluster(t, a)
	b := proc.New(t, 3)
	for i := range b.Nodes {
		renameNode(b, i, fmt.Sprintf("b%d", i+1))
	}
	bID := formedCluster(t, b)
	b.WaitFor("b1 to record its cluster id", 30*time.Second, func() bool {
		return strings.Contains(b.Log(0), "cluster id recorded in the data dir")
	})
	b.Stop(0)
	b.Nodes[0].Args = append(b.Nodes[0].Args, "--join", a.Nodes[1].Gossip)
	b.Start(0)
	a.WaitFor("a log line naming both cluster ids", time.Minute, func() bool {
		for _, c := range []*proc.Cluster{a, b} {
			for i := range c.Nodes {
				if log := c.Log(i); strings.Contains(log, aID) && strings.Contains(log, bID) && strings.Contains(log, "another cluster") {
					return true
				}
			}
		}
		return false
	})
	b.WaitFor("b1 back in its own cluster", time.Minute, func() bool {
		st, err := b.Status(0)
		return err == nil && st.LeaderId != "" && len(st.Nodes) == 3
	})
	for _, c := range []struct {
		cl   *proc.Cluster
		want []string
	}{{a, []string{"n1", "n2", "n3"}}, {b, []string{"b1", "b2", "b3"}}} {
		for i := range c.cl.Nodes {
			if got := voterIDs(t, c.cl, i); !slices.Equal(got, c.want) {
				t.Errorf("%s lists voters %v, want %v", c.cl.Nodes[i].ID, got, c.want)
			}
		}
	}
	members, err := a.Client(1).Cluster.Members(ctxT(t, 10*time.Second), &metadpb.MembersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members.Members {
		if strings.HasPrefix(m.NodeId, "b") {
			t.Errorf("cluster A's gossip view holds %s of cluster B", m.NodeId)
		}
	}
}

// gossipRefusals sums metad_membership_foreign_refusals_total{where="gossip"}
// over c's servers.
func gossipRefusals(c *proc.Cluster) int {
	total := 0
	for i := range c.Nodes {
		if n := metricOn(c, i, `metad_membership_foreign_refusals_total{where="gossip"}`); n > 0 {
			total += n
		}
	}
	return total
}

// TestGossipKeyRotation runs a three-node cluster with --gossip-key-file
// and rotates its key by rewriting the file and sending SIGHUP, in the
// README's three steps. Afterwards a server with only the new key is
// added, and one with only the old key never enters the gossip view.
func TestGossipKeyRotation(t *testing.T) {
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "gossip.keys")
	oldKey, newKey := node.NewGossipKey(), node.NewGossipKey()
	writeKeys := func(path string, keys ...string) {
		t.Helper()
		// Written by rename: a server never reads half a file.
		if err := os.WriteFile(path+".tmp", []byte(strings.Join(keys, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	writeKeys(keyFile, oldKey)
	c := proc.New(t, 3, "--gossip-key-file", keyFile)
	formedCluster(t, c)
	for step, keys := range [][]string{{oldKey, newKey}, {newKey, oldKey}, {newKey}} {
		writeKeys(keyFile, keys...)
		for i := range c.Nodes {
			c.Reload(i)
		}
		c.WaitFor(fmt.Sprintf("step %d reloaded on every server", step+1), 30*time.Second, func() bool {
			for i := range c.Nodes {
				if strings.Count(c.Log(i), "gossip keys reloaded") < step+1 {
					return false
				}
			}
			return true
		})
	}
	newOnly, oldOnly := filepath.Join(dir, "new.keys"), filepath.Join(dir, "old.keys")
	writeKeys(newOnly, newKey)
	writeKeys(oldOnly, oldKey)
	stale := c.AddNode("--gossip-key-file", oldOnly)
	fresh := c.AddNode("--gossip-key-file", newOnly)
	c.Start(stale)
	c.Start(fresh)
	c.WaitFor("the server with the new key to be added and promoted", 2*time.Minute, func() bool {
		return slices.Contains(voterIDs(t, c, 0), c.Nodes[fresh].ID)
	})
	members, err := c.Client(0).Cluster.Members(ctxT(t, 10*time.Second), &metadpb.MembersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	alive := 0
	for _, m := range members.Members {
		if m.NodeId == c.Nodes[stale].ID {
			t.Errorf("the server with only the old key is in the gossip view: %v", m)
		}
		if m.Status == "alive" {
			alive++
		}
	}
	if alive != 4 {
		t.Errorf("%d alive members after the rotation, want 4: %v", alive, members.Members)
	}
}

// TestWrongPeerSecretIsNamedOnBothSides: a node given another
// --peer-secret-file is not added, and both sides say why. Each refuses
// the other's calls (the leader's probe, the newcomer's question for
// tombstones) and logs it at WARN naming the caller's node id and address;
// each logs the refusal it gets at ERROR naming the other node and the
// flag, and the newcomer's /readyz says it too. (Before, the leader only
// said the newcomer "has not answered for its cluster id yet" and the
// newcomer said nothing.)
func TestWrongPeerSecretIsNamedOnBothSides(t *testing.T) {
	c := proc.New(t, 1)
	formedCluster(t, c)
	other := filepath.Join(c.Dir, "other-secret")
	if err := os.WriteFile(other, []byte("a-different-secret-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n2 := c.AddNode("--peer-secret-file", other)
	c.Start(n2)
	logLine := func(i int, parts ...string) string {
		for _, l := range strings.Split(c.Log(i), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(l, p)
			}
			if all {
				return l
			}
		}
		return ""
	}
	type side struct{ self, peer int }
	sides := []side{{0, n2}, {n2, 0}}
	c.WaitFor("both sides to name the peer secret mismatch", time.Minute, func() bool {
		for _, s := range sides {
			if logLine(s.self, "level=WARN", "peer secret mismatch") == "" || logLine(s.self, "level=ERROR", "peer secret mismatch") == "" {
				return false
			}
		}
		return true
	})
	for _, s := range sides {
		self, peer := c.Nodes[s.self], c.Nodes[s.peer]
		if l := logLine(s.self, "level=WARN", "peer secret mismatch"); !strings.Contains(l, "caller_node="+peer.ID) ||
			!strings.Contains(l, "remote=127.0.0.1:") || !strings.Contains(l, "--peer-secret-file") {
			t.Errorf("%s refusing: the line does not name %s, its address and the flag:\n%s", self.ID, peer.ID, l)
		}
		if l := logLine(s.self, "level=ERROR", "peer secret mismatch"); !strings.Contains(l, "server="+peer.ID) ||
			!strings.Contains(l, peer.GRPC) || !strings.Contains(l, "--peer-secret-file") {
			t.Errorf("%s refused: the line does not name %s, its address and the flag:\n%s", self.ID, peer.ID, l)
		}
	}
	if slices.Contains(voterIDs(t, c, 0), c.Nodes[n2].ID) {
		t.Errorf("a node of another peer secret became a voter")
	}
	// Its /readyz says why it is not ready (it said only that it was not
	// a member yet, as a node waiting to be added says).
	resp, err := http.Get("http://" + c.Nodes[n2].HTTP + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), c.Nodes[0].ID+" refuse(s) this node's peer secret") ||
		!strings.Contains(string(body), "--peer-secret-file") {
		t.Errorf("/readyz of the node with another secret: %d %q, want 503 naming %s and --peer-secret-file", resp.StatusCode, body, c.Nodes[0].ID)
	}
}
