package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/api/reasons"
	"github.com/metad/metad/fsm/fsmpb"
)

// role is where an RPC may be served, and so what a follower does with it.
type role int

const (
	// roleWrite: only the leader commits it; a follower hands it to the
	// leader (peer.Node.Propose, or the Cluster call on the leader), and
	// it takes effect there. A follower that cannot reach the leader says
	// LEADERSHIP_LOST, indeterminate, naming the leader.
	roleWrite role = iota
	// roleLeaderOnly: a node-to-node call only the leader serves; a
	// follower never forwards it, it answers NOT_LEADER naming the leader.
	roleLeaderOnly
	// roleLinearizable: a read after a read index: a follower serves it
	// once the leader has confirmed its index, so it sees every write
	// acknowledged before it, and fails (retryably) while the leader
	// cannot be asked.
	roleLinearizable
	// roleLocal: served by any node from what it holds or asks itself
	// (gossip, its own status, its fan-out, its change feed): a follower
	// answers even while the leader is unreachable.
	roleLocal
)

func (r role) String() string {
	return [...]string{"write", "leader-only", "linearizable read", "local"}[r]
}

// rpcRole classifies one RPC for TestEveryRPCHasARole.
type rpcRole struct {
	role role
	// probe makes the call on x.on with a request valid in the state
	// probe sets up (through the leader), and returns the version it
	// committed (writes that succeed) and its error.
	probe func(ctx context.Context, x *probeEnv) (uint64, error)
	// want is the reason a healthy cluster answers with, on the leader
	// and on a follower alike (REASON_UNSPECIFIED: success).
	want metadpb.Reason
	// cutWant overrides the reason a follower answers while the leader is
	// unreachable to it; by default the role's (LEADERSHIP_LOST for a
	// write, NO_LEADER for a linearizable read, success for a local call).
	cutWant metadpb.Reason
}

// probeEnv is what a probe works with.
type probeEnv struct {
	c          *inprocCluster
	on, leader *inprocNode
}

var probeSeq atomic.Uint64

func uniq(prefix string) string { return fmt.Sprintf("%s-%d", prefix, probeSeq.Add(1)) }

func (x *probeEnv) metad() metadpb.MetadClient     { return metad(x.on.client) }
func (x *probeEnv) cluster() metadpb.ClusterClient { return cluster(x.on.client) }
func (x *probeEnv) peer() metadpb.PeerClient       { return peerRPC(x.on.peerClient) }
func (x *probeEnv) setup() metadpb.MetadClient     { return metad(x.leader.client) }

// stream creates a stream through the leader.
func (x *probeEnv) stream(ctx context.Context) uint64 {
	resp, err := x.setup().CreateStream(ctx, &metadpb.CreateStreamRequest{Name: uniq("s"), RequestId: uniq("r")})
	must(x.c.t, err)
	return resp.StreamId
}

// opened creates a stream and opens it for write, through the leader.
func (x *probeEnv) opened(ctx context.Context) (id, epoch uint64) {
	id = x.stream(ctx)
	resp, err := x.setup().OpenForWrite(ctx, &metadpb.OpenForWriteRequest{StreamId: id, RequestId: uniq("r")})
	must(x.c.t, err)
	return id, resp.WriterEpoch
}

// object registers an object through the leader.
func (x *probeEnv) object(ctx context.Context) *metadpb.ObjectRef {
	obj := &metadpb.ObjectRef{Key: uniq("obj"), Identity: "v1"}
	_, err := x.setup().RegisterObject(ctx, &metadpb.RegisterObjectRequest{Object: obj, Size: 100, RequestId: uniq("r")})
	must(x.c.t, err)
	return obj
}

func version[T interface{ GetVersion() uint64 }](resp T, err error) (uint64, error) {
	if err != nil {
		return 0, err
	}
	return resp.GetVersion(), nil
}

func noVersion[T any](_ T, err error) (uint64, error) { return 0, err }

// firstOf receives a server stream's first message.
func firstOf[T any](s interface{ Recv() (T, error) }, err error) (uint64, error) {
	if err != nil {
		return 0, err
	}
	_, err = s.Recv()
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return 0, err
}

