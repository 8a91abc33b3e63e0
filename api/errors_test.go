package api

import (
	"fmt"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/peer"
	"github.com/metad/metad/raftstore"
)

// TestClusterChangeErrorsAreClassified: the errors a configuration change
// or leadership transfer gets from the store, and the node-to-node
// refusals of package peer, leave as definite, named refusals — a follower's NOT_LEADER with the leader hint, the operator
// mistakes as FailedPrecondition naming the field — never INTERNAL.
func TestClusterChangeErrorsAreClassified(t *testing.T) {
	cases := []struct {
		err    error
		code   codes.Code
		reason metadpb.Reason
		field  string
		meta   map[string]string
	}{
		{&raftstore.NotLeaderError{LeaderID: "n1", LeaderAddr: "10.0.0.1:7421"}, codes.Unavailable, metadpb.Reason_NOT_LEADER, "",
			map[string]string{"leader_id": "n1", "leader_addr": "10.0.0.1:7421"}},
		{fmt.Errorf("%w: \"n2\" is already the leader", raftstore.ErrAlreadyLeader), codes.FailedPrecondition, metadpb.Reason_ALREADY_LEADER, "to_node_id", nil},
		{fmt.Errorf("%w: \"n2\" is the only voter", raftstore.ErrLastVoter), codes.FailedPrecondition, metadpb.Reason_LAST_VOTER, "node_id", nil},
		{fmt.Errorf("%w: remove n3: busy", raftstore.ErrConfigurationRefused), codes.Aborted, metadpb.Reason_CONFIGURATION_REFUSED, "", nil},
		{fmt.Errorf("%w: \"n9\"", raftstore.ErrUnknownServer), codes.NotFound, metadpb.Reason_NOT_FOUND, "", nil},
		// The node-to-node refusals (package peer) go through the same table.
		{fmt.Errorf("%w: not a Command", raftstore.ErrBadCommand), codes.InvalidArgument, metadpb.Reason_INVALID_ARGUMENT, "command", nil},
		{&peer.ClusterIDMismatchError{Method: metadpb.Peer_ReadIndex_FullMethodName, ClusterID: "aa", CallerID: "bb"},
			codes.FailedPrecondition, metadpb.Reason_CLUSTER_ID_MISMATCH, "",
			map[string]string{"method": metadpb.Peer_ReadIndex_FullMethodName, "cluster_id": "aa", "caller_cluster_id": "bb"}},
	}
	for _, c := range cases {
		st, _ := status.FromError(toStatus(c.err))
		var info *errdetails.ErrorInfo
		for _, d := range st.Details() {
			if i, ok := d.(*errdetails.ErrorInfo); ok {
				info = i
			}
		}
		if st.Code() != c.code || info == nil || info.Reason != c.reason.String() || info.Metadata["definite"] != "true" ||
			info.Metadata["field"] != c.field {
			t.Errorf("%v: %v %v, want a definite %v %s naming %q", c.err, st.Code(), info, c.code, c.reason, c.field)
			continue
		}
		for k, v := range c.meta {
			if info.Metadata[k] != v {
				t.Errorf("%v: metadata %s=%q, want %q", c.err, k, info.Metadata[k], v)
			}
		}
	}
}

// TestWrappedStatusKeepsTheWrappersClass: an error that wraps a status
// (a leader's answer) inside a sentinel of the layers below is classified
// by the sentinel, not passed off as the status inside; a wrapped status
// no row names keeps the status inside (code, reason), with the wrapper's
// message.
func TestWrappedStatusKeepsTheWrappersClass(t *testing.T) {
	inner := status.Error(codes.DeadlineExceeded, "transport: deadline")
	st, _ := status.FromError(toStatus(fmt.Errorf("%w: %w", raftstore.ErrNotReady, inner)))
	if info := errorInfo(st); st.Code() != codes.Unavailable || info == nil || info.Reason != metadpb.Reason_NOT_READY.String() {
		t.Fatalf("ErrNotReady around a bare status: %v %v; want NOT_READY", st.Code(), info)
	}
	leader := fail(metadpb.Reason_NOT_LEADER, "not the leader", "")
	wrapped := fmt.Errorf("%w: %w", peer.ErrTooManyForwards, leader)
	st, _ = status.FromError(toStatus(wrapped))
	if info := errorInfo(st); info == nil || info.Reason != metadpb.Reason_NOT_LEADER.String() || st.Message() != wrapped.Error() {
		t.Fatalf("ErrTooManyForwards: %v %q; want the leader's NOT_LEADER with the wrapper's message", info, st.Message())
	}
}

// TestUnansweredIsIndeterminateLeadershipLost: a call the leader never
// answered is LEADERSHIP_LOST, not definite, naming the leader asked.
func TestUnansweredIsIndeterminateLeadershipLost(t *testing.T) {
	err := peer.Unanswered(status.Error(codes.Unavailable, "connection refused"), "n2", "127.0.0.1:9")
	st, _ := status.FromError(toStatus(err))
	info := errorInfo(st)
	if st.Code() != codes.Unavailable || info == nil || info.Reason != metadpb.Reason_LEADERSHIP_LOST.String() ||
		info.Metadata["definite"] != "false" || info.Metadata["leader_id"] != "n2" || info.Metadata["leader_addr"] != "127.0.0.1:9" {
		t.Fatalf("unanswered: %v %v; want an indeterminate LEADERSHIP_LOST naming n2", st.Code(), info)
	}
}

func errorInfo(st *status.Status) *errdetails.ErrorInfo {
	for _, d := range st.Details() {
		if i, ok := d.(*errdetails.ErrorInfo); ok {
			return i
		}
	}
	return nil
}
