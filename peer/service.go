package peer

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/raftstore"
	"github.com/metad/metad/repair"
)

// service is the Peer service's server (a type apart from Node, whose
// Propose is the forwarding one). Every failure goes out through
// Node.toStatus, api's error table.
type service struct {
	metadpb.UnimplementedPeerServer
	n *Node
}

// Propose implements the Peer service: a proposal forwarded by a follower.
// It is never forwarded again, so a stale leader hint cannot loop. Bytes
// that are no Command fail with raftstore.ErrBadCommand (INVALID_ARGUMENT,
// field "command", in api's table).
func (s *service) Propose(ctx context.Context, req *metadpb.ProposeRequest) (*metadpb.ProposeResponse, error) {
	res, err := s.n.store.ProposeEncoded(ctx, req.Command)
	if err != nil {
		return nil, s.n.toStatus(err)
	}
	data, err := proto.Marshal(res)
	if err != nil {
		return nil, s.n.toStatus(err)
	}
	return &metadpb.ProposeResponse{Result: data}, nil
}

// ReadIndex implements the Peer service.
func (s *service) ReadIndex(ctx context.Context, _ *metadpb.ReadIndexRequest) (*metadpb.ReadIndexResponse, error) {
	idx, err := s.n.store.ReadIndex(ctx)
	if err != nil {
		return nil, s.n.toStatus(err)
	}
	return &metadpb.ReadIndexResponse{Index: idx}, nil
}

// ConfirmLeadership implements the Peer service.
func (s *service) ConfirmLeadership(_ context.Context, req *metadpb.ConfirmLeadershipRequest) (*metadpb.ConfirmLeadershipResponse, error) {
	st := s.n.store
	return &metadpb.ConfirmLeadershipResponse{Ok: st.ConfirmLeadership(req.Term, req.LeaderId), Term: st.Term()}, nil
}

// Repair implements the Peer service: a repair asked for by a resolve on
// another node, run by this (leader's) repair loop. Its failures are all
// retryable from the resolver's point of view, which reports them in its
// diagnostic; repair's not-leader is raftstore's.
func (s *service) Repair(ctx context.Context, req *metadpb.RepairRequest) (*metadpb.RepairResponse, error) {
	if err := s.n.repair.Repair(ctx, req.StreamId, req.Offset); err != nil {
		if errors.Is(err, repair.ErrNotLeader) {
			err = s.notLeader(err)
		}
		return nil, s.n.toStatus(err)
	}
	return &metadpb.RepairResponse{}, nil
}

// notLeader is repair's not-leader as the store says it: NOT_LEADER
// naming the leader this node knows, so the caller goes there, or
// NO_LEADER when it knows none.
func (s *service) notLeader(err error) error {
	st := s.n.store
	id, addr := st.Leader()
	if id == "" || id == st.ID() {
		return fmt.Errorf("%w: %w", raftstore.ErrNoLeader, err)
	}
	return fmt.Errorf("%w: %w", &raftstore.NotLeaderError{LeaderID: id, LeaderAddr: addr}, err)
}

// LocalStatus implements the Peer service: this node describes itself.
func (s *service) LocalStatus(_ context.Context, req *metadpb.LocalStatusRequest) (*metadpb.NodeStatus, error) {
	return s.n.LocalStatus(req.WithHash), nil
}
