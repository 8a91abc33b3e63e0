package api

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/peer"
)

// proposalsServed sums the Peer.Propose calls the nodes served.
func (c *inprocCluster) proposalsServed() map[string]int64 {
	out := map[string]int64{}
	for _, n := range c.nodes {
		out[n.id] = n.proposals.Load()
	}
	return out
}

// TestFollowersFollowAMovingLeader: leadership moves round the cluster;
// after each move, a write asked of every node that does not lead (the
// old leader among them) is forwarded to the new leader, committed
// there, and read back linearizably from the node it was asked of. No
// proposal is forwarded more than peer.MaxForwards times, and only
// leaders commit forwarded proposals.
func TestFollowersFollowAMovingLeader(t *testing.T) {
	c := newInprocCluster(t, nil)
	ctx := c.ctx()
	for round := range 3 {
		old := c.leader()
		to := c.followers(old)[round%2]
		resp, err := c.transfer(ctx, old, to.id)
		if err != nil || resp.LeaderId != to.id {
			t.Fatalf("round %d: transfer %s → %s: %v, %v", round, old.id, to.id, resp, err)
		}
		// A node learns the new leader from its first heartbeat; asked
		// before it, it answers NO_LEADER (retryable: the client retries
		// it), which is not forwarding. On a loaded machine the old leader
		// was asked first and answered so.
		if l := c.leader(); l != to {
			t.Fatalf("round %d: after the transfer to %s, %s leads", round, to.id, l.id)
		}
		for _, n := range c.nodes {
			if n == to {
				continue
			}
			before := c.proposalsServed()
			name := uniq(fmt.Sprintf("round%d-via-%s", round, n.id))
			created, err := metad(n.client).CreateStream(ctx, &metadpb.CreateStreamRequest{Name: name, RequestId: uniq("r")})
			if err != nil {
				t.Fatalf("round %d: CreateStream via %s after the move to %s: %v", round, n.id, to.id, err)
			}
			after := c.proposalsServed()
			var forwards int64
			for id := range after {
				forwards += after[id] - before[id]
			}
			if forwards < 1 || forwards > peer.MaxForwards {
				t.Fatalf("round %d: the write via %s was forwarded %d times (%v → %v); want 1..%d", round, n.id, forwards, before, after, peer.MaxForwards)
			}
			got, err := metad(n.client).DescribeStream(ctx, &metadpb.DescribeStreamRequest{Name: name})
			if err != nil || got.Stream.GetId() != created.StreamId {
				t.Fatalf("round %d: the write via %s not read back there: %v, %v", round, n.id, got, err)
			}
		}
	}
}

// TestForwardingStopsAtMaxForwards: a follower whose forwards land on a
// node that does not lead (its directory misdirected) gets NOT_LEADER
// from it each time and gives up after peer.MaxForwards forwards,
// answering NOT_LEADER (retryable, definite: nothing was committed).
func TestForwardingStopsAtMaxForwards(t *testing.T) {
	c := newInprocCluster(t, nil)
	ctx := c.ctx()
	l := c.leader()
	fs := c.followers(l)
	from, wrong := fs[0], fs[1]
	c.mu.Lock()
	c.misdirect[[2]string{from.id, l.id}] = wrong.addr
	c.mu.Unlock()
	before := wrong.proposals.Load()
	_, err := metad(from.client).CreateStream(ctx, &metadpb.CreateStreamRequest{Name: uniq("s"), RequestId: uniq("r")})
	checkWire(t, "a write forwarded to a node that does not lead", err,
		wireWant{codes.Unavailable, metadpb.Reason_NOT_LEADER, true, "", client.ErrNotLeader, l.id})
	if got := wrong.proposals.Load() - before; got != peer.MaxForwards {
		t.Fatalf("%s received %d forwards, want peer.MaxForwards = %d", wrong.id, got, peer.MaxForwards)
	}
	c.mu.Lock()
	delete(c.misdirect, [2]string{from.id, l.id})
	c.mu.Unlock()
	if _, err := metad(from.client).CreateStream(ctx, &metadpb.CreateStreamRequest{Name: uniq("s"), RequestId: uniq("r")}); err != nil {
		t.Fatalf("the directory right again, a write via %s: %v", from.id, err)
	}
}

