package raftstore

import "github.com/hashicorp/raft"

// serialHeartbeats is raft's TCP transport without its heartbeat fast path.
//
// hashicorp/raft v1.7.3 asks its transport to run heartbeats (AppendEntries
// with no entries) on the connection's goroutine, so that a follower busy
// writing its log still answers them. That handler, Raft.appendEntries,
// changes the term and the server's state without synchronising with raft's
// main goroutine (hashicorp/raft#695, fix proposed in #701, not released).
// A leader that was paused, and is resumed while a new leader's heartbeats
// arrive, can then be stepped down to the new term by the heartbeat while
// its main goroutine is still dispatching queued commands: it writes them
// under the new term, at indexes where the new leader wrote other commands
// of that same term. Log matching compares only terms, so the entries are
// never replaced; once committed, this replica applies commands the others
// never saw. The Jepsen harness caught this as two replicas at the same
// applied index with different state hashes (leader-pause nemesis);
// TestSteppedDownLeaderWritesNothingUnderTheNewTerm stages the race.
//
// Without the handler, the transport hands heartbeats to raft's main
// goroutine like every other RPC, serialised with the rest of its work.
// The price is that a follower in a long disk write answers a heartbeat
// only after it; the heartbeat timeout is far longer than a log write.
type serialHeartbeats struct {
	*raft.NetworkTransport
}

// SetHeartbeatHandler ignores the handler, so no RPC runs off raft's main
// goroutine.
func (serialHeartbeats) SetHeartbeatHandler(func(raft.RPC)) {}
