package api

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/clock"
	"github.com/metad/metad/peer"
	"github.com/metad/metad/raftstore"
)

// Status implements the Cluster service: every server of the Raft
// configuration describes itself; one that cannot be reached is shown as
// UNREACHABLE with the error, never left out (peer.Node.Statuses).
func (s *Server) Status(ctx context.Context, req *metadpb.StatusRequest) (*metadpb.StatusResponse, error) {
	servers, err := s.store.Configuration()
	if err != nil {
		return nil, toStatus(err)
	}
	resp := &metadpb.StatusResponse{Nodes: s.peer.Statuses(ctx, servers, req.WithHash)}
	resp.LeaderId, _ = s.store.Leader()
	for _, srv := range servers {
		if srv.Suffrage == raftstore.Voter {
			resp.Voters++
		}
	}
	resp.Quorum = resp.Voters/2 + 1
	resp.FailureTolerance = resp.Voters - resp.Quorum
	resp.ClusterFeatureLevel, _ = s.peer.ClusterLevel()
	resp.Tombstones = s.peer.Tombstones()
	resp.ClusterId = s.peer.StateClusterID()
	if u := s.objectStore.URL; u != "" {
		resp.ObjectStore = &metadpb.ObjectStoreInfo{
			Url: u, S3Endpoint: s.objectStore.S3.Endpoint, S3Region: s.objectStore.S3.Region, S3PathStyle: s.objectStore.S3.PathStyle,
		}
	}
	return resp, nil
}

// Members implements the Cluster service.
func (s *Server) Members(ctx context.Context, req *metadpb.MembersRequest) (*metadpb.MembersResponse, error) {
	members := s.peer.Client().Members()
	if !req.TombstonesOnly {
		s.peer.AskIncarnations(ctx, members)
	}
	return &metadpb.MembersResponse{Members: members, Tombstones: s.peer.Tombstones(), ClusterId: s.store.ClusterID()}, nil
}

// TransferLeadership implements the Cluster service (on the leader).
func (s *Server) TransferLeadership(ctx context.Context, req *metadpb.TransferLeadershipRequest) (*metadpb.TransferLeadershipResponse, error) {
	if !s.store.IsLeader() {
		var resp *metadpb.TransferLeadershipResponse
		err := s.onLeader(ctx, func(c metadpb.ClusterClient) (err error) {
			resp, err = c.TransferLeadership(ctx, req)
			return err
		})
		return resp, err
	}
	old, term := s.store.ID(), s.store.Term()
	if err := s.store.TransferLeadership(ctx, req.ToNodeId); err != nil {
		return nil, toStatus(err)
	}
	// Answer with the new leader once this node has heard of it. Raft
	// may abandon the transfer after this node stepped down (the target
	// never won its election) and elect this node again: it then leads
	// at a newer term, and no other leader is coming.
	for {
		if id, _ := s.store.Leader(); id != "" && id != old {
			return &metadpb.TransferLeadershipResponse{LeaderId: id}, nil
		}
		if now := s.store.Term(); now > term && s.store.IsLeader() {
			return nil, toStatus(fmt.Errorf("%w: to %q: raft abandoned it and %s leads again at term %d",
				raftstore.ErrTransferFailed, req.ToNodeId, old, now))
		}
		select {
		case <-ctx.Done():
			return nil, toStatus(ctx.Err())
		case <-clock.After(s.clock, 20*time.Millisecond):
		}
	}
}

// onLeader makes a Cluster call on the leader, for the calls only the
// leader serves. A call the leader does not answer (unreachable, cut
// off) is peer.Unanswered: indeterminate, naming the leader asked; one
// cut off by ctx is DEADLINE_EXCEEDED (or CANCELLED), indeterminate too.
func (s *Server) onLeader(ctx context.Context, call func(metadpb.ClusterClient) error) error {
	id, addr := s.store.Leader()
	conn, err := s.peer.LeaderConn()
	if err != nil {
		return toStatus(err)
	}
	if err := call(metadpb.NewClusterClient(conn)); err != nil {
		return toStatus(peer.UnansweredCall(ctx, err, id, addr))
	}
	return nil
}

// RemovePeer implements the Cluster service (on the leader).
func (s *Server) RemovePeer(ctx context.Context, req *metadpb.RemovePeerRequest) (*metadpb.RemovePeerResponse, error) {
	if req.NodeId == "" {
		return nil, invalidArgument("node_id", "required")
	}
	if !s.store.IsLeader() {
		var resp *metadpb.RemovePeerResponse
		err := s.onLeader(ctx, func(c metadpb.ClusterClient) (err error) {
			resp, err = c.RemovePeer(ctx, req)
			return err
		})
		return resp, err
	}
	servers, err := s.store.Configuration()
	if err != nil {
		return nil, toStatus(err)
	}
	if !slices.ContainsFunc(servers, func(srv raftstore.Server) bool { return srv.ID == req.NodeId }) {
		return nil, notFound("node_id", "no server %q in the configuration", req.NodeId)
	}
	if onlyVoter(servers, req.NodeId) {
		_, err := s.store.RemoveServer(ctx, req.NodeId) // refused (LAST_VOTER), and no tombstone left
		return nil, toStatus(err)
	}
	// The tombstone first: once the server is out of the configuration,
	// the reconcile loop would otherwise re-add it while alive in gossip.
	tombstoned, inc, err := s.peer.TombstoneBeforeRemoval(ctx, req.NodeId)
	if err != nil {
		return nil, toStatus(err)
	}
	// Leadership may have moved since the check above: the store then
	// says NOT_LEADER with the hint, like any other call.
	index, err := s.store.RemoveServer(ctx, req.NodeId)
	if err != nil {
		return nil, toStatus(err)
	}
	return &metadpb.RemovePeerResponse{Version: index, Tombstoned: tombstoned, Incarnation: inc}, nil
}

// onlyVoter reports whether id is the configuration's only voter, which
// raft cannot remove.
func onlyVoter(servers []raftstore.Server, id string) bool {
	voters, target := 0, false
	for _, srv := range servers {
		if srv.Suffrage == raftstore.Voter {
			voters++
			target = target || srv.ID == id
		}
	}
	return target && voters == 1
}

// Untombstone implements the Cluster service (on the leader): the
// tombstone policy is package peer's.
func (s *Server) Untombstone(ctx context.Context, req *metadpb.UntombstoneRequest) (*metadpb.UntombstoneResponse, error) {
	if req.NodeId == "" {
		return nil, invalidArgument("node_id", "required")
	}
	if !s.store.IsLeader() {
		var resp *metadpb.UntombstoneResponse
		err := s.onLeader(ctx, func(c metadpb.ClusterClient) (err error) {
			resp, err = c.Untombstone(ctx, req)
			return err
		})
		return resp, err
	}
	version, err := s.peer.Untombstone(ctx, req.NodeId)
	var none *peer.NoRemovalError
	var rejected *peer.RejectedError
	switch {
	case errors.As(err, &none):
		return nil, notFound("node_id", "%s", none.Message)
	case errors.As(err, &rejected):
		return nil, invalidArgument("node_id", "%s", rejected.Message)
	case err != nil:
		return nil, toStatus(err)
	}
	return &metadpb.UntombstoneResponse{Version: version}, nil
}