// consistencyReads are the reads that take a Consistency, each asked for
// something that exists.
func consistencyReads(ctx context.Context, x *probeEnv, stream uint64, object string) map[string]func(metadpb.Consistency) error {
	m := x.metad()
	return map[string]func(metadpb.Consistency) error{
		"DescribeStream": func(c metadpb.Consistency) error {
			_, err := m.DescribeStream(ctx, &metadpb.DescribeStreamRequest{StreamId: stream, Consistency: c})
			return err
		},
		"ListStreams": func(c metadpb.Consistency) error {
			_, err := m.ListStreams(ctx, &metadpb.ListStreamsRequest{Consistency: c})
			return err
		},
		"ListIndex": func(c metadpb.Consistency) error {
			_, err := m.ListIndex(ctx, &metadpb.ListIndexRequest{StreamId: stream, View: metadpb.View_COMMITTED, Consistency: c})
			return err
		},
		"ListEvidence": func(c metadpb.Consistency) error {
			_, err := m.ListEvidence(ctx, &metadpb.ListEvidenceRequest{StreamId: stream, Consistency: c})
			return err
		},
		"DescribeObject": func(c metadpb.Consistency) error {
			_, err := m.DescribeObject(ctx, &metadpb.DescribeObjectRequest{Key: object, Consistency: c})
			return err
		},
	}
}

// TestReadConsistencyChoices: LINEARIZABLE (the default) on a follower
// sees every write the leader acknowledged before the read, and needs the
// leader: cut from it, the follower refuses (NO_LEADER, retryable). STALE
// is this node's own state: served on a follower cut from the leader. An
// unknown consistency is INVALID_ARGUMENT naming "consistency".
func TestReadConsistencyChoices(t *testing.T) {
	c := newInprocCluster(t, nil)
	ctx := c.ctx()
	l := c.leader()
	f := c.followers(l)[0]
	for i := range 20 {
		name := uniq("lin")
		if _, err := metad(l.client).CreateStream(ctx, &metadpb.CreateStreamRequest{Name: name, RequestId: uniq("r")}); err != nil {
			t.Fatal(err)
		}
		if _, err := metad(f.client).DescribeStream(ctx, &metadpb.DescribeStreamRequest{Name: name}); err != nil {
			t.Fatalf("write %d: a linearizable read on the follower right after the leader acknowledged it: %v", i, err)
		}
	}
	x := &probeEnv{c: c, on: f, leader: l}
	stream, object := x.stream(ctx), x.object(ctx).Key
	// The follower has applied what it is about to be asked for.
	c.eventually(f.id+" caught up", func() error {
		if f.store.AppliedIndex() < l.store.CommitIndex() {
			return fmt.Errorf("applied %d < %d", f.store.AppliedIndex(), l.store.CommitIndex())
		}
		return nil
	})
	heal := c.cut(l)
	defer heal()
	for name, read := range consistencyReads(ctx, x, stream, object) {
		checkWire(t, name+" LINEARIZABLE on a follower cut from the leader", read(metadpb.Consistency_LINEARIZABLE),
			wireWant{codes.Unavailable, metadpb.Reason_NO_LEADER, true, "", client.ErrNoLeader, ""})
		if err := read(metadpb.Consistency_STALE); err != nil {
			t.Fatalf("%s STALE on a follower cut from the leader: %v; want its own state", name, err)
		}
		checkWire(t, name+" of an unknown consistency", read(metadpb.Consistency(9)),
			wireWant{codes.InvalidArgument, metadpb.Reason_INVALID_ARGUMENT, true, "consistency", client.ErrInvalidArgument, ""})
	}
}