// rpcRoles classifies every RPC of the services a node serves. A new RPC
// fails TestEveryRPCHasARole until it is classified here.
var rpcRoles = map[string]rpcRole{
	metadpb.Metad_CreateStream_FullMethodName: {role: roleWrite, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return version(x.metad().CreateStream(ctx, &metadpb.CreateStreamRequest{Name: uniq("s"), RequestId: uniq("r")}))
	}},
	metadpb.Metad_OpenForWrite_FullMethodName: {role: roleWrite, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return version(x.metad().OpenForWrite(ctx, &metadpb.OpenForWriteRequest{StreamId: x.stream(ctx), RequestId: uniq("r")}))
	}},
	metadpb.Metad_CommitAppend_FullMethodName: {role: roleWrite, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		id, epoch := x.opened(ctx)
		obj := x.object(ctx)
		return version(x.metad().CommitAppend(ctx, &metadpb.CommitAppendRequest{StreamId: id, WriterEpoch: epoch, End: 10,
			Object: obj, Bytes: &metadpb.ByteRange{Length: 10}, RequestId: uniq("r")}))
	}},
	metadpb.Metad_CommitObject_FullMethodName: {role: roleWrite, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		id, epoch := x.opened(ctx)
		return version(x.metad().CommitObject(ctx, &metadpb.CommitObjectRequest{Object: &metadpb.ObjectRef{Key: uniq("obj"), Identity: "v1"},
			Size: 10, Appends: []*metadpb.ObjectAppend{{StreamId: id, WriterEpoch: epoch, End: 10, Bytes: &metadpb.ByteRange{Length: 10}}},
			RequestId: uniq("r")}))
	}},
	// A publication past the committed end: the leader's state machine
	// refuses it (a deterministic rejection, after the forward).
	metadpb.Metad_PublishGeneration_FullMethodName: {role: roleWrite, want: metadpb.Reason_RECORD_OUT_OF_RANGE,
		probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
			id, epoch := x.opened(ctx)
			return version(x.metad().PublishGeneration(ctx, &metadpb.PublishGenerationRequest{StreamId: id, View: metadpb.View_TOPIC_COMPACTED,
				Generation: 1, WriterEpoch: epoch, Coverage: &metadpb.Range{End: 10}, Complete: true, RequestId: uniq("r")}))
		}},
	metadpb.Metad_RetireGeneration_FullMethodName: {role: roleWrite, want: metadpb.Reason_GENERATION_NOT_FOUND,
		probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
			return version(x.metad().RetireGeneration(ctx, &metadpb.RetireGenerationRequest{StreamId: x.stream(ctx), View: metadpb.View_COMMITTED,
				Generation: 1, RequestId: uniq("r")}))
		}},
	metadpb.Metad_Trim_FullMethodName: {role: roleWrite, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return version(x.metad().Trim(ctx, &metadpb.TrimRequest{StreamId: x.stream(ctx), RequestId: uniq("r")}))
	}},
	metadpb.Metad_Seal_FullMethodName: {role: roleWrite, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return version(x.metad().Seal(ctx, &metadpb.SealRequest{StreamId: x.stream(ctx), RequestId: uniq("r")}))
	}},
	metadpb.Metad_DeleteStream_FullMethodName: {role: roleWrite, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return version(x.metad().DeleteStream(ctx, &metadpb.DeleteStreamRequest{StreamId: x.stream(ctx), RequestId: uniq("r")}))
	}},
	metadpb.Metad_RegisterObject_FullMethodName: {role: roleWrite, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return version(x.metad().RegisterObject(ctx, &metadpb.RegisterObjectRequest{Object: &metadpb.ObjectRef{Key: uniq("obj"), Identity: "v1"},
			Size: 10, RequestId: uniq("r")}))
	}},
	metadpb.Metad_Pin_FullMethodName: {role: roleWrite, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return version(x.metad().Pin(ctx, &metadpb.PinRequest{Object: x.object(ctx), Holder: "h", Ttl: durationpb.New(time.Minute), RequestId: uniq("r")}))
	}},
	// ReleasePin reads linearizably before it proposes (a shared pin is
	// refused): a follower cut from the leader fails at the read.
	metadpb.Metad_ReleasePin_FullMethodName: {role: roleWrite, cutWant: metadpb.Reason_NO_LEADER,
		probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
			pin, err := x.setup().Pin(ctx, &metadpb.PinRequest{Object: x.object(ctx), Holder: "h", Ttl: durationpb.New(time.Minute), RequestId: uniq("r")})
			must(x.c.t, err)
			return version(x.metad().ReleasePin(ctx, &metadpb.ReleasePinRequest{PinId: pin.PinId, RequestId: uniq("r")}))
		}},
	metadpb.Metad_ReportCandidateFailure_FullMethodName: {role: roleWrite, cutWant: metadpb.Reason_NO_LEADER,
		probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
			return noVersion(x.metad().ReportCandidateFailure(ctx, &metadpb.ReportCandidateFailureRequest{
				Candidate: &metadpb.CandidateRef{Key: &metadpb.IndexKey{StreamId: x.stream(ctx), View: metadpb.View_COMMITTED}, Version: 1},
				Kind:      metadpb.FailureKind_CORRUPT, RequestId: uniq("r")}))
		}},
	// LiftQuarantine reads the record linearizably first: an absent one
	// is NOT_FOUND before anything is proposed.
	metadpb.Metad_LiftQuarantine_FullMethodName: {role: roleWrite, want: metadpb.Reason_NOT_FOUND, cutWant: metadpb.Reason_NO_LEADER,
		probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
			return version(x.metad().LiftQuarantine(ctx, &metadpb.LiftQuarantineRequest{
				Key: &metadpb.IndexKey{StreamId: x.stream(ctx), View: metadpb.View_COMMITTED}, Version: 1, RequestId: uniq("r")}))
		}},
	metadpb.Metad_DescribeStream_FullMethodName: {role: roleLinearizable, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return noVersion(x.metad().DescribeStream(ctx, &metadpb.DescribeStreamRequest{StreamId: x.stream(ctx)}))
	}},
	metadpb.Metad_ListStreams_FullMethodName: {role: roleLinearizable, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return noVersion(x.metad().ListStreams(ctx, &metadpb.ListStreamsRequest{}))
	}},
	metadpb.Metad_ListIndex_FullMethodName: {role: roleLinearizable, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return noVersion(x.metad().ListIndex(ctx, &metadpb.ListIndexRequest{StreamId: x.stream(ctx), View: metadpb.View_COMMITTED}))
	}},
	metadpb.Metad_ListEvidence_FullMethodName: {role: roleLinearizable, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return noVersion(x.metad().ListEvidence(ctx, &metadpb.ListEvidenceRequest{StreamId: x.stream(ctx)}))
	}},
	metadpb.Metad_DescribeObject_FullMethodName: {role: roleLinearizable, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return noVersion(x.metad().DescribeObject(ctx, &metadpb.DescribeObjectRequest{Key: x.object(ctx).Key}))
	}},
	metadpb.Metad_ListQuarantined_FullMethodName: {role: roleLinearizable, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return noVersion(x.metad().ListQuarantined(ctx, &metadpb.ListQuarantinedRequest{}))
	}},
	metadpb.Metad_Resolve_FullMethodName: {role: roleLinearizable, cutWant: metadpb.Reason_RESOLVE_UNAVAILABLE, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return noVersion(x.metad().Resolve(ctx, &metadpb.ResolveRequest{StreamId: x.stream(ctx), View: metadpb.View_COMMITTED}))
	}},
	// A watch starts from a linearizable read of the stream.
	metadpb.Metad_Watch_FullMethodName: {role: roleLinearizable, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		return firstOf[*metadpb.WatchEvent](x.metad().Watch(ctx, &metadpb.WatchRequest{StreamId: x.stream(ctx)}))
	}},
	metadpb.Cluster_Status_FullMethodName: {role: roleLocal, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return noVersion(x.cluster().Status(ctx, &metadpb.StatusRequest{}))
	}},
	metadpb.Cluster_Members_FullMethodName: {role: roleLocal, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return noVersion(x.cluster().Members(ctx, &metadpb.MembersRequest{}))
	}},
	// A transfer asked of a follower goes to that follower; of the
	// leader, to a follower.
	metadpb.Cluster_TransferLeadership_FullMethodName: {role: roleWrite, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		to := x.on.id
		if x.on == x.leader {
			to = x.c.followers(x.leader)[0].id
		}
		resp, err := x.c.transfer(ctx, x.on, to)
		if err == nil && resp.LeaderId != to {
			err = fmt.Errorf("leadership went to %q, not %q", resp.LeaderId, to)
		}
		return 0, err
	}},
	metadpb.Cluster_RemovePeer_FullMethodName: {role: roleWrite, want: metadpb.Reason_NOT_FOUND, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return version(x.cluster().RemovePeer(ctx, &metadpb.RemovePeerRequest{NodeId: "n9"}))
	}},
	metadpb.Cluster_Untombstone_FullMethodName: {role: roleWrite, want: metadpb.Reason_NOT_FOUND, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return version(x.cluster().Untombstone(ctx, &metadpb.UntombstoneRequest{NodeId: "n9"}))
	}},
	metadpb.Cluster_Snapshot_FullMethodName: {role: roleLinearizable, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		return firstOf[*metadpb.SnapshotChunk](x.cluster().Snapshot(ctx, &metadpb.SnapshotRequest{}))
	}},
	metadpb.Peer_Propose_FullMethodName: {role: roleLeaderOnly, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		cmd, err := proto.Marshal(&fsmpb.Command{RequestId: uniq("r"), Op: &fsmpb.Command_CreateStream{CreateStream: &fsmpb.CreateStream{Name: uniq("s")}}})
		must(x.c.t, err)
		resp, err := x.peer().Propose(ctx, &metadpb.ProposeRequest{Command: cmd})
		if err != nil {
			return 0, err
		}
		res := &fsmpb.Result{}
		must(x.c.t, proto.Unmarshal(resp.Result, res))
		return res.Version, nil
	}},
	metadpb.Peer_ReadIndex_FullMethodName: {role: roleLeaderOnly, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return noVersion(x.peer().ReadIndex(ctx, &metadpb.ReadIndexRequest{}))
	}},
	metadpb.Peer_Repair_FullMethodName: {role: roleLeaderOnly, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return noVersion(x.peer().Repair(ctx, &metadpb.RepairRequest{StreamId: x.stream(ctx)}))
	}},
	metadpb.Peer_ConfirmLeadership_FullMethodName: {role: roleLocal, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return noVersion(x.peer().ConfirmLeadership(ctx, &metadpb.ConfirmLeadershipRequest{Term: x.leader.store.Term(), LeaderId: x.leader.id}))
	}},
	metadpb.Peer_LocalStatus_FullMethodName: {role: roleLocal, probe: func(ctx context.Context, x *probeEnv) (uint64, error) {
		return noVersion(x.peer().LocalStatus(ctx, &metadpb.LocalStatusRequest{}))
	}},
}

