// Package node assembles one metad server from its parts — the composition
// root that cmd/metad calls:
//
//	raftstore   Raft over bolt and file snapshots, driving the fsm
//	membership  gossip discovery, bootstrap-expect, reconcile (leader)
//	api         gRPC: Metad, Cluster, Peer, health, reflection
//	repair, gc  leader-only loops, run for each term this node leads
//	objectstore the local object directory
//	HTTP admin  /metrics, /healthz, /readyz, pprof (opt-in)
//
// Start opens them in dependency order (the peer client before Raft, which
// needs it for read confirmations; membership after Raft, which it drives;
// the directory that maps node ids to addresses once membership exists).
// Shutdown reverses it gracefully: hand over leadership, stop taking calls,
// drain, leave gossip, close Raft cleanly — without removing the node from
// the Raft configuration, so a restart rejoins with its data.
package node
