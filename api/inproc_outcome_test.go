package api

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/raftstore"
)

// fullDisk is a raftstore.SpaceGuard a test fills and empties.
type fullDisk struct{ full atomic.Bool }

func (d *fullDisk) Refuse() error {
	if d.full.Load() {
		return fmt.Errorf("%w: /inproc below its reserve", raftstore.ErrDiskFull)
	}
	return nil
}

// wireWant is a failure as a client sees it.
type wireWant struct {
	code     codes.Code
	reason   metadpb.Reason
	definite bool
	field    string
	sentinel error // the Go client's
	// leader, if set, must be named in leader_id.
	leader string
}

// checkWire checks err as it arrived over gRPC: code, ErrorInfo reason,
// metadata "definite" and "field", and that package client turns it into
// the sentinel.
func checkWire(t *testing.T, what string, err error, w wireWant) {
	t.Helper()
	st, _ := status.FromError(err)
	i := info(err)
	if st.Code() != w.code || i == nil || i.Reason != w.reason.String() || i.Domain != ErrorDomain {
		t.Fatalf("%s: %v (ErrorInfo %v); want %v %v", what, err, i, w.code, w.reason)
	}
	if i.Metadata["definite"] != boolString(w.definite) || i.Metadata["field"] != w.field {
		t.Fatalf("%s: metadata %v; want definite=%v field=%q", what, i.Metadata, w.definite, w.field)
	}
	if w.leader != "" && i.Metadata["leader_id"] != w.leader {
		t.Fatalf("%s: leader_id %q, want %q", what, i.Metadata["leader_id"], w.leader)
	}
	ce := client.FromStatus(err)
	if !errors.Is(ce, w.sentinel) {
		t.Fatalf("%s: the client's error %v is not %v", what, ce, w.sentinel)
	}
	if e, ok := client.AsError(ce); !ok || e.Definite != w.definite {
		t.Fatalf("%s: the client reads %+v; want definite=%v", what, e, w.definite)
	}
}

