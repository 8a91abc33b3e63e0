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
// PeerClient is the other direction: it implements raftstore.Peers
// (leadership confirmations and read indexes over gRPC) and carries
// forwarded proposals and repairs, dialling node ids through a Directory
// that membership provides.
package api
