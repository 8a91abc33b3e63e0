// Command capacity measures how metad's costs grow with its state: it
// starts a real 3-node cluster of metad processes on free loopback ports,
// fills it to successive numbers of index records, and at each size
// measures memory, snapshots, restarts, a wiped follower's catch-up and
// latency. PERFORMANCE.md reports its figures; bench/plot -capacity draws
// them.
//
//	go run ./bench/capacity                                  # 10k, 100k, 1M over 1000 streams
//	go run ./bench/capacity --sizes 10k,100k,1M,10M --streams 10000
//	go run ./bench/capacity --sizes 1M,10M,100M --work /big/disk/cap  # a disk-backed state machine; see Disk
//	go run ./bench/capacity --trim 0.5 --streams 100000      # half of every stream trimmed away
//	go run ./bench/capacity --sizes 10k,10M --resolve-window 10  # resolve the same offsets (and objects) at every size
//	go run ./bench/capacity --metad /path/to/metad --server-flags "--raft-log-store wal"
//	(cd bench/plot && go run . -capacity /tmp/metad-capacity.X/capacity.json -out ../charts/capacity)
//
// It prints three markdown tables on stdout (state and recovery, latency,
// phase wall times) and writes every figure to one JSON file
// (--out, default WORK/capacity.json), rewritten after each size so that
// a long run stopped halfway keeps what it measured. Progress goes to
// stderr. Exit status: 0 done, 1 a phase failed, 2 bad flags.
//
// # The fill
//
// Records are written the fast way, as a compactor would: each stream
// gets, per size step, one commit-append of n offsets with its
// generation-0 index record, then a new COMMITTED generation of the other
// n-1 offsets, one record each, published in parts of up to
// client.MaxRecordsPerPart records. Records name objects registered once,
// each holding 1024 records' bytes and shared by the streams a writer
// fills (objects are synthetic: registered, never written). A step's new
// records are spread evenly over up to --streams streams (a new stream
// gets one record first, so there are never more streams than records),
// by --writers concurrent writers (8 by default: on two cores the servers,
// not the writers, are the limit; 130k records/s at 10M). With --trim F every stream is then
// trimmed at F of its committed end, dropping its oldest records; "live"
// counts what is left, and bytes per record divide by it.
//
// # What is measured at each size
//
//   - memory: VmRSS and VmHWM (peak) of every node, read from /proc after
//     the fill; bytes per record is the leader's RSS minus its RSS in the
//     empty cluster, over live records. After the rejoins, the wiped
//     follower's RSS gives the same figure for a state built by one
//     snapshot restore (no garbage of the fill).
//   - checkpoint: one consistent snapshot streamed from the leader
//     (Cluster.Snapshot, what `metad snapshot save` takes: a clone of the
//     state machine in the encoding raft's snapshots use), its bytes and
//     time, over loopback gRPC, not stored.
//   - raft snapshot: metad has no way to force a raft snapshot (raft takes
//     one when --raft-snapshot-threshold entries have been written since
//     the last, checked every one to two --raft-snapshot-interval, 2
//     minutes by default; no admin call triggers one), so the servers run
//     with the threshold at --snapshot-threshold (1024), and the interval
//     at --snapshot-interval if given (shorter waits less, but snapshots
//     then fall into the load runs, which count them),
//     and the tool waits, up to --snapshot-wait, until every node's newest
//     snapshot (DATA/raft/snapshots/*/meta.json; each node takes its own)
//     covers the fill, so that the restart below restores one. The
//     leader's is reported: its size is meta.json's, its create and
//     persist times the means of the leader's raft_snapshot_create and
//     raft_snapshot_persist summaries over the snapshots it took since
//     the fill ended.
//   - load: resolve of a random live offset of a random filled stream, and
//     commit-append (10 offsets with its generation-0 record, on
//     --concurrency streams of its own, each with a newly registered
//     object, trimmed away after each run so the state stays the size
//     measured), each at --concurrency for
//     --duration after --warmup, through bench/load (the runner
//     metad-bench and the etcd yardstick share). Then both again while
//     checkpoints are streamed from the leader back to back, the whole run
//     long ("during snapshot": the clone and encoding work of a snapshot,
//     which a raft snapshot does too, without its fsync). A run during
//     which the leader took a raft snapshot says so (raft_snapshots).
//   - restart: one follower is stopped with SIGTERM and started again on
//     its data dir; serving is /readyz 200 and the leader's commit index
//     of the moment it was stopped applied. restore_ms is the new
//     process's raft_fsm_restore (its own snapshot, if it had one; the
//     rest of the log is replayed).
//   - wiped: the other follower is stopped, its data dir removed, and it
//     is started again under the same id and flags (README, Membership:
//     a wiped server neither votes nor asks for votes until it has caught
//     up); serving as above. install_snapshot says whether the leader sent
//     it a snapshot (its log says "Installed remote snapshot"); when the
//     leader still holds the whole log (fewer entries than
//     --raft-trailing-logs, 10240 by default, past its snapshot) it
//     replays the log instead. From the start of the new process until
//     it serves, commit-append runs at --concurrency as in the load runs
//     (wiped.commit; "append p99 wipe" next to the steady "append p99"):
//     what writers see while the leader streams a snapshot and the
//     follower catches up. The catch-up is timed with that writer
//     running, so it takes somewhat longer than an idle one would.
//   - disk: at the end of each size, every node's data dir in allocated
//     bytes (du's count), split into raft log (raft/ without snapshots)
//     and raft snapshots; data_dir_bytes_per_record is the leader's over
//     live records. A server with a disk-backed state machine also
//     reports metad_state_disk_bytes, and state_disk_bytes_per_record is
//     the leader's over live records; today's servers do not, and the
//     table says "-".
//   - cache: a server with a disk-backed state machine counts its cache's
//     hits and misses (metad_state_cache_hits_total,
//     metad_state_cache_misses_total); every load run records their change
//     over the run, summed over the nodes (resolve reads and the applies
//     of what the run writes, such as pins, on every replica), and the
//     table prints the resolve run's hits over lookups. Absent ("-") when
//     the servers do not export them.
//
// # Disk
//
// Once it has the servers' binary, before it starts them, the tool prints
// the disk the largest size needs, all three servers together, and stops
// if the --work directory's filesystem has less free (--disk-check=false
// runs anyway); before each fill it checks again, counting what the data
// dirs already hold. The estimate (plan.go, diskEstimate) is, per index
// record:
//
//   - on every node, 160 B of raft log (a PublishGeneration part of 4096
//     records encodes to 155 B a record), for every record until the log
//     holds more than --raft-trailing-logs full entries (42M records) plus
//     what the fill writes between two raft snapshots (taken as 32M
//     records), and no more after that;
//   - for servers with a state store (their `server --help` lists
//     --state-cache), 64 B of state store on every node (54 B by its
//     metrics at 10M, 57 B as du counts its files), whose raft snapshots
//     are 16-byte points, plus 180 B on the wiped follower, which keeps
//     the whole state it received from the leader in snapshots/ until two
//     later snapshots reap it;
//   - for earlier servers, 3 × 180 B of raft snapshots on every node: a
//     snapshot is a whole copy of the state, 171-179 B a record (measured
//     at 100k and 10M records), raft keeps two and writes the next before
//     it reaps the oldest;
//
// plus 128 MiB of preallocated raft-wal segments per node. For 100M
// records that is about 73 GB with a state store and 198 GB before it.
// It is meant to be conservative; the disk figures of each size say how
// close it is. Each node's data dir is reported split into raft log,
// raft snapshots and state store (raft/state, as du counts it, and live
// bytes by metad_state_disk_bytes).
//
// # Reading the figures
//
// The state also holds what the load runs leave: request ids are kept for
// fsm.DedupTTL (10 minutes) and a commit-append run at 2500/s leaves tens
// of thousands, so at small sizes memory and snapshot bytes per record
// are dominated by them; the curves mean most from 100k records on, and
// --skip load gives memory figures without them. RSS
// includes the Go heap's headroom (GOGC) and garbage not yet returned to
// the kernel. Phase wall times are printed so that a larger run can be
// planned: the fill is roughly linear in records, the raft snapshot wait
// is up to two check intervals (4 minutes), a wiped follower's catch-up
// and a restart are dominated by the snapshot restore.
package main
