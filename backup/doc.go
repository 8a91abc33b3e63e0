// Package backup takes scheduled backups of the replicated state on the
// leader (metad server --backup-interval/--backup-to/--backup-retain).
//
// Every interval the leader takes a checkpoint (raftstore.Checkpoint: the
// state at a linearizable read index, what `metad snapshot save` streams)
// and writes it as a snapshot file, the portable format `snapshot
// inspect` and `snapshot restore` read, to a Target: a directory or an
// s3:// prefix. Each backup is
//
//  1. named so that names sort by time and say which cluster and index
//     they hold (name.go: metad-<cluster id>-<UTC time>-<index>.snap);
//  2. written atomically: a temporary name renamed into place in a
//     directory, one PUT (or one completed multipart upload) in S3, so a
//     reader never sees half a backup under a backup's name;
//  3. verified: read back from the target and checked as `snapshot
//     inspect` checks a file (the file's SHA-256, the stream and fsm
//     headers, a full restore in memory); a backup that does not verify
//     is deleted and counted as failed;
//  4. followed by pruning: of this cluster's backups, only the Retain
//     newest are kept (Prune, pure). Other clusters' files and files
//     that are not backups are never touched.
//
// Only the leader backs up: the loop runs under the leadership context
// (raftstore.Store.AwaitLeadership), so a node that loses leadership
// stops, and the next leader reads the target's newest backup of the
// cluster and continues the schedule from it (Due, pure).
//
// The decisions — names, what to prune, when the next backup is due,
// whether a configuration is valid — are pure functions with their own
// tests; the Scheduler and the two targets are the thin I/O around them.
package backup
