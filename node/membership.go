package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/metad/metad/membership"
	"github.com/metad/metad/raftstore"
)

// membershipRaft is the raft store as membership drives it. membership
// declares the interface in its own types and may not import raftstore,
// nor raftstore membership; this adapter, in the package that wires both,
// only converts types.
type membershipRaft struct{ s *raftstore.Store }

var _ membership.Raft = membershipRaft{}

func (m membershipRaft) IsLeader() bool { return m.s.IsLeader() }

func (m membershipRaft) Configuration() ([]membership.Server, error) {
	servers, err := m.s.Configuration()
	if err != nil {
		return nil, err
	}
	out := make([]membership.Server, len(servers))
	for i, sv := range servers {
		out[i] = membership.Server{ID: sv.ID, Address: sv.Address, Voter: sv.Suffrage == raftstore.Voter}
	}
	return out, nil
}

func (m membershipRaft) AddNonvoter(ctx context.Context, id, address string) (uint64, error) {
	return m.s.AddNonvoter(ctx, id, address)
}

func (m membershipRaft) AddVoter(ctx context.Context, id, address string) (uint64, error) {
	return m.s.AddVoter(ctx, id, address)
}

func (m membershipRaft) RemoveServer(ctx context.Context, id string) (uint64, error) {
	return m.s.RemoveServer(ctx, id)
}

func (m membershipRaft) Stats() (membership.ServerStats, error) {
	p, err := m.s.Progress()
	return membership.ServerStats{LastContact: p.LastContact, LastTerm: p.LastTerm, LastIndex: p.LastIndex}, err
}

// bootstrap is membership's Hooks.Bootstrap: every server a voter.
func (m membershipRaft) bootstrap(servers []membership.Server) error {
	out := make([]raftstore.Server, len(servers))
	for i, s := range servers {
		out[i] = raftstore.Server{ID: s.ID, Address: s.Address, Suffrage: raftstore.Voter}
	}
	err := m.s.Bootstrap(out)
	if errors.Is(err, raftstore.ErrAlreadyBootstrapped) {
		return fmt.Errorf("%w: %w", membership.ErrAlreadyBootstrapped, err)
	}
	return err
}