// TestFailuresKeepTheirClassOverTheWire: each failure the API produces,
// provoked on a real cluster and received by a real gRPC client, carries
// its code, reason, definiteness and field, and the Go client turns it
// into its sentinel — on the leader and through a follower alike.
func TestFailuresKeepTheirClassOverTheWire(t *testing.T) {
	disk := &fullDisk{}
	c := newInprocCluster(t, disk)
	ctx := c.ctx()
	l := c.leader()
	f := c.followers(l)[0]

	// A new cluster runs at the base feature level until the leader
	// raises it: a command of a later level is refused before proposing.
	for _, n := range []*inprocNode{l, f} {
		_, err := metad(n.client).CommitObject(ctx, &metadpb.CommitObjectRequest{Object: &metadpb.ObjectRef{Key: "o", Identity: "v"}, Size: 1,
			Appends: []*metadpb.ObjectAppend{{StreamId: 1, WriterEpoch: 1, End: 1, Bytes: &metadpb.ByteRange{Length: 1}}}, RequestId: uniq("r")})
		checkWire(t, "CommitObject at the base level on "+n.id, err, wireWant{codes.FailedPrecondition, metadpb.Reason_FEATURE_LEVEL, true, "", client.ErrFeatureLevel, ""})
	}
	c.raiseLevel()
	l = c.leader()
	f = c.followers(l)[0]
	x := &probeEnv{c: c, on: l, leader: l}
	id, epoch := x.opened(ctx)
	obj := x.object(ctx)
	_, err := metad(l.client).CommitAppend(ctx, &metadpb.CommitAppendRequest{StreamId: id, WriterEpoch: epoch, End: 10, Object: obj,
		Bytes: &metadpb.ByteRange{Length: 10}, RequestId: uniq("r")})
	must(t, err)
	_, err = metad(l.client).Trim(ctx, &metadpb.TrimRequest{StreamId: id, Offset: 5, RequestId: uniq("r")})
	must(t, err)

	for _, n := range []*inprocNode{l, f} {
		m := metad(n.client)
		_, err := m.DescribeStream(ctx, &metadpb.DescribeStreamRequest{StreamId: 1 << 40})
		checkWire(t, "DescribeStream of no stream on "+n.id, err, wireWant{codes.NotFound, metadpb.Reason_STREAM_NOT_FOUND, true, "stream_id", client.ErrStreamNotFound, ""})
		_, err = m.DescribeStream(ctx, &metadpb.DescribeStreamRequest{Name: "no-such-stream"})
		checkWire(t, "DescribeStream of no name on "+n.id, err, wireWant{codes.NotFound, metadpb.Reason_STREAM_NOT_FOUND, true, "name", client.ErrStreamNotFound, ""})
		_, err = m.OpenForWrite(ctx, &metadpb.OpenForWriteRequest{StreamId: 1 << 40, RequestId: uniq("r")})
		checkWire(t, "OpenForWrite of no stream on "+n.id, err, wireWant{codes.NotFound, metadpb.Reason_STREAM_NOT_FOUND, true, "stream_id", client.ErrStreamNotFound, ""})
		_, err = m.Pin(ctx, &metadpb.PinRequest{Object: obj, Holder: "h", RequestId: uniq("r")})
		checkWire(t, "Pin without ttl on "+n.id, err, wireWant{codes.InvalidArgument, metadpb.Reason_INVALID_ARGUMENT, true, "ttl", client.ErrInvalidArgument, ""})
		_, err = m.DescribeStream(ctx, &metadpb.DescribeStreamRequest{StreamId: id, Consistency: 7})
		checkWire(t, "DescribeStream of an unknown consistency on "+n.id, err, wireWant{codes.InvalidArgument, metadpb.Reason_INVALID_ARGUMENT, true, "consistency", client.ErrInvalidArgument, ""})
		_, err = m.Trim(ctx, &metadpb.TrimRequest{StreamId: id, Offset: 2, RequestId: uniq("r")})
		checkWire(t, "Trim backwards on "+n.id, err, wireWant{codes.FailedPrecondition, metadpb.Reason_TRIM_BACKWARDS, true, "offset", client.ErrTrimBackwards, ""})
		// A trimmed offset is an outcome of Resolve, not an error.
		res, err := m.Resolve(ctx, &metadpb.ResolveRequest{StreamId: id, View: metadpb.View_COMMITTED, Offset: 2})
		if err != nil || res.Outcome != metadpb.Outcome_OFFSET_TRIMMED || res.Trim != 5 {
			t.Fatalf("Resolve of a trimmed offset on %s: %v, %v; want OFFSET_TRIMMED at trim 5", n.id, res, err)
		}
		// Only the leader serves the node-to-node Propose.
		if n != l {
			cmd, err := proto.Marshal(&fsmpb.Command{RequestId: uniq("r"), Op: &fsmpb.Command_CreateStream{CreateStream: &fsmpb.CreateStream{Name: uniq("s")}}})
			must(t, err)
			_, err = peerRPC(n.peerClient).Propose(ctx, &metadpb.ProposeRequest{Command: cmd})
			checkWire(t, "Peer.Propose on a follower", err, wireWant{codes.Unavailable, metadpb.Reason_NOT_LEADER, true, "", client.ErrNotLeader, l.id})
			_, err = peerRPC(n.peerClient).Repair(ctx, &metadpb.RepairRequest{StreamId: id})
			checkWire(t, "Peer.Repair on a follower", err, wireWant{codes.Unavailable, metadpb.Reason_NOT_LEADER, true, "", client.ErrNotLeader, l.id})
		}
	}
	_, err = peerRPC(l.peerClient).Propose(ctx, &metadpb.ProposeRequest{Command: []byte{0xff}})
	checkWire(t, "Peer.Propose of bytes that are no command", err, wireWant{codes.InvalidArgument, metadpb.Reason_INVALID_ARGUMENT, true, "command", client.ErrInvalidArgument, ""})

	// The leader's disk below its reserve: growth is refused, definite,
	// through a follower too; the disk freed, it is taken again.
	disk.full.Store(true)
	for _, n := range []*inprocNode{l, f} {
		_, err := metad(n.client).CreateStream(ctx, &metadpb.CreateStreamRequest{Name: uniq("s"), RequestId: uniq("r")})
		checkWire(t, "CreateStream on a full disk via "+n.id, err, wireWant{codes.ResourceExhausted, metadpb.Reason_DISK_FULL, true, "", client.ErrDiskFull, ""})
	}
	disk.full.Store(false)
	_, err = metad(f.client).CreateStream(ctx, &metadpb.CreateStreamRequest{Name: uniq("s"), RequestId: uniq("r")})
	must(t, err)

	// Unanswered by the leader: see TestEveryRPCKeepsItsRole's cut phase.
	heal := c.cut(l)
	_, err = metad(f.client).Seal(ctx, &metadpb.SealRequest{StreamId: id, RequestId: uniq("r")})
	checkWire(t, "Seal through a follower the leader does not answer", err,
		wireWant{codes.Unavailable, metadpb.Reason_LEADERSHIP_LOST, false, "", client.ErrLeadershipLost, l.id})
	_, err = metad(f.client).DescribeStream(ctx, &metadpb.DescribeStreamRequest{StreamId: id})
	checkWire(t, "a linearizable read on a follower the leader does not answer", err,
		wireWant{codes.Unavailable, metadpb.Reason_NO_LEADER, true, "", client.ErrNoLeader, ""})
	heal()

	// No leader: the two other nodes stopped, the survivor steps down.
	for _, n := range c.followers(l) {
		c.stop(n)
	}
	c.eventually(l.id+" without a leader", func() error {
		if id, _ := l.store.Leader(); id != "" {
			return fmt.Errorf("still follows %q", id)
		}
		return nil
	})
	_, err = metad(l.client).CreateStream(ctx, &metadpb.CreateStreamRequest{Name: uniq("s"), RequestId: uniq("r")})
	checkWire(t, "CreateStream with no leader", err, wireWant{codes.Unavailable, metadpb.Reason_NO_LEADER, true, "", client.ErrNoLeader, ""})
	_, err = metad(l.client).DescribeStream(ctx, &metadpb.DescribeStreamRequest{StreamId: id})
	checkWire(t, "a linearizable read with no leader", err, wireWant{codes.Unavailable, metadpb.Reason_NO_LEADER, true, "", client.ErrNoLeader, ""})
	// A stale read is still served, from this node's own state.
	resp, err := metad(l.client).DescribeStream(ctx, &metadpb.DescribeStreamRequest{StreamId: id, Consistency: metadpb.Consistency_STALE})
	if err != nil || resp.Stream.GetTrim() != 5 {
		t.Fatalf("a stale read with no leader: %v, %v; want the stream as this node has it (trim 5)", resp, err)
	}
}