// servedMethods lists every RPC of the services a node registers, from
// their descriptors.
func servedMethods() []string {
	var out []string
	for _, sd := range []grpc.ServiceDesc{metadpb.Metad_ServiceDesc, metadpb.Cluster_ServiceDesc, metadpb.Peer_ServiceDesc} {
		for _, m := range sd.Methods {
			out = append(out, "/"+sd.ServiceName+"/"+m.MethodName)
		}
		for _, s := range sd.Streams {
			out = append(out, "/"+sd.ServiceName+"/"+s.StreamName)
		}
	}
	slices.Sort(out)
	return out
}

// TestEveryRPCHasARole: the table above names every RPC the descriptors
// list, and nothing else.
func TestEveryRPCHasARole(t *testing.T) {
	served := servedMethods()
	for _, m := range served {
		if _, ok := rpcRoles[m]; !ok {
			t.Errorf("%s has no role in rpcRoles: classify it (write, leader-only, linearizable read, local) with a probe", m)
		}
	}
	for m := range rpcRoles {
		if !slices.Contains(served, m) {
			t.Errorf("rpcRoles lists %s, which no service serves", m)
		}
	}
}

// info returns the ErrorInfo of a status error, or nil.
func info(err error) *errdetails.ErrorInfo {
	st, _ := status.FromError(err)
	for _, d := range st.Details() {
		if i, ok := d.(*errdetails.ErrorInfo); ok {
			return i
		}
	}
	return nil
}

