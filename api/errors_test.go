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
