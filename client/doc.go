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
// Read is the broker's read path (DESIGN.md §11): resolve, read the
// target's bytes from the object store under the target's identity, and on
// failure report the candidate, exclude it and resolve again in the same
// view, until the deadline; then a retryable *ReadError listing every
// candidate that failed. It never turns a failure into EOF or a trim.
//
// Watch (watch.go) follows one stream's changes as an iterator, over any
// member, resuming after the last version it yielded at another member
// when a connection, a member or a leader fails: no gap, no duplicate. A
// resume point no member holds history after is a *CompactedError with the
// stream's current state.
package client
