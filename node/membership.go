package node

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/metad/metad/membership"
	"github.com/metad/metad/raftstore"
)

// membershipRaft is the raft store as membership drives it. membership
// declares the interface in its own types and may not import raftstore,
// nor raftstore membership; this adapter, in the package that wires both,
// converts types. Membership starts before the store is open (opening
// restores the latest snapshot, minutes for a large state, and the node
// announces itself in gossip meanwhile), so the store is set later; until
// then the adapter answers "not leader" and errOpening.
type membershipRaft struct{ ref *storeRef }

// storeRef is the raft store once open.
type storeRef struct {
	p atomic.Pointer[raftstore.Store]
}

// errOpening: the raft store is still opening (restoring its snapshot).
var errOpening = fmt.Errorf("node: %w", membership.ErrRaftOpening)

var _ membership.Raft = membershipRaft{}

func (m membershipRaft) store() (*raftstore.Store, error) {
	if s := m.ref.p.Load(); s != nil {
		return s, nil
	}
	return nil, errOpening
}

func (m membershipRaft) IsLeader() bool {
	s, err := m.store()
	return err == nil && s.IsLeader()
}

func (m membershipRaft) Configuration() ([]membership.Server, error) {
	st, err := m.store()
	if err != nil {
		return nil, err
	}
	servers, err := st.Configuration()
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
	s, err := m.store()
	if err != nil {
		return 0, err
	}
	return s.AddNonvoter(ctx, id, address)
}

func (m membershipRaft) AddVoter(ctx context.Context, id, address string) (uint64, error) {
	s, err := m.store()
	if err != nil {
		return 0, err
	}
	return s.AddVoter(ctx, id, address)
}

func (m membershipRaft) RemoveServer(ctx context.Context, id string) (uint64, error) {
	s, err := m.store()
	if err != nil {
		return 0, err
	}
	return s.RemoveServer(ctx, id)
}

func (m membershipRaft) Stats() (membership.ServerStats, error) {
	s, err := m.store()
	if err != nil {
		return membership.ServerStats{}, err
	}
	p, err := s.Progress()
	return membership.ServerStats{LastContact: p.LastContact, LastTerm: p.LastTerm, LastIndex: p.LastIndex}, err
}

// hasState is membership's Hooks.HasState: the open store's answer, or
// before it is open the data dir's (read at start).
func (m membershipRaft) hasState(before bool) func() bool {
	return func() bool {
		if s, err := m.store(); err == nil {
			return s.HasState()
		}
		return before
	}
}

// bootstrap is membership's Hooks.Bootstrap: every server a voter.
func (m membershipRaft) bootstrap(servers []membership.Server) error {
	out := make([]raftstore.Server, len(servers))
	for i, s := range servers {
		out[i] = raftstore.Server{ID: s.ID, Address: s.Address, Suffrage: raftstore.Voter}
	}
	s, err := m.store()
	if err != nil {
		return err
	}
	err = s.Bootstrap(out)
	if errors.Is(err, raftstore.ErrAlreadyBootstrapped) {
		return fmt.Errorf("%w: %w", membership.ErrAlreadyBootstrapped, err)
	}
	return err
}
