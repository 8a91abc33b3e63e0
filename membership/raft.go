package membership

import (
	"context"
	"errors"
)

// Raft is what the agent needs from this node's raft, in this package's
// own types: membership imports neither hashicorp/raft nor raftstore
// (raftstore is the one owner of raft). node adapts *raftstore.Store to
// it; tests use a fake, or an adapter over an in-memory hashicorp/raft.
//
// Changes are unconditional (raft's prevIndex 0): raft v1.7.3 reports no
// configuration index to plan against. The agent applies one change per
// round and plans the next from a fresh configuration, and raft accepts
// only one uncommitted configuration change at a time.
type Raft interface {
	// IsLeader tells whether this node leads: reconcile runs only then.
	IsLeader() bool
	// Configuration gives the latest configuration (possibly not yet
	// committed).
	Configuration() ([]Server, error)
	// AddNonvoter adds a server as a non-voter, or moves one to a new
	// address (a voter stays a voter); it returns the index of the
	// configuration entry once committed.
	AddNonvoter(ctx context.Context, id, address string) (uint64, error)
	// AddVoter adds a server as a voter, promotes a non-voter, or moves a
	// voter to a new address.
	AddVoter(ctx context.Context, id, address string) (uint64, error)
	// RemoveServer removes a server from the configuration.
	RemoveServer(ctx context.Context, id string) (uint64, error)
	// Stats gives this node's own log progress: the leader judges
	// non-voters' health against its last term and index.
	Stats() (ServerStats, error)
}

// ErrAlreadyBootstrapped is what Hooks.Bootstrap wraps when raft refuses
// to bootstrap because this node has state after all.
var ErrAlreadyBootstrapped = errors.New("membership: raft already has state")

// ErrRaftOpening is what Hooks wrap while the raft store is still opening
// (restoring its snapshot at start): not a failure, a wait; bootstrapping
// is retried on the next round without an error in the log.
var ErrRaftOpening = errors.New("membership: raft store still opening")
