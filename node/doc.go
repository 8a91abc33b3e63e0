// Package node assembles one metad server from its parts — the composition
// root that cmd/metad calls:
//
//	raftstore   Raft over bolt (or raft-wal) and file snapshots, driving the fsm
//	membership  gossip discovery, bootstrap-expect, reconcile (leader)
//	peer        node-to-node: the Peer service and its client, forwarding
//	            to the leader, status fan-out, the level raise, the
//	            cluster id, tombstones
//	readpath    the resolver wired to this node, proposing through peer
//	api         gRPC: Metad, Cluster, health, reflection (and peer's Peer),
//	            over peer and readpath
//	watch       the change feed: a hub raftstore tells of every applied
//	            command (set before Raft starts, so it sees the startup
//	            restore and replay), which api's Watch serves
//	repair, gc  leader-only loops, run for each term this node leads,
//	            each reading the store through readpath.Store and checking
//	            objects through readpath.Objects
//	objectstore the object store (file:// or s3://), checked at start
//	HTTP admin  / (a status page), /metrics, /healthz, /readyz, pprof
//	            (opt-in)
//
// Start first claims what it needs without writing anything (preflight.go):
// it binds the gRPC and HTTP listeners, checks the raft and gossip ports
// free, then takes an flock on <data-dir>/LOCK (a second server on the
// same data dir is told the owner's pid) and only then stores the node id
// (ChooseNodeID picks it without writing; StoreNodeID writes it). A start
// that cannot succeed thus leaves the data dir as it was. Then it opens the
// parts in dependency order (membership, then the peer client over its
// directory, with every setting at once, before Raft, which needs it for
// read confirmations; membership before Raft, so that the node
// announces itself in gossip while opening Raft restores its latest
// snapshot — minutes for a large state — and the leader sees it alive;
// the HTTP admin endpoints before Raft too, so that meanwhile /healthz
// says ok and /readyz 503 with api.OpeningVerdict's reason instead of
// refusing connections (http.go; n.opened switches / and /readyz to the
// API once it exists);
// membership drives Raft through membershipRaft (membership.go), a
// type-converting adapter of the raft store to the interface membership
// declares, which answers "still opening" until the store is set, since
// neither of the two may import the other). Once Raft is open,
// startServing builds the services in their dependency order: peer.New
// (over the store, repair and the peer client, with api.ToStatus as its
// error mapping), readpath.New (proposing through peer), api.New (over
// both). Like every package but raftstore, node does not import
// hashicorp/raft.
// Shutdown reverses it gracefully: report NOT_SERVING (so /readyz and
// balancers stop sending calls) and STOPPING=1 to systemd, hand over
// leadership, stop taking calls, drain, leave gossip, close Raft cleanly —
// without removing the node from the Raft configuration, so a restart
// rejoins with its data.
//
// Metrics: every part registers on the one *prometheus.Registry Start
// receives, served at /metrics. Raft, raft-boltdb and memberlist report
// through github.com/hashicorp/go-metrics/compat, which forwards to the
// global sink of armon/go-metrics (or of hashicorp/go-metrics when built
// with -tags hashicorpmetrics); gometrics*.go install a Prometheus sink as
// that global, once per process, and register it, so raft_commitTime,
// raft_fsm_apply, raft_leader_lastContact, raft_snapshot_* and the rest
// appear next to metad_*. metad_build_info names the library in use.
//
// Identity: the data dir holds the node id (nodeid.go) and an incarnation
// id made at the dir's creation (incarnation.go), reported in LocalStatus:
// a wiped or copied dir is a new incarnation. A node whose incarnation a
// peer's replicated state tombstones (remove-peer) stops with a message
// saying how to rejoin (removed.go).
//
// Cluster id (clusterid.go): <data-dir>/cluster-id records the cluster id
// the first time the applied state has one (checked at start and every
// health interval), written atomically; the raft store, membership and the
// peer client are given it at start, before the state is replayed. A
// recorded id that differs from the state's stops the node with both ids
// (ErrClusterIDMismatch). The leader's level loop gives the cluster its id
// (peer.Node.EnsureClusterID) once the level is 2.
//
// Gossip keys (gossipkey.go): Security.GossipKeyFile is loaded (and checked
// by Validate, naming the flag) into membership's keyring and re-read
// every ReloadInterval and on Reload; a bad file leaves the keys in use.
//
// Status page (statuspage.go): / renders, server-side with html/template
// and no script, what the API's Status answers (the cluster id; every server of the
// configuration describes itself; UNREACHABLE ones say why), the stream
// count from this node's applied state, and the last leader changes this
// node saw (leaderlog.go: a bounded ring fed by polling the store's leader
// every health interval). It is bounded to 2 s; a status that cannot be
// gathered is shown as an error line, not a blank page.
//
// Readiness: with Config.NotifySocket set (cmd/metad passes
// $NOTIFY_SOCKET), the node speaks systemd's notify protocol itself
// (sdnotify.go): STATUS= while it waits for a leader, READY=1 once it
// serves, STOPPING=1 at shutdown.
//
// Security (security.go; README "Securing a cluster"): Config.Security names the TLS
// files, the tokens file and the insecure-mode peer secret. With TLS, one
// reloading set of material (tlsconfig) serves gRPC (a client certificate
// required, or verified if given when tokens may identify clients), the
// Raft transport (mutual TLS, peers only, both ways), the HTTP admin
// address (a client certificate optional, so probes need only the CA), and
// this node's own dials to other nodes (its certificate; the other side
// must present role peer). The files are polled and re-read on Reload
// (SIGHUP); new connections use new material, established ones continue.
// Validate refuses to serve a non-loopback address without TLS unless
// Insecure, naming --tls-cert-file and --insecure. Without TLS, the
// node-to-node service takes the shared --peer-secret-file; a node alone
// makes a secret up; a node of a cluster refuses to start without one.
// While the cluster's feature level is 1 a call with no credential passes
// (a server of the previous release may forward it; authSettings).
package node
