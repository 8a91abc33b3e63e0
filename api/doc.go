// Package api serves metad over gRPC: the Metad service (streams, index,
// objects, pins, Resolve), the Cluster service (status, members,
// leadership), the node-to-node Peer service, gRPC health and reflection.
//
// Any node answers any call. Writes become one fsm Command each, are
// checked with fsm.Validate (so a malformed request is refused naming the
// field, before Raft), and are proposed on the leader: locally, or
// forwarded once through the leader's Peer.Propose, which never forwards
// again. A forwarded command is encoded once, by the follower; the leader
// stamps those bytes without re-encoding them (raftstore.ProposeEncoded). Reads are linearizable by default (raftstore.Read on whichever
// node answers); STALE is an explicit opt-in per request. Resolve runs the
// resolver's loop here, with collaborators built over this node: a
// linearizable Reader, a Pinner and Reporter that propose through Raft, a
// Repairer that asks the leader's repair loop, and optionally a Verifier
// that checks the object store.
//
// Every failure leaves through one table (errors.go): a gRPC code, an
// UPPER_SNAKE reason in google.rpc.ErrorInfo (domain metad.dev), whether it
// is definite (certainly did not happen) or indeterminate, the field at
// fault, a leader hint, RetryInfo when retrying helps, and for a failed
// resolve the per-candidate ResolveDiagnostic. Every call has a deadline:
// the server imposes DefaultTimeout when there is none and caps it at
// MaxTimeout.
//
// Watch (watch.go) serves one stream's changes from this node's applied
// state (DESIGN.md §17): it subscribes to package watch's hub inside a
// linearizable Read, so the events still held after from_version (the
// hub's ring) and the live ones meet with no gap and no duplicate, sends
// WATCH_STARTED at the start point, then each event as it applies. A
// from_version the node no longer holds history after is
// WATCH_COMPACTED (FailedPrecondition, definite, the stream's state in
// ErrorInfo metadata); a consumer whose queue fills is cut off with
// WATCH_SLOW_CONSUMER (Unavailable, RetryInfo, metadata last_version), a
// state replaced by a snapshot with WATCH_RESET, a draining server with
// SHUTTING_DOWN, a node without a leader for Config.Watch.StaleAfter (the
// health loop checks) with NO_LEADER, all resumable. DescribeStream's long poll (min_version,
// wait) subscribes the same way and answers once the version moves or the
// wait ends. Limits: Config.Watch; metrics metad_watch_*.
//
// PeerClient is the other direction: it implements raftstore.Peers
// (leadership confirmations and read indexes over gRPC) and carries
// forwarded proposals and repairs, dialling node ids through a Directory
// that membership provides.
package api
