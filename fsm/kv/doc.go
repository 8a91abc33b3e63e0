// Package kv is the small interface between the state machine (package fsm)
// and the store that holds its state on disk (package statestore), plus Mem,
// an in-memory implementation for tests.
//
// The interface is shaped by what fsm needs and nothing more: point reads,
// ordered iteration between bounds, and writes that become one atomic batch
// when the caller commits. fsm stays pure: it sees bytes in, bytes out, and
// never a file.
//
// Errors: a Store's reads and writes do not return errors. A store that
// cannot read or write (an I/O error, a corrupt file) panics with a *Error,
// and the caller that drives fsm (raftstore) recovers it with ErrorOf and
// stops the node. A state machine half way through a command has no
// sensible way to go on after its store failed; unwinding to the one place
// that can stop the node keeps every handler free of error plumbing.
//
// Invariants a Store keeps:
//   - Reads see every write made since the last Commit (read your writes).
//   - Commit makes the writes since the last Commit visible to new Views
//     atomically: a View sees all of them or none.
//   - After a crash the store holds the writes of a prefix of the Commits
//     (never a mix), and every Commit before the last Sync.
//   - A View is a consistent point: later writes never show through it.
package kv