// TestTransferToAStoppedNodeFailsAtOnce: a leadership transfer raft
// gives up (the target is down) answers CONFIGURATION_REFUSED, definite,
// and leadership stays; it neither waits for the call's deadline nor
// comes back INTERNAL.
func TestTransferToAStoppedNodeFailsAtOnce(t *testing.T) {
	c := newInprocCluster(t, nil)
	l := c.leader()
	down := c.followers(l)[1]
	c.stop(down)
	ctx, cancel := context.WithTimeout(context.Background(), inprocWait)
	defer cancel()
	_, err := cluster(l.client).TransferLeadership(ctx, &metadpb.TransferLeadershipRequest{ToNodeId: down.id})
	checkWire(t, "TransferLeadership to a stopped node", err,
		wireWant{codes.Aborted, metadpb.Reason_CONFIGURATION_REFUSED, true, "", client.ErrConfigurationRefused, ""})
	if ctx.Err() != nil {
		t.Fatal("the transfer answered only at its deadline")
	}
	// Asked of the other follower, which forwards it: the same.
	f := c.followers(c.leader())[0]
	_, err = cluster(f.client).TransferLeadership(ctx, &metadpb.TransferLeadershipRequest{ToNodeId: down.id})
	checkWire(t, "TransferLeadership to a stopped node through a follower", err,
		wireWant{codes.Aborted, metadpb.Reason_CONFIGURATION_REFUSED, true, "", client.ErrConfigurationRefused, ""})
}

// TestDeadlineOverTheWire: a call the leader does not answer before the
// call's deadline (the server's default, the caller sent none) comes back
// DEADLINE_EXCEEDED, indeterminate (the forwarded command may have been
// committed), whether it was a proposal forwarded by a follower or a
// Cluster call handed to the leader.
func TestDeadlineOverTheWire(t *testing.T) {
	c := newInprocCluster(t, nil)
	l := c.leader()
	f := c.followers(l)[0]
	want := wireWant{codes.DeadlineExceeded, metadpb.Reason_DEADLINE_EXCEEDED, false, "", client.ErrDeadlineExceeded, ""}
	m := metadpb.Peer_Propose_FullMethodName
	l.stalled.Store(&m)
	_, err := metad(f.client).CreateStream(context.Background(), &metadpb.CreateStreamRequest{Name: uniq("s"), RequestId: uniq("r")})
	checkWire(t, "a write the leader holds past the deadline", err, want)
	m2 := metadpb.Cluster_RemovePeer_FullMethodName
	l.stalled.Store(&m2)
	_, err = cluster(f.client).RemovePeer(context.Background(), &metadpb.RemovePeerRequest{NodeId: "n9"})
	checkWire(t, "a RemovePeer the leader holds past the deadline", err, want)
	l.stalled.Store(nil)
}
