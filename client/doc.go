// Package client is the Go library brokers and tools use to talk to metad.
//
// Every call may go to any member; the client balances over the addresses
// it is given and retries what the server marks retryable (google.rpc
// RetryInfo), within the caller's deadline. Mutations carry a request id,
// so retrying an indeterminate failure applies the mutation at most once.
// Failures are *Error values carrying the server's classification: reason,
// definite or not, leader hint, field at fault, and for Resolve the
// per-candidate diagnostic.
//
// # Errors
//
// Callers classify failures with errors.Is, never by reading messages.
// The server names every failure with a google.rpc.ErrorInfo reason, a
// name of the metadpb.Reason enum; the table both sides read (package
// api/reasons) gives every reason an exported sentinel for the reason
// itself (ErrStreamNotFound, ErrNotLeader, ErrAppendNotAtEnd, ...) and one
// for its group, the thing a caller acts on:
//
//	ErrInvalidArgument     the request is wrong: fix it
//	ErrNotFound            the stream, generation, record, pin or server does not exist
//	ErrFailedPrecondition  the state forbids it (sealed, fenced, pinned, ...)
//	ErrConflict            a compare-and-set lost: re-read and decide again
//	ErrUnavailable         no leader, overloaded, shutting down, unreachable
//	ErrDeadlineExceeded    also matches context.DeadlineExceeded
//	ErrCancelled           also matches context.Canceled
//	ErrInternal            unclassified, indeterminate
//	ErrUnauthenticated     no credential the server accepts
//	ErrPermissionDenied    the caller's role may not make the call
//	ErrUnimplemented       the server does not serve the call
//
// Two more cut across the groups: ErrRetryable (the server sent RetryInfo,
// the connection broke, or a Read found no readable candidate in time) and ErrIndeterminate (the operation may have
// taken effect; retry under the same request id). Reason(err) returns the
// reason itself, in one spelling (UPPER_SNAKE) whether it came from metad
// or from gRPC's transport; a reason this client does not know is
// classified by its gRPC code. Resolve's answers that are not targets are
// not errors, but OutcomeError maps them to ErrEOF, ErrTrimmed, ErrViewEnd
// and ErrStreamNotFound for callers that want one error path. FromStatus
// decodes errors from the generated stubs (Client.Metad, Client.Cluster).
//
// A TLS mismatch (a certificate from a foreign CA or expired, TLS on one
// side only) reaches gRPC as UNAVAILABLE, as every failed connection does.
// The client watches its connections' handshakes (handshake.go): a call
// that finds every member failing its handshake returns a *HandshakeError
// (ErrTLSHandshake) at once, definite and not retryable, since no retry
// mends it. DiagnoseTLS (tlsprobe.go) is the same diagnosis as a probe.
//
// Read is the broker's read path: resolve, read the
// target's bytes from the object store under the target's identity, check
// them against the target's data checksum (the CRC-32C its writer
// committed; objectstore.ReadRange), and on failure report the candidate,
// exclude it and resolve again in the same view, until the deadline; then
// a retryable *ReadError listing every candidate that failed. It never
// turns a failure into EOF or a trim. Bytes failing the data checksum are
// reported CORRUPT; a target without one (committed before feature level
// 3) is read unchecked, said in ReadResult.Unchecked and counted
// (Config.Metrics: metad_client_reads_unchecked_total).
//
// A writer computes the data checksum of the exact bytes of each append
// and index record it commits (checksum.Of) and sends it as data_crc32c;
// a record's checksum is then RecordChecksum (records.go).
//
// Writer (writer.go) is the write path: it buffers Appends to many streams
// and commits each flush as one stream-set object (CommitObject, all or
// none), opening each stream for write on first use, retrying what is in
// doubt under one request id, and failing a stream's Appends — fenced
// (ErrFenced), refused, or still in doubt — without losing the other
// streams' records of the same flush.
//
// Watch (watch.go) follows one stream's changes as an iterator, over any
// member, resuming after the last version it yielded at another member
// when a connection, a member or a leader fails: no gap, no duplicate. A
// resume point no member holds history after is a *CompactedError with the
// stream's current state.
package client
