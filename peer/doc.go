// Package peer is the node-to-node work of a metad server: the Peer
// service's server (Node, registered by Register) and its client
// (Client), the forwarding of proposals to the leader, the status fan-out
// across the configuration, the leader's feature-level raise, the cluster
// id and its check, and the tombstone policy of remove-peer.
//
// Client reaches other nodes by node id through a Directory (membership's
// gossip view), with the dial map, the peer credentials and the cluster id
// node gives it at construction: it has no setters. It implements
// raftstore.Peers (leadership confirmations and read indexes over gRPC,
// mapped back onto raftstore's sentinels) and carries forwarded
// proposals, repairs, status questions and tombstone lists.
//
// Node.Propose proposes here if this node leads, else forwards to the
// leader's Peer.Propose, which never forwards again. A leader that moved
// while a forward was under way answers NOT_LEADER naming the next, which
// is followed, at most MaxForwards forwards in all; then the proposal
// fails with ErrTooManyForwards wrapping the last NOT_LEADER, which the
// client retries. A forward the leader never answers (unreachable, the
// connection cut) is an UnansweredError naming that leader: the command
// may have been committed, so api says LEADERSHIP_LOST, indeterminate; one
// cut off by the caller's deadline is that deadline (DEADLINE_EXCEEDED,
// indeterminate too). A forwarded command is encoded once, by the follower;
// the leader stamps those bytes without re-encoding them
// (raftstore.ProposeEncoded). api's writes and readpath's pins and
// failure reports propose through it.
//
// Cluster identity (clusterid.go, README "Cluster identity"): Client sends
// this node's cluster id as metadata ClusterIDHeader on every call;
// ClusterIDUnary refuses a Peer call whose id differs from this node's,
// when both know one, with ErrClusterIDMismatch (*ClusterIDMismatchError:
// both ids and the method), logged once per caller id. No id (a 0.1.0
// caller) passes; LocalStatus always answers, with the node's id, so that
// a leader can learn a newcomer's cluster before adding it.
// EnsureClusterID is the leader's proposal of SetClusterID once the state
// is at level 2 without one.
//
// Rolling upgrades (level.go, GUARANTEES.md G15): RaiseFeatureLevel
// proposes the lowest level every server of the configuration reports in
// LocalStatus; a server it cannot ask blocks the raise.
//
// Tombstones (tombstones.go): remove-peer's removal sticks before the
// server leaves the configuration — a replicated tombstone on its
// incarnation at level 2, the leader's memory (Removals) at level 1 — and
// Untombstone lifts it.
//
// Invariants: peer does not import api (architecture_test.go): api owns
// the error table, and node hands its mapping in as Deps.ToStatus, so
// every Peer answer carries a reason of that one table. A forwarded
// proposal crosses at most MaxForwards nodes. peer reads no clock and runs
// no loop of its own; its waits are the callers' deadlines and the
// bounds of Config.
package peer
