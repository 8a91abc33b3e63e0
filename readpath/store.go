package readpath

import (
	"context"
	"fmt"
	"reflect"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/raftstore"
)

// Store is this node's Raft store as one of its readers declares it. The
// resolver, repair and gc each name the part of the state they read as
// their own State interface, which *fsm.Machine satisfies, and take a
// store whose Read hands them that State; Store[resolver.State],
// Store[repair.State] and Store[gc.State] are that one adapter, instead
// of one copy of it per reader.
//
// Read is linearizable (raftstore.Store.Read). Propose goes to this node's
// Raft, which refuses it unless this node leads: repair and gc run only
// where they lead, and the resolver proposes through api's forwarding
// instead (Deps.Propose).
type Store[S any] struct {
	raft *raftstore.Store
}

// NewStore returns raft as a Store of State S. It panics if *fsm.Machine
// does not satisfy S: a wiring mistake, caught where the node starts
// rather than at the first read.
func NewStore[S any](raft *raftstore.Store) Store[S] {
	if _, ok := any((*fsm.Machine)(nil)).(S); !ok {
		panic(fmt.Sprintf("readpath: *fsm.Machine does not satisfy %v", reflect.TypeFor[S]()))
	}
	return Store[S]{raft: raft}
}

// Read runs fn on state that reflects every write acknowledged before Read
// was called.
func (s Store[S]) Read(ctx context.Context, fn func(S)) error {
	read := func(m *fsm.Machine) error {
		fn(any(m).(S)) // cannot fail: NewStore checked it
		return nil
	}
	return s.raft.Read(ctx, read)
}

// Propose proposes cmd to this node's Raft; it fails with a
// *raftstore.NotLeaderError on a follower.
func (s Store[S]) Propose(ctx context.Context, cmd *fsmpb.Command) (*fsmpb.Result, error) {
	return s.raft.Propose(ctx, cmd)
}