// TestEveryRPCKeepsItsRole calls every RPC on a follower and on the
// leader of an in-process cluster, then on a follower the leader cannot
// be reached from, and checks its role holds:
//   - a write asked of a follower is committed by the leader (a new entry,
//     applied there) and answers as the leader does; cut from the leader,
//     the follower says LEADERSHIP_LOST, indeterminate, naming the leader;
//   - a leader-only call on a follower is NOT_LEADER naming the leader;
//   - a linearizable read on a follower sees the write the leader
//     acknowledged just before; cut from the leader, it fails NO_LEADER;
//   - a local call answers on a follower cut from the leader.
func TestEveryRPCKeepsItsRole(t *testing.T) {
	c := newInprocCluster(t, nil)
	c.raiseLevel()
	parent := c.t
	defer func() { c.t = parent }()
	for _, m := range servedMethods() {
		r, ok := rpcRoles[m]
		if !ok {
			continue // TestEveryRPCHasARole names it
		}
		t.Run(strings.TrimPrefix(m, "/metad.v1."), func(t *testing.T) {
			c.t = t
			ctx := c.ctx()
			l := c.leader()
			f := c.followers(l)[0]
			c.checkRole(ctx, m, r, &probeEnv{c: c, on: f, leader: l}, "follower")
			l = c.leader()
			c.checkRole(ctx, m, r, &probeEnv{c: c, on: l, leader: l}, "leader")
			l = c.leader()
			f = c.followers(l)[0]
			heal := c.cut(l)
			defer heal()
			c.checkCut(ctx, m, r, &probeEnv{c: c, on: f, leader: l})
		})
	}
}

