// Package api serves metad over gRPC: the Metad service (streams, index,
// objects, pins, Resolve), the Cluster service (status, members,
// leadership), gRPC health and reflection; it registers package peer's
// node-to-node Peer service beside them and owns the error table that
// service answers with.
//
// Any node answers any call. Writes become one fsm Command each, are
// checked with fsm.Validate (so a malformed request is refused naming the
// field, before Raft), and are proposed on the leader (an append's or a
// record's data checksum, data_crc32c, passes through as the writer
// computed it: the server never sees the bytes, readers check them)
// through peer.Node.Propose: locally, or forwarded to the leader, a
// moving leader followed up to peer.MaxForwards times (package peer). Reads are linearizable by default
// (raftstore.Read on whichever
// node answers); STALE is an explicit opt-in per request. Resolve checks
// the request and answers from package readpath's Resolver, which node
// builds (Deps.Resolver) over the same store, proposing through package
// peer and asking the leader's repair loop through peer.Client; the
// handler keeps the outcome metrics (metad_resolve_*) and the error table.
// ReportCandidateFailure drops the candidate's cached hint and commits a
// failure only once readpath's ConfirmFailure has the object store confirm
// it (G10). Pin and ReleasePin refuse readpath.SharedHolder's pins, which
// readers rely on until they expire.
//
// Every failure leaves through one table, package reasons (api/reasons),
// the client's too: per metadpb.Reason a gRPC code, whether it is definite
// (certainly did not happen) or indeterminate, and the RetryInfo delay
// when retrying helps. errors.go maps the layers' failures (FSM refusals,
// Raft, package peer, the resolver, the context) onto reasons and builds the status: the
// reason's name in google.rpc.ErrorInfo (domain metad.dev), the field at
// fault, a leader hint, and for a failed resolve the per-candidate
// ResolveDiagnostic. Every status this package sends starts from build
// (objectRefusal adds its details to the one build made). Every call has
// a deadline: the server imposes DefaultTimeout when there is none and
// caps it at MaxTimeout.
//
// Readiness (readiness.go; gRPC health and /readyz): a member of the Raft
// configuration, a leader known, and — on a follower — applied within
// CaughtUpSlack of the leader's commit index, which it asks the leader
// for (its own commit index is 0 on a restarted follower until the leader
// next commits). The rule is readyVerdict, pure and table-tested;
// OpeningVerdict is its answer for a node still restoring its raft state,
// which node serves at /readyz before a Server exists. RemovePeer leaves a
// tombstone, or at feature level 1 the leader's memory, before removing;
// Untombstone lifts it (the policy is package peer's).
//
// Watch (watch.go) serves one stream's changes from this node's applied
// state (G14): it subscribes to package watch's hub inside a
// linearizable Read, so the events still held after from_version (the
// hub's ring) and the live ones meet with no gap and no duplicate, sends
// WATCH_STARTED at the start point, then each event as it applies. A
// from_version the node no longer holds history after is
// WATCH_COMPACTED (FailedPrecondition, definite, the stream's state in
// ErrorInfo metadata); a consumer whose queue fills is cut off with
// WATCH_SLOW_CONSUMER (Unavailable, RetryInfo, metadata last_version), a
// state replaced by a snapshot with WATCH_RESET, a draining server with
// SHUTTING_DOWN, a node without a leader for Config.Watch.StaleAfter (the
// health loop checks) with NO_LEADER, all resumable. DescribeStream's long
// poll (min_version, wait) subscribes the same way and answers once the
// version moves or the wait ends. Limits: Config.Watch; metrics
// metad_watch_*.
//
// Node-to-node work (the Peer service and its client, forwarding, status
// fan-out, the level raise, the cluster id check, tombstones) is package
// peer's: Server takes a *peer.Node (Deps.Peer), chains its
// ClusterIDUnary after authorization, and answers Status, Members,
// RemovePeer and Untombstone through it. Time comes from Deps.Clock.
//
// Authorization (authz.go) runs before anything else on every call: one
// table, roleTable, maps every RPC of every service to the role it needs
// (TestRoleTableCoversEveryRPC walks the descriptors and fails on an RPC it
// does not name; an RPC missing from it is refused to everyone). reader ⊂
// writer ⊂ operator; peer, apart, is the only role metad.v1.Peer accepts,
// and it may also make the two Cluster calls a follower forwards to the
// leader (TransferLeadership, RemovePeer) after checking its own caller's
// role. A call with no identity gets UNAUTHENTICATED, one whose role is
// not enough PERMISSION_DENIED, each with an ErrorInfo (reason
// UNAUTHENTICATED or PERMISSION_DENIED, metadata "method" and
// "required_role", definite). gRPC health and reflection stay open, so
// probes need no credentials. Identities come from package auth.
//
// Insecure mode (no TLS and no tokens: the loopback quick start, or
// --insecure) keeps every client call open as before, but never the Peer
// service: a raw Propose on it would bypass every check of the public API
// (the attack of issue 10: a Trim, or MarkObjectDeleting then
// MarkObjectDeleted on a live object). Nodes there prove they are peers
// with a secret sent as metadata: shared by every node of a multi-node
// cluster (--peer-secret-file, like Consul's gossip key), made up at start
// by a lone node so that nobody else has it; a node of a cluster without
// TLS refuses to start without one. While the cluster's feature level is 1
// a call presenting no credential at all is let through
// (auth.Settings.LegacyPeers): a server of release 0.1.0, which knows no
// secret, may be a member during a rolling upgrade. We chose a secret
// over, say, trusting loopback callers, because the attack came from
// loopback, and over distributing a secret through gossip, which anyone
// reaching the gossip port could read. With TLS the secret is
// unused: peers are certificates with role peer.
package api
