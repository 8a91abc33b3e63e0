package plan

import (
	"strconv"
	"time"
)

// The values the planner decides on. Package membership, which fills them
// from memberlist and raft, uses them under the same names.

// Status is a member's state in this node's gossip view.
//
// memberlist also has a "suspect" state, but it reports no event for it and
// its public Members() hands out pointers to nodes it mutates under its own
// lock, so reading a suspect state would be a data race. A suspect node is
// therefore shown as alive until memberlist declares it dead.
type Status int

const (
	// StatusAlive: memberlist considers the node alive (or only suspect).
	StatusAlive Status = iota + 1
	// StatusDead: memberlist declared the node dead (failed probes).
	StatusDead
	// StatusLeft: the node announced a graceful leave (Agent.Leave).
	StatusLeft
)

func (s Status) String() string {
	switch s {
	case StatusAlive:
		return "alive"
	case StatusDead:
		return "dead"
	case StatusLeft:
		return "left"
	default:
		return "unknown(" + strconv.Itoa(int(s)) + ")"
	}
}

// Member is one server in this node's gossip view.
type Member struct {
	// ID is the node's stable id: memberlist name and raft ServerID.
	ID string
	// GossipAddr is the gossip address the node advertises (host:port).
	GossipAddr string
	// Status is alive, dead or left.
	Status Status
	// Since is when this node observed the current Status (local clock).
	Since time.Time
	// Meta is the node's decoded metadata: raft and gRPC addresses,
	// bootstrap-expect, bootstrapped flag.
	Meta Meta
}

// Meta is what a node tells the others about itself through gossip.
type Meta struct {
	// Version is the encoding version it arrived in (MetaVersion).
	Version int
	// RaftAddr is the node's advertised raft address.
	RaftAddr string
	// GRPCAddr is the node's advertised gRPC address.
	GRPCAddr string
	// Expect is the node's --bootstrap-expect (0 = never bootstraps).
	Expect int
	// Bootstrapped is true once the node has raft state: it bootstrapped,
	// was added by a leader, or restarted with data. A forming node that
	// sees it on any peer never bootstraps.
	Bootstrapped bool
	// Leaving is set by Agent.Leave just before memberlist's leave, so that
	// peers can tell a graceful leave from a failure: memberlist's events
	// do not say which (the state it passes to NotifyLeave is never set).
	Leaving bool
	// ClusterID is the node's cluster id, "" if it knows none (then the
	// metadata is version 1, byte for byte what 0.1.0 writes).
	ClusterID string
}

// Server is one server of the raft configuration. Servers are keyed by
// ID, the node id; Address is its raft address.
type Server struct {
	ID      string
	Address string
	// Voter: a voter; false is a non-voter (raft's unused "staging"
	// suffrage counts as a non-voter).
	Voter bool
}

// ServerStats is what the leader needs from a server to judge its health.
// It has the fields of raft-autopilot's autopilot.ServerStats; it is
// restated here because importing raft-autopilot would link its mocks, and
// with them testify, into metad.
type ServerStats struct {
	// LastContact is the time since the server last heard from a leader;
	// 0 on the leader itself, negative if it never did.
	LastContact time.Duration
	// LastTerm is the term of the server's last log entry.
	LastTerm uint64
	// LastIndex is the index of the server's last log entry.
	LastIndex uint64
	// Incarnation is the server's incarnation id (its data dir's), ""
	// from a release that does not report one.
	Incarnation string
	// ClusterID is the id of the cluster the server belongs to, "" if it
	// knows none (a new server, a cluster below feature level 2, or a
	// release before cluster ids).
	ClusterID string
}
