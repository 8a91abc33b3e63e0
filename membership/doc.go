// Package membership finds metad's servers, forms the raft cluster and keeps
// the raft configuration in line with who is actually there (DESIGN.md §9).
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
// takes one uncommitted configuration change at a time.) The planner (plan.go) is a pure
// function in the spirit of raft-autopilot's: it updates a server's
// address in place when it comes back elsewhere (servers are keyed by id),
// removes servers dead or left for DeadServerTimeout — non-voters freely,
// voters only while the voters alive in gossip remain a quorum and at
// least MinQuorum voters would remain — adds alive newcomers as non-voters,
// and promotes non-voters once healthy (raft-autopilot's health rule:
// recent contact, same term, few trailing logs) for ServerStabilizationTime.
// Every decision, including each decision not to act, is logged once at
// INFO with its reason.
//
// raft-autopilot itself is not used, only its rules (and the shape of its
// ServerStats, restated in stats.go: importing the module would link its
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
//     that node's own progress (raftstore.Store.Progress).
//
// Nothing is called on leadership changes. On SIGTERM: transfer raft
// leadership, then Leave(timeout), then Close, then shut raft down.
// Lookup turns a raft leader id into its gRPC address; Members feeds
// `metad members`.
package membership
