// Package membership finds metad's servers, forms the raft cluster and keeps
// the raft configuration in line with who is actually there.
//
// # Discovery
//
// Every node runs memberlist (gossip, SWIM failure detection) under its
// stable node id, which is also its raft ServerID. Each node's metadata
// (meta.go: a small versioned binary record, validated on decode, well
// under memberlist's 512 bytes) carries its raft and gRPC addresses, its
// --bootstrap-expect and whether it already has raft state. The gossip view
// (member.go) keeps only nodes whose metadata decodes: a node with bad
// metadata is logged once and ignored, it never counts for anything (a
// raft server whose metadata turns bad is, to the leader, absent, and is
// removed after DeadServerTimeout like a dead one). memberlist's events
// do not tell a failure from a graceful leave, so Leave first advertises
// a "leaving" flag in the metadata; peers record such a node as left.
// memberlist's "suspect" state is not observable without a data race, so
// members are alive, dead or left.
// Joining (join.go) retries the --join addresses with backoff until one
// answers, so nodes start in any order, and afterwards keeps trying to
// rejoin dead members so that a healed partition merges even after
// memberlist has given up gossiping to them.
//
// # Cluster identity (identity.go)
//
// A node that knows its cluster id (Config.ClusterID, the data dir's copy,
// then Hooks.ClusterID, its raft state's) advertises it in its metadata,
// which is then version 2 (version 1 and the id); a node that knows none
// writes version 1, byte for byte what release 0.1.0 writes and reads
// (0.1.0 refuses any other version and trailing bytes). An id exists only
// from feature level 2, which the leader reaches only once no 0.1.0
// server is left, so version 2 never meets a reader that cannot decode it.
// memberlist's Merge and Alive delegates refuse a node whose metadata names
// another id (a join with it fails as a whole; its alive messages are
// ignored), logged once per node and id and counted in
// metad_membership_foreign_refusals_total. A node that names no id (a new
// one, or a level-1 cluster's) is not refused by gossip: the reconcile
// loop asks every alive newcomer for its stats, whose answer carries its
// cluster id, and never adds one that names another id; while this
// cluster has an id it adds a newcomer only once the newcomer has
// answered (holds "foreign-cluster" and "cluster-id-unknown").
//
// memberlist's Label is not the cluster id: memberlist drops a message
// whose label differs before any delegate sees it, so a new node, which
// learns the id from the cluster, could never join, and a 0.1.0 node,
// which sends no label, could not gossip with an upgraded one. A label the
// operator sets alike on every node would work, but would be a second
// shared secret next to the gossip key, which already keeps other
// clusters' (and strangers') gossip out.
//
// # Gossip encryption
//
// Config.GossipKeys becomes memberlist's keyring (AES-GCM, the first key
// encrypts, all decrypt, unencrypted gossip refused both ways);
// SetGossipKeys rotates it in place (install, switch primary, remove).
// Encryption itself cannot be switched on or off while running.
//
// Config.DialAddress lets the Jepsen harness route each directed link
// through its own proxy: a wrapper around memberlist's NetTransport
// (transport.go) rewrites the destination of every packet and stream.
//
// # Bootstrap
//
// A fresh node (no raft state) with BootstrapExpect = n bootstraps when it
// sees exactly n alive servers that all expect n and none of which is
// already in a cluster; the configuration is those n servers sorted by id,
// all voters, so all n nodes bootstrap the identical configuration, which
// hashicorp/raft tolerates (bootstrap.go has the full rule and why it is
// "exactly n", stricter than Consul's "at least n"). A node with state, a
// node that sees a peer already in a cluster, and a node added by a leader
// never bootstrap; a node whose expect differs from a peer's logs an error
// and waits. The decision is the pure function decideBootstrap.
//
// # Reconcile
//
// While this node is the raft leader (the loop polls Raft.IsLeader every
// ReconcileInterval and on every gossip change, so node calls nothing on
// leadership changes), each round plans the raft configuration changes
// the gossip view calls for and applies the first one, then plans again
// from a fresh configuration. (The changes are not conditional on the
// configuration's index: raft v1.7.3 reports none to its callers; raft
// takes one uncommitted configuration change at a time.) The planner (package membership/plan) is a pure
// function in the spirit of raft-autopilot's: it updates a server's
// address in place when it comes back elsewhere (servers are keyed by id),
// removes servers down long enough — non-voters freely, voters only while
// the voters alive in gossip remain a quorum and at least max(MinQuorum,
// BootstrapExpect) voters would remain — adds alive newcomers as
// non-voters unless an operator removed them, and promotes non-voters
// once healthy (raft-autopilot's health rule: recent contact, same term,
// few trailing logs) for ServerStabilizationTime. Every decision,
// including each decision not to act, is logged once at INFO with its
// reason and counted in metad_membership_decisions_total (metrics.go).
//
// # Removal policy
//
// "Down long enough" is DeadServerTimeout (default 72h, Consul's reap
// time) for a server dead or absent in gossip, and LeftServerTimeout
// (default 1h) for one that left gracefully. Both are hours because a
// removal is costly and its cause usually passes: a partitioned follower,
// a server restoring a large snapshot, a rolling restart (every SIGTERM
// leaves) all come back, and removing them left a three-voter cluster on
// two voters, tolerating no failure, until re-added and promoted (the 30s
// default of 0.1.0 did exactly that). A server alive in gossip is never
// removed, and node starts the agent before it opens raft, so a server
// restoring a large snapshot is alive in gossip meanwhile (the Raft
// adapter answers "still opening" until then). An operator removes
// sooner with remove-peer. The policy is the
// table in policy_test.go. A leaving node also tells each peer directly
// (a TCP user message, member.go): gossip may deliver its leave before the
// metadata that marks it leaving, and a leave mistaken for a failure would
// get the 72h timeout.
//
// # Removed stays removed
//
// remove-peer (api) first records the removal, then removes the server:
// at feature level 2 a tombstone (node id + incarnation) in the replicated
// state, which Hooks.Tombstones feeds to the planner; at level 1 (a 0.1.0
// server remains, tombstones cannot be proposed) only NoteRemoved, this
// leader's memory for RecentRemovalWindow, lost with leadership. Either
// way the planner never adds a covered incarnation (removal.go), whatever
// gossip says; a new incarnation of the id (a wiped data dir) is added.
//
// # Incarnations
//
// The leader asks every alive server of the configuration (and every alive
// newcomer with a recorded removal) for its stats each round; the answer
// carries the server's incarnation, which the leader remembers (Agent.
// Incarnation, shown by metad members) and remove-peer tombstones. Gossip
// metadata does not carry it (version 1 stays byte-for-byte what release
// 0.1.0 requires; version 2 adds only the cluster id).
//
// A server whose data dir was wiped comes back under its old id with an
// empty log. etcd refuses such a member until an operator removes and
// re-adds it; here the server protects itself (raftstore's vote guard: no
// raft state and no bootstrap → it neither grants nor asks votes until
// its log reaches the commit index of the first leader that contacts it),
// so it can never help elect a leader that lacks an entry it had
// acknowledged, and once caught up it is as good a voter as before. The
// leader does not remove and re-add it: with the guard that would only
// cost a voter for the time of a promotion.
//
// raft-autopilot itself is not used, only its rules (and the shape of its
// ServerStats, restated in membership/plan: importing the module would link its
// testify mocks into metad). As a driver it does not fit: it does not add
// servers, removes servers unknown to the application immediately (a new
// leader whose gossip has not yet heard of a server would remove it),
// removes failed servers with no dead-server delay, and would remove one
// of two dead voters in a three-voter cluster. Owning a small planner
// keeps all four rules here, testable as tables and properties.
//
// # Concurrency
//
// New starts two goroutines, both owned by the Agent and joined by Close:
// the loop (bootstrap + reconcile + metadata updates; its state is
// loopState, touched by nothing else) and the joiner. memberlist's event
// callbacks only update the gossip table under its mutex and nudge the
// loop. Raft is reached only through the Raft interface (raft.go) and the
// Hooks, in this package's own types (Server, ServerStats) and sentinel
// (ErrAlreadyBootstrapped), so the package imports neither hashicorp/raft
// nor raftstore nor gRPC: raftstore is the one owner of raft, and the
// architecture test keeps it so. Only the in-process cluster tests import
// hashicorp/raft, to run agents over real in-memory rafts.
//
// # Wiring (node)
//
// Open the raft store first, then New(cfg, r, hooks, logger) with r an
// adapter of *raftstore.Store to Raft (node/membership.go) and hooks:
//
//   - HasState: raftstore.Store.HasState;
//   - Bootstrap: raftstore.Store.Bootstrap, its ErrAlreadyBootstrapped
//     wrapped as this package's;
//   - FetchStats: an RPC to m.Meta.GRPCAddr whose handler answers with
//     that node's own progress (raftstore.Store.Progress), incarnation and
//     cluster id;
//   - ClusterID: raftstore.Store.ClusterID.
//
// Nothing is called on leadership changes. On SIGTERM: transfer raft
// leadership, then Leave(timeout), then Close, then shut raft down.
// Lookup turns a raft leader id into its gRPC address; Members feeds
// `metad members`.
//
// The agent reads time and waits only on Hooks.Clock (clock.Real unless a
// test injects internal/fakeclock): the loop's period, the joiner's
// backoff and reconnects, member status times, removal windows. Tests wait
// for the loop's steps (its round counter) instead of sleeping.
package membership
