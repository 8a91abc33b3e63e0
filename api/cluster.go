package api

import (
	"context"
	"errors"
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
		conn, err := s.peer.LeaderConn()
		if err != nil {
			return nil, toStatus(err)
		}
		return metadpb.NewClusterClient(conn).TransferLeadership(ctx, req)
	}
	old := s.store.ID()
	if err := s.store.TransferLeadership(ctx, req.ToNodeId); err != nil {
		return nil, toStatus(err)
	}
	// Answer with the new leader once this node has heard of it.
	for {
		if id, _ := s.store.Leader(); id != "" && id != old {
			return &metadpb.TransferLeadershipResponse{LeaderId: id}, nil
		}
		select {
		case <-ctx.Done():
			return nil, toStatus(ctx.Err())
		case <-clock.After(s.clock, 20*time.Millisecond):
		}
	}
}

// RemovePeer implements the Cluster service (on the leader).
func (s *Server) RemovePeer(ctx context.Context, req *metadpb.RemovePeerRequest) (*metadpb.RemovePeerResponse, error) {
	if req.NodeId == "" {
		return nil, invalidArgument("node_id", "required")
	}
	if !s.store.IsLeader() {
		conn, err := s.peer.LeaderConn()
		if err != nil {
			return nil, toStatus(err)
		}
		return metadpb.NewClusterClient(conn).RemovePeer(ctx, req)
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
		conn, err := s.peer.LeaderConn()
		if err != nil {
			return nil, toStatus(err)
		}
		return metadpb.NewClusterClient(conn).Untombstone(ctx, req)
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
