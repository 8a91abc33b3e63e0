// Package tracing is metad's request tracing: OpenTelemetry, off by
// default, exported over OTLP/gRPC when an endpoint is configured.
//
// It is the one owner of the OpenTelemetry libraries (architecture_test.go
// checks): the rest of metad sees three things.
//
//   - New builds a Provider from Config (or, in tests, around an exporter
//     of the test's own, such as the SDK's in-memory one).
//   - ServerOption and DialOption put the Provider on a gRPC server and
//     client: each call is one span, and the trace context crosses every
//     hop, so a follower's forward to the leader continues the caller's
//     trace.
//   - Start opens a child span of whatever span the context carries, with
//     that span's own provider: a layer below gRPC (raftstore's propose and
//     read, readpath's resolve steps) traces without being handed a
//     provider, and does nothing when the call is not traced.
//
// One request's trace: the Metad call's server span; on a follower, the
// Peer/Propose client span and the leader's server span under it; the
// leader's raft.propose (from proposal to applied); for Resolve the
// linearizable reads of the plan and of the recheck, and the pin's
// proposal, each its own span.
package tracing
