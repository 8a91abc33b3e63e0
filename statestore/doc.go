// Package statestore keeps the state machine's state on disk, in Pebble
// (cockroachdb/pebble v2), behind the small interface the state machine
// reads and writes through (fsm/kv). It knows nothing else of metad.
//
// # Layout
//
// The store's directory (<data dir>/raft/state) holds a file ACTIVE naming
// the live database directory beside it (db-1, db-2, ...). A state built
// from a snapshot goes into the next db-N (Builder) and becomes live when
// ACTIVE is replaced by a rename: a crash before the rename leaves the old
// database live, after it the new one, never a mix; Open removes whatever
// db-N ACTIVE does not name (a build a crash interrupted, or the database
// a swap replaced).
//
// # Durability
//
// A Commit is one atomic Pebble batch, written to Pebble's WAL without an
// fsync (pebble.NoSync): the Raft log is the state's write-ahead log, so
// a crash that loses the last commits loses nothing the log cannot give
// back, and Pebble's recovery replays a prefix of the commits, never part
// of one. Sync forces the WAL to disk; raftstore calls it before it
// records a Raft snapshot, after which Raft may drop the log the store
// would otherwise need.
//
// # Memory
//
// Config.CacheBytes is Pebble's block cache; with the memtables (two of
// 32 MiB at most in steady state) it bounds the memory of the state,
// whatever its size. The cache's hits and misses are in the metrics.
//
// # Faults, as Pebble behaves and as the tests observed
//
//   - A full disk: Pebble does not return an error on ENOSPC; its writes
//     stall while flushes and compactions fail and retry. metad's disk
//     reserve (package diskspace) refuses growing writes well before.
//   - A failed write or fsync of the WAL: Pebble calls its logger's
//     Fatalf; this package's logger panics with a *kv.Error naming the
//     error instead of exiting, so the node stops the way it does for a
//     failed Raft log write, and restarts from what the disk holds.
//   - Corruption: a block whose checksum does not match fails the read
//     with an error naming the table file; the read panics with a
//     *kv.Error carrying it, and the node stops instead of serving it.
//     Pebble checks blocks as it reads them (no background scrub).
//
// Reads see the writes of the open batch (read your writes): the applier
// reads through it while it applies. Between applies the batch is empty
// and reads go to the database, which is safe from many goroutines, so
// concurrent readers never touch the batch.
package statestore
