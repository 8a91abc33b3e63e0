// Package diskspace watches the free space of the filesystem that holds a
// node's data dir and says when writes that grow the state must be
// refused: the node's answer to a disk filling up, in the spirit of etcd's
// NOSPACE alarm, except that it lifts by itself once space returns.
//
// A Guard checks the filesystem every Interval (statfs: the bytes an
// unprivileged process may still write) and is Low while fewer than
// Reserve bytes are free. raftstore asks it before proposing a command
// that grows the state (an append, a new stream, a published generation,
// an object registration) and refuses such a command with a definite,
// retryable error naming the filesystem; everything else — pins, their
// releases, failure reports, trims, deletions, membership — still goes
// through, so reads and resolves keep working and an operator can free
// space through metad itself.
//
// Why a reserve rather than the write's own ENOSPC: hashicorp/raft steps
// down when its log store fails a write, and the node then wins and loses
// elections over and over with a full disk; refusing the growth while a
// reserve is left keeps the leader writing the small entries reads need
// (raft-wal preallocates 64 MiB segments, so the reserve must hold more
// than one).
//
// Invariants: Low is true exactly when the last successful check found
// fewer than Reserve free bytes; a failed check keeps the previous verdict
// (a statfs error says nothing about space). A Guard with Reserve 0 is
// never Low.
package diskspace
