package ops

import (
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
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
	set := newSetProbe(t, c)
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
			// A stream-set object is a level-4 command: refused, and
			// nothing of it committed, while any server cannot apply it.
			set.refused(t, c)
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
	set.commits(t, c)
	l.waitAcks(c, 5)
	acks := finishAndCheckAcks(t, c, l, w)
	for i := range c.Nodes {
		if log := c.Log(i); strings.Contains(log, "panic") {
			t.Errorf("%s panicked:\n%s", c.Nodes[i].ID, log)
		}
	}
	t.Logf("%d appends acknowledged across the upgrade, all present on every server", acks)
}

// setProbe tries a one-stream stream-set object against the cluster.
type setProbe struct {
	stream, epoch uint64
}

func newSetProbe(t *testing.T, c *proc.Cluster) *setProbe {
	t.Helper()
	cl := c.Client()
	ctx := ctxT(t, 30*time.Second)
	s, err := client.Call(ctx, cl, cl.Metad.CreateStream, &metadpb.CreateStreamRequest{Name: "upgrade-set", RequestId: client.NewRequestID()})
	if err != nil {
		t.Fatal(err)
	}
	o, err := client.Call(ctx, cl, cl.Metad.OpenForWrite, &metadpb.OpenForWriteRequest{StreamId: s.StreamId, RequestId: client.NewRequestID()})
	if err != nil {
		t.Fatal(err)
	}
	return &setProbe{stream: s.StreamId, epoch: o.WriterEpoch}
}

func (p *setProbe) commit(t *testing.T, c *proc.Cluster) error {
	t.Helper()
	cl := c.Client()
	_, err := client.Call(ctxT(t, 30*time.Second), cl, cl.Metad.CommitObject, &metadpb.CommitObjectRequest{
		Object: &metadpb.ObjectRef{Key: "upgrade-set", Identity: "sha256:probe"}, Size: 10, RequestId: client.NewRequestID(),
		Appends: []*metadpb.ObjectAppend{{StreamId: p.stream, WriterEpoch: p.epoch, End: 1, Bytes: &metadpb.ByteRange{Length: 10}}},
	})
	return err
}

// refused: the object is refused and the stream has not moved.
func (p *setProbe) refused(t *testing.T, c *proc.Cluster) {
	t.Helper()
	if err := p.commit(t, c); err == nil {
		t.Fatal("a stream-set object committed while a server of the previous release remains")
	}
	cl := c.Client()
	d, err := client.Call(ctxT(t, 30*time.Second), cl, cl.Metad.DescribeStream, &metadpb.DescribeStreamRequest{StreamId: p.stream})
	if err != nil {
		t.Fatal(err)
	}
	if d.Stream.CommittedEnd != 0 {
		t.Fatalf("a refused stream-set object moved the stream to %d", d.Stream.CommittedEnd)
	}
}

// commits: once every server runs this build, the object commits.
func (p *setProbe) commits(t *testing.T, c *proc.Cluster) {
	t.Helper()
	if err := p.commit(t, c); err != nil {
		t.Fatalf("a stream-set object after the upgrade: %v", err)
	}
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
