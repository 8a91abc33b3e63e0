// Package raftstore is metad's raft node: hashicorp/raft (v1.7.3) over a
// raft-boltdb/v2 stable store, a log store of the operator's choice
// (raft-boltdb/v2 or hashicorp/raft-wal, logstore.go) and a file snapshot
// store, driving one fsm.Machine. It turns the pure state machine of package fsm into a
// replicated one, and gives the packages above it (api, resolver, repair,
// membership) five things: classified writes (Propose), linearizable reads
// on every node (Read), leadership events, status, and configuration
// changes (configuration.go: AddVoter, AddNonvoter, RemoveServer,
// TransferLeadership, Bootstrap, Progress).
//
// It is the one owner of hashicorp/raft: no other package of metad imports
// it (architecture_test.go checks), and nothing here hands out a *raft.Raft
// or raft's types and errors; callers see this package's Server, Status and
// Progress and its sentinels. It imports fsm and hashicorp's packages
// only. Other servers are reached through the Peers interface declared
// here and implemented by package api over gRPC, so this package knows
// nothing of gRPC, memberlist or the resolver. Package membership declares
// its own Raft interface and may not import this package (nor this package
// membership): node adapts the Store to it.
//
// # Data directory
//
//	<DataDir>/
//	  raft.db            bbolt file (raft-boltdb/v2): the stable store
//	                     (current term, vote, and MetadLogStore: the log
//	                     store this dir holds) and, with LogStoreBolt, the
//	                     raft log. NoFreelistSync.
//	  wal/               LogStoreWAL only: raft-wal's wal-meta.db and its
//	                     64 MiB log segments (<base index>-<id>.wal)
//	  snapshots/         raft.FileSnapshotStore, SnapshotRetain (2) kept
//	    <term>-<index>-<ms>/
//	      meta.json      raft's snapshot metadata
//	      state.bin      a point snapshot ("MDPOINT1" + index, state.go),
//	                     or a whole snapshot stream (below) received from
//	                     a leader, restored, or of an earlier release
//	  state/             the state machine's state (package statestore):
//	                     ACTIVE names the live Pebble database, db-N; the
//	                     applied index is its key 0xff 'r' (state.go)
//
// # Log stores (logstore.go)
//
// Config.LogStore chooses where the log lives. bolt writes a batch of
// entries as one bbolt transaction: two fsyncs in series (data pages, then
// the meta page). wal appends the batch to a preallocated segment file: one
// fsync. auto (the default) opens whichever the dir holds and starts a new
// dir on wal, so a dir written by an older release, which is bolt, keeps
// working. Either way raft's rule holds: the leader counts
// itself towards a commit only after its own StoreLogs returned, and a
// follower answers AppendEntries only after its own. raft-wal is a
// MonotonicLogStore, so after installing a snapshot raft empties the log
// instead of leaving a gap.
//
// A data dir keeps the log store it was created with: the first Open
// records it in the stable store (a dir from before the record, whose
// raft.db holds log entries, is bolt), and Open naming the other one fails
// with LogStoreMismatchError before raft starts (CheckLogStore runs the
// same check without opening raft). A log is never converted in place: a
// node switches by being wiped and rejoining as a new incarnation, which
// receives the state from the leader into the new log store. The offline
// operations open whichever log store the dir holds. raft.db is always
// opened first, with a one-second lock timeout, so a dir in use fails with
// ErrDirInUse before raft-wal's own bolt file (opened without a timeout)
// is touched. raft-wal is v0.4.2, not v0.4.0 (the newest the module proxy
// lists): v0.4.0 could not restart after raft truncated the log's tail
// ("sealed segment has no index block", hashicorp/raft-wal#31, fixed in
// v0.4.1), which the Jepsen harness's kill nemesis hit.
//
// A snapshot stream is a 16-byte header ("MDRAFT01", then the adapter's
// applied index as a big-endian uint64) followed by fsm's own deterministic
// snapshot format (fsm.Machine.WriteSnapshot). Restore reads and verifies
// the whole stream into a new machine before swapping it in.
//
// # Writes
//
// Propose works on the leader. It stamps the command with the leader's wall
// clock (the only time the state machine ever sees), hands it to raft with
// an enqueue timeout, and waits for the commit and the state machine's
// Result under the caller's context. A deterministic refusal is a Result
// with a Rejection, not an error. Every error is either definite (the
// command did not and will not take effect) or indeterminate (it reached
// the log and may still commit; Indeterminate(err) reports it). A retry
// after an indeterminate failure is safe with the same request id, which
// the state machine deduplicates. ProposeEncoded is the same for a command
// a follower encoded and forwarded: the leader decodes it once, only to
// refuse bytes no replica could apply (ErrBadCommand), and stamps the bytes
// as they are (fsm.StampEncoded appends the stamp field) rather than
// re-encoding them.
//
//	call         situation                                 sentinel               class          retryable
//	Propose      store closing or closed before enqueue    ErrClosed              definite       yes (elsewhere)
//	ProposeEnc…  bytes that do not decode as a Command     ErrBadCommand          definite       no
//	Propose      ctx already done                          ErrTimeout             definite       yes
//	Propose      this node is not the leader               ErrNotLeader           definite       yes (at the hint)
//	             (*NotLeaderError: LeaderID, LeaderAddr)
//	Propose      no leader known / leadership moving       ErrNoLeader            definite       yes
//	Propose      MaxPendingProposals reached               ErrOverloaded          definite       yes
//	Propose      raft queue full for ApplyTimeout          ErrTimeout             definite       yes
//	Propose      leadership lost after enqueue             ErrLeadershipLost      indeterminate  yes (same request id)
//	Propose      ctx done while waiting for commit         ErrTimeout             indeterminate  yes (same request id)
//	Propose      store closed while waiting                ErrClosed              indeterminate  yes (same request id)
//	Read*        this node closing or closed               ErrClosed              -              yes (elsewhere)
//	Read*        leader not known                          ErrNoLeader            -              yes
//	Read*        leader unreachable through Peers          ErrNoLeader            -              yes
//	ReadIndex    called on a follower                      ErrNotLeader           -              yes (at the hint)
//	Read*        leader's barrier not applied yet          ErrNotReady            -              yes
//	Read*        quorum did not confirm the leadership     ErrLeadershipLost      -              yes
//	Read*        MaxWaitingReads reached                   ErrOverloaded          -              yes
//	Read*        ctx done (confirmation or apply wait)     ErrTimeout             -              yes
//	Bootstrap    raft state exists                         ErrAlreadyBootstrapped definite       no (a no-op)
//	Transfer…    unknown target id                         ErrUnknownServer       definite       no
//	Transfer…    the target is this leader itself          ErrAlreadyLeader       definite       no
//	Transfer…    this node is not the leader               ErrNotLeader/NoLeader  definite       yes (at the hint)
//	Add*/Remove… this node is not the leader               ErrNotLeader/NoLeader  definite       yes (at the hint)
//	RemoveServer unknown server id                         ErrUnknownServer       definite       no
//	RemoveServer the only voter                            ErrLastVoter           definite       no
//	Add*/Remove… raft refused (another change pending…)    ErrConfigurationRefused definite      after a while
//	Add*/Remove… raft queue full for ApplyTimeout          ErrTimeout             definite       yes
//	Add*/Remove… leadership lost after enqueue             ErrLeadershipLost      indeterminate  yes (re-plan)
//	Add*/Remove… ctx done / store closed while waiting     ErrTimeout/ErrClosed   indeterminate  yes (re-plan)
//	Progress     raft's stats map unreadable               ErrBadStats            impossible     no
//	Checkpoint   as Read*
//	offline      a running server holds the data dir       ErrDirInUse            definite       after stopping it
//	Open/Check…  the dir holds the other log store         ErrLogStoreMismatch    definite       no (see Log stores)
//	             (*LogStoreMismatchError: Dir, Has, Wants)
//	Open/offline a wal dir with a term but no wal/        ErrLogMissing          definite       no (wipe, rejoin)
//	Inspect/Rec… no raft.db in the dir                     ErrNoState             definite       no
//	RestoreDir   the dir already has raft state            ErrHasState            definite       no (use a new dir)
//	Recover/Res… invalid server list                       ErrBadServers          definite       no
//	OpenFile…    bytes of a snapshot file are wrong        ErrCorruptFile         definite       no
//	Restore…     bytes of the stream are wrong             fsm.ErrCorruptSnapshot definite       no
//
// (Read* is Read, ReadIndex and WaitApplied. Reads change nothing, so they
// have no definite/indeterminate class.) Errors wrap the sentinel with %w,
// and waits also wrap the context's error; callers use errors.Is/As and
// Retryable, never the text.
//
// # Linearizable reads (G1)
//
// Read runs a function on the local machine once the local state is at
// least as new as every write acknowledged before Read was called, on any
// node, by the ReadIndex protocol:
//
//  1. The gate. After winning an election a leader's commit index may not
//     yet cover what the previous leader acknowledged (raft commits older
//     entries only together with one of the new term). The leadership
//     goroutine therefore appends a barrier as soon as this node leads, and
//     the node refuses reads with ErrNotReady until that barrier is applied
//     here, in the current term.
//  2. The read index. Reads queue for the leader's next confirmation
//     round. A round records the commit index, then asks every other voter
//     of the latest configuration, with requests sent now, whether it is in
//     this term following this leader (Peers.ConfirmLeadership, answered by
//     Store.ConfirmLeadership). A quorum of yes, self included, proves that
//     when those replies were sent no voter quorum had moved to a later
//     term, so no later leader existed and no write newer than the recorded
//     index had been acknowledged. The leader then checks it still leads the
//     same term. A round serves only reads queued before it started: one
//     that arrives while a round is in flight waits for the next, and one
//     round serves all that waited (up to MaxReadsPerRound). Queued reads
//     are bounded by MaxWaitingReads.
//  3. Followers ask the leader for a read index (Peers.ReadIndex, which
//     runs the leader's ReadIndex) — the leader's round starts after the
//     follower's read began, so the argument carries over.
//  4. Every node then waits until its own state machine has applied the
//     read index, and runs the function under the machine's read lock.
//
// ReadLocal is the explicit, named stale read: the local state as it is.
//
// # Why not VerifyLeader
//
// hashicorp's Raft.VerifyLeader marks a request pending and counts it
// confirmed when a quorum of heartbeat responses says "success", but any
// heartbeat response that arrives after the request was registered counts,
// including one to a heartbeat sent before the read began. A leader paused
// (SIGSTOP) with such responses in flight, while the others elected a new
// leader and acknowledged writes, resumes, receives the old responses and
// "verifies" itself: a read built on VerifyLeader then serves state missing
// acknowledged writes. TestStaleHeartbeatReplyIsNotLeadershipProof builds
// exactly that (holding one heartbeat response back), shows the
// VerifyLeader read going stale, and shows Read refusing. The confirmation
// round above never counts a reply to a request sent before the read.
//
// # Heartbeats on raft's main goroutine
//
// hashicorp/raft v1.7.3 lets a transport run heartbeats on the connection's
// goroutine (a "fast path" past a follower's disk writes), and that handler
// changes the term and the server's state with no synchronisation against
// raft's main goroutine (hashicorp/raft#695). A leader idle in its loop that
// receives a newer leader's heartbeat there, then a command, writes the
// command under the newer term, at an index where the newer leader wrote
// something else: log matching compares terms only, so the entry is never
// replaced, and once committed this replica applies a command the others
// never saw. The Jepsen harness caught replicas diverging this way under
// the leader-pause nemesis. The TCP transport here (serialHeartbeats) drops
// the fast path, so heartbeats queue with every other RPC on the main
// goroutine; TestSteppedDownLeaderWritesNothingUnderTheNewTerm stages the
// race against both transports.
//
// # No vote before catching up (amnesia.go)
//
// A server that opens with no raft state and does not bootstrap a new
// cluster may be a voter whose disk was lost and who restarted under its
// old id: hashicorp/raft would let it vote at once with an empty log, and
// its vote can elect a leader that lacks an entry it had acknowledged
// (lost write). Its transport is wrapped in a vote guard that refuses
// vote and pre-vote requests (answering them itself, before raft) and
// sends none, until its log reaches the commit index carried by the first
// leader's AppendEntries. Bootstrap lifts it. The planted bug
// accept-old-incarnation leaves it off, and integration's
// TestAmnesiacVoterCannotLoseACommittedWrite shows the loss it prevents.
//
// # Applied index
//
// Raft.AppliedIndex is advanced when raft hands entries to its FSM
// goroutine, before they are applied, so it never decides that state is
// readable here. The adapter tracks its own applied index (AppliedIndex,
// WaitApplied): the last entry raft delivered to it, advanced under the
// machine's write lock after the entry took effect, with a broadcast
// channel replaced on every batch to wake waiters. Raft never delivers its
// own LogNoop and LogBarrier entries to an FSM, so a commit index ending on
// one would never be "applied"; that is why the gate's barrier is an
// ordinary command entry marked in Log.Extensions, which the adapter
// counts without passing it to the machine, and why code outside this
// package cannot call raft's Apply or Barrier (no *raft.Raft leaves it).
// Every entry after a
// term's barrier is then a command or a configuration change, both
// delivered, so a read index handed out after the gate is always reached.
// The snapshot header carries the applied index for the same reason.
//
// # Observing the apply path
//
// OpenObserved sets an ApplyObserver (observer.go) before raft starts: it
// is told of every applied command with its Result, and of every restore,
// on the FSM goroutine under the machine's write lock, so what it derives
// is consistent with the state a Read function sees. Package watch's hub
// is the one observer (the change feed, G14). Without one,
// apply is unchanged.
//
// # Leadership
//
// One goroutine follows raft's leadership, woken by a non-blocking raft
// observer and a reconciling poll (LeadershipPollInterval). On gaining
// leadership of a term it applies the barrier, opens the read gate, and
// then announces LeadershipEvent{Leader: true, Term}; on losing it,
// {Leader: false, Term}. Subscribe delivers these in order; AwaitLeadership
// returns a context that ends with the leadership, which is how leader-only
// work (repair, GC, membership reconcile) should run.
//
// # Checkpoints, snapshot files and offline operations
//
// Checkpoint takes a consistent copy of the state on a live node: it waits
// for a linearizable read index like Read, then clones the machine
// copy-on-write at the applied index, so writing it out holds nothing up.
// It is written as a snapshot stream, the same bytes raft's own snapshots
// hold; `metad snapshot save` wraps it in a snapshot file (snapshotfile.go:
// magic, JSON meta with index, term and configuration, the stream, and a
// SHA-256 over everything), which SummarizeStream, VerifyStream and
// RestoreDir read.
//
// offline.go works on the raft directory of a stopped node, refusing one a
// running server has locked (ErrDirInUse):
//
//   - InspectDir reads the stable store, log range, snapshots and latest
//     configuration, and optionally replays the newest snapshot and the
//     whole log into a fresh machine (state hash, record counts);
//   - ReadLog lists the log's entries (index, term, operation, digest) and
//     ReplayDirTo writes the state as of a chosen index as a snapshot
//     stream, so that DiffStreams can set it against a live snapshot
//     (`metad data log`, `metad data snapshot`, `metad snapshot diff`,
//     which the Jepsen harness uses to explain diverged replicas);
//   - RecoverDir is raft.RecoverCluster with this package's state machine:
//     the quorum-loss recovery behind `metad data recover`;
//   - RestoreDir makes a new node's directory start from a snapshot
//     stream, verified as it is copied, at the stream's index and term 1
//     (a new history whose terms grow along the log), with the
//     configuration given.
//
// # Metrics and logs
//
// RegisterMetrics exposes metad_raft_*: commit, applied and last log index,
// term, ready leadership, leader changes, Propose and Read latency, the
// ReadIndex batching factor and rounds, and the two bounded queues. Raft's
// own metrics go through go-metrics, which package node bridges.
//
// Raft and its stores log through hclog, bridged into slog (logger.go):
// hclog's value types are rendered as hclog would (hclog.Fmt formatted,
// not printed as a slice), and raft's repeated per-peer warnings (a peer
// down is reported several times a second) are logged once per 10 s per
// peer with a count. The store adds one line per leader change it sees.
//
// # Goroutines
//
// Store owns: the leadership goroutine and the read-round goroutine (both
// joined by Close); per round, one goroutine per peer asked (joined by the
// round); and one goroutine per raft future being waited on (Propose, the
// barrier, transfers), which ends when raft resolves the future. Close
// refuses new calls, gives raft up to ApplyTimeout to resolve what it
// accepted, shuts raft down, then waits up to ApplyTimeout again for the
// remaining futures: hashicorp/raft v1.7.3 can drop a committed batch
// queued for its FSM goroutine at shutdown without answering its futures,
// and only those waiters are then abandoned (logged).
//
// # Cluster identity on the transport (identity.go)
//
// A connection's dialler writes a short preamble (magic "MDCI", whose 'M'
// is never one of hashicorp/raft's rpc type bytes 0..4, a version and its
// cluster id) before raft's first RPC when it knows its cluster id and its
// state is at feature level 2 or more; at level 1 a 0.1.0 server may be on
// the other end and the wire stays raft's own. The acceptor peeks at the
// first byte in raft's per-connection goroutine: another cluster's id
// closes the connection (logged with both ids, at most once a minute per
// pair), an id it does not know yet passes (a new server being added), and
// a connection without a preamble passes only while this node has no id
// or is below level 2. This node's id is the applied state's
// (fsm.Machine.ClusterID; Store.ClusterID), or until that has one the id
// its data dir recorded (Config.ClusterID, which implies level 2). The
// preamble rides inside TLS when TLS is on.
//
// Config.TLS runs the transport over mutual TLS (tls.go): a stream layer
// under NetworkTransport that wraps accepted connections as TLS servers
// (handshaking on first read, so the accept loop never waits on a
// dialler) and dialled ones as TLS clients (handshaking within the dial
// timeout). TransportTLS.Handshake is a seam for checks after the
// handshake; the cluster id is checked by the identity layer above it.
package raftstore
