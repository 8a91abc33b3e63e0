package api

import (
	"context"
	"slices"
	"sort"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/raftstore"
)

// Status implements the Cluster service: every server of the Raft
// configuration describes itself; one that cannot be reached is shown as
// UNREACHABLE with the error, never left out.
func (s *Server) Status(ctx context.Context, req *metadpb.StatusRequest) (*metadpb.StatusResponse, error) {
	servers, err := s.store.Configuration()
	if err != nil {
		return nil, toStatus(err)
	}
	nodes := make([]*metadpb.NodeStatus, len(servers))
	var wg sync.WaitGroup
	for i, srv := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nodes[i] = s.nodeStatus(ctx, srv, req.WithHash)
		}()
	}
	wg.Wait()
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].NodeId < nodes[j].NodeId })
	resp := &metadpb.StatusResponse{Nodes: nodes}
	resp.LeaderId, _ = s.store.Leader()
	for _, srv := range servers {
		if srv.Suffrage == raftstore.Voter {
			resp.Voters++
		}
	}
	resp.Quorum = resp.Voters/2 + 1
	resp.FailureTolerance = resp.Voters - resp.Quorum
	resp.ClusterFeatureLevel, _ = s.clusterLevel(ctx)
	resp.Tombstones = s.tombstones()
	resp.ClusterId = s.stateClusterID()
	if u := s.objectStore.URL; u != "" {
		resp.ObjectStore = &metadpb.ObjectStoreInfo{
			Url: u, S3Endpoint: s.objectStore.S3.Endpoint, S3Region: s.objectStore.S3.Region, S3PathStyle: s.objectStore.S3.PathStyle,
		}
	}
	return resp, nil
}

// peerStatusTimeout bounds a peer's answer to a Status without the hash.
const peerStatusTimeout = 2 * time.Second

func (s *Server) nodeStatus(ctx context.Context, srv raftstore.Server, withHash bool) *metadpb.NodeStatus {
	if srv.ID == s.store.ID() {
		return s.localStatus(withHash)
	}
	if !withHash {
		// A live peer answers its indexes at once. The state hash it
		// computes over its whole state, seconds at millions of records:
		// bounded by the call's own deadline only (2 s made every peer of
		// a 2M-record cluster UNREACHABLE).
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, peerStatusTimeout)
		defer cancel()
	}
	st, err := s.peers.NodeStatus(ctx, srv.ID, withHash)
	if err != nil {
		return &metadpb.NodeStatus{NodeId: srv.ID, RaftAddr: srv.Address, State: "UNREACHABLE",
			Voter: srv.Suffrage == raftstore.Voter, Error: err.Error()}
	}
	st.Voter = srv.Suffrage == raftstore.Voter
	return st
}

func (s *Server) localStatus(withHash bool) *metadpb.NodeStatus {
	st := s.store.Status()
	ns := &metadpb.NodeStatus{
		NodeId: st.NodeID, RaftAddr: st.Address, State: st.State, Voter: st.Voter, Term: st.Term,
		LastIndex: st.LastLogIndex, CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex, LeaderId: st.LeaderID,
		FeatureLevel: fsm.MaxLevel, Incarnation: s.incarnation, ClusterId: s.store.ClusterID(),
		RaftLogStore: string(st.LogStore), Disk: st.Disk,
	}
	if s.peers != nil {
		ns.GrpcAddr = s.peers.addrOf(st.NodeID)
	}
	if !st.LastContact.IsZero() {
		ns.LastContact = timestamppb.New(st.LastContact)
	}
	if p, err := s.store.Progress(); err == nil {
		ns.LastLogTerm, ns.SinceLastContact = p.LastTerm, durationpb.New(p.LastContact)
	}
	if withHash {
		sum, applied, err := s.store.StateHash()
		if err != nil {
			ns.Error = err.Error()
		} else {
			ns.StateHash, ns.AppliedIndex = sum[:], applied
		}
	}
	return ns
}

// LocalStatus implements the Peer service.
func (s *Server) LocalStatus(ctx context.Context, req *metadpb.LocalStatusRequest) (*metadpb.NodeStatus, error) {
	return s.localStatus(req.WithHash), nil
}

// Members implements the Cluster service.
func (s *Server) Members(ctx context.Context, req *metadpb.MembersRequest) (*metadpb.MembersResponse, error) {
	members := s.peers.members()
	if !req.TombstonesOnly {
		s.askIncarnations(ctx, members)
	}
	return &metadpb.MembersResponse{Members: members, Tombstones: s.tombstones(), ClusterId: s.store.ClusterID()}, nil
}

// incarnationAskTimeout bounds how long Members waits for the members it
// asks for their incarnation: one that does not say in time is listed
// without it.
const incarnationAskTimeout = time.Second

// askIncarnations fills in the incarnation of every alive member this node
// has not learned it of, by asking the member (LocalStatus), all at once.
// Only a leader learns incarnations, in its reconcile probes; a follower,
// or a leader before its first probe, knows none.
func (s *Server) askIncarnations(ctx context.Context, members []*metadpb.Member) {
	ctx, cancel := context.WithTimeout(ctx, incarnationAskTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, m := range members {
		if m.Incarnation != "" || m.Status != "alive" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if st, err := s.peers.NodeStatus(ctx, m.NodeId, false); err == nil {
				m.Incarnation = st.Incarnation // each goroutine writes its own member
				s.removals.LearnIncarnation(m.NodeId, st.Incarnation)
			}
		}()
	}
	wg.Wait()
}

// stateClusterID is the cluster id of this node's applied state.
func (s *Server) stateClusterID() string {
	var id string
	_ = s.store.ReadLocal(func(m *fsm.Machine) error {
		id = m.ClusterID()
		return nil
	})
	return id
}

// TransferLeadership implements the Cluster service (on the leader).
func (s *Server) TransferLeadership(ctx context.Context, req *metadpb.TransferLeadershipRequest) (*metadpb.TransferLeadershipResponse, error) {
	if !s.store.IsLeader() {
		conn, err := s.leaderConn()
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
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// RemovePeer implements the Cluster service (on the leader).
func (s *Server) RemovePeer(ctx context.Context, req *metadpb.RemovePeerRequest) (*metadpb.RemovePeerResponse, error) {
	if req.NodeId == "" {
		return nil, invalidArgument("node_id", "required")
	}
	if !s.store.IsLeader() {
		conn, err := s.leaderConn()
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
	tombstoned, inc, err := s.tombstoneBeforeRemoval(ctx, req.NodeId)
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