// checkRole makes one healthy call and checks the outcome its role says.
func (c *inprocCluster) checkRole(ctx context.Context, m string, r rpcRole, x *probeEnv, where string) {
	t := c.t
	t.Helper()
	var written uint64
	if r.role == roleLinearizable && x.on != x.leader {
		// A write acknowledged by the leader just before the read.
		resp, err := metad(x.leader.client).CreateStream(ctx, &metadpb.CreateStreamRequest{Name: uniq("s"), RequestId: uniq("r")})
		must(t, err)
		written = resp.Version
	}
	before := x.leader.store.CommitIndex()
	v, err := r.probe(ctx, x)
	switch r.role {
	case roleLeaderOnly:
		if x.on != x.leader {
			if i := info(err); reasons.FromError(err) != metadpb.Reason_NOT_LEADER || i.Metadata["leader_id"] != x.leader.id {
				t.Fatalf("%s on a follower: %v; want NOT_LEADER naming the leader %s", m, err, x.leader.id)
			}
			return
		}
	case roleLinearizable:
		if applied := x.on.store.AppliedIndex(); err == nil && applied < written {
			t.Fatalf("%s on the %s answered at applied index %d, before the write at %d the leader acknowledged", m, where, applied, written)
		}
	}
	if got := reasons.FromError(err); got != r.want || (r.want == metadpb.Reason_REASON_UNSPECIFIED && err != nil) {
		t.Fatalf("%s on the %s: %v (reason %v); want %v", m, where, err, got, r.want)
	}
	if r.role == roleWrite && err == nil && v != 0 && v <= before {
		t.Fatalf("%s on the %s: version %d, not a new entry past the leader's commit index %d", m, where, v, before)
	}
}

// checkCut makes the call on a follower the leader is unreachable from.
func (c *inprocCluster) checkCut(ctx context.Context, m string, r rpcRole, x *probeEnv) {
	t := c.t
	t.Helper()
	want := r.cutWant
	if want == metadpb.Reason_REASON_UNSPECIFIED {
		want = map[role]metadpb.Reason{roleWrite: metadpb.Reason_LEADERSHIP_LOST, roleLeaderOnly: metadpb.Reason_NOT_LEADER,
			roleLinearizable: metadpb.Reason_NO_LEADER}[r.role]
	}
	_, err := r.probe(ctx, x)
	got := reasons.FromError(err)
	if got != want || (want == metadpb.Reason_REASON_UNSPECIFIED && err != nil) {
		t.Fatalf("%s on a follower cut from the leader: %v (reason %v); want %v", m, err, got, want)
	}
	if want == metadpb.Reason_LEADERSHIP_LOST {
		if i := info(err); i.Metadata["definite"] != "false" || i.Metadata["leader_id"] != x.leader.id || i.Metadata["leader_addr"] == "" {
			t.Fatalf("%s unanswered by the leader: metadata %v; want definite=false naming the leader %s", m, i.Metadata, x.leader.id)
		}
	}
}
