package main

import (
	"encoding/json"
	"os"

	"github.com/metad/metad/bench/load"
)

// Report is the JSON file a run writes: every size's figures, and what was
// run. bench/plot -capacity draws its charts from it.
type Report struct {
	Label    string   `json:"label"`
	Commit   string   `json:"commit"`
	Machine  string   `json:"machine"`
	Settings Settings `json:"settings"`
	// Empty is every node's memory with the cluster formed and no state.
	Empty []NodeMemory `json:"empty"`
	Sizes []SizeResult `json:"sizes"`
	// WallSeconds is the whole run, build and cluster start included.
	WallSeconds float64 `json:"wall_s"`
	// DiskEstimateBytes is the disk the run was estimated to need for its
	// largest size, all nodes together (doc.go, Disk); DiskFreeBytes is
	// what the work directory's filesystem had free before the run.
	DiskEstimateBytes int64 `json:"disk_estimate_bytes,omitempty"`
	DiskFreeBytes     int64 `json:"disk_free_bytes,omitempty"`
}

// Settings are the flags that shaped the run.
type Settings struct {
	Streams           int     `json:"streams"`
	Trim              float64 `json:"trim"`
	Writers           int     `json:"writers"`
	Concurrency       int     `json:"concurrency"`
	ResolveWindow     uint64  `json:"resolve_window,omitempty"`
	DurationSeconds   float64 `json:"duration_s"`
	SnapshotThreshold uint64  `json:"snapshot_threshold"`
	// SnapshotIntervalSeconds is --snapshot-interval; 0 is the servers'
	// default.
	SnapshotIntervalSeconds float64  `json:"snapshot_interval_s,omitempty"`
	ServerFlags             []string `json:"server_flags,omitempty"`
	// LogStore is the raft log store the servers report (bolt or wal).
	LogStore string `json:"log_store"`
}

// NodeMemory is one node's resident memory, read from /proc/PID/status.
type NodeMemory struct {
	Node string `json:"node"`
	Role string `json:"role"` // leader or follower, when read
	// RSSBytes is VmRSS; PeakBytes is VmHWM, the largest RSS the process
	// had since it started (a restarted node starts again).
	RSSBytes  int64 `json:"rss_bytes"`
	PeakBytes int64 `json:"peak_bytes"`
	// HeapBytes is the Go heap's live bytes right after a garbage
	// collection (read after RSS: the collection does not change it).
	HeapBytes int64 `json:"heap_bytes"`
}

// SizeResult is everything measured at one state size.
type SizeResult struct {
	// Records is the index records written so far; LiveRecords is what the
	// trims left of them (Records when untrimmed).
	Records     int64 `json:"records"`
	LiveRecords int64 `json:"live_records"`
	Streams     int   `json:"streams"`
	// RaftIndex is the leader's commit index once the fill was applied.
	RaftIndex uint64 `json:"raft_index"`
	// Phases is the wall time of each phase at this size, in seconds.
	Phases map[string]float64 `json:"phases_s"`
	// FillRecordsPerSecond is the records added at this size over the fill
	// phase's time.
	FillRecordsPerSecond float64      `json:"fill_records_per_s"`
	Memory               []NodeMemory `json:"memory"`
	// BytesPerRecord is the leader's RSS minus its RSS in the empty
	// cluster, over LiveRecords.
	BytesPerRecord float64 `json:"bytes_per_record"`
	// HeapBytesPerRecord is the same with the leader's live heap: what the
	// state holds, without the heap's headroom and garbage.
	HeapBytesPerRecord float64 `json:"heap_bytes_per_record"`
	// MemoryAfterRejoin is every node's memory after the restart and the
	// wiped follower's catch-up; RestoredBytesPerRecord is the wiped
	// follower's RSS (a state built by one snapshot restore, with no
	// garbage of the fill) minus its empty RSS, over LiveRecords.
	MemoryAfterRejoin          []NodeMemory `json:"memory_after_rejoin,omitempty"`
	RestoredBytesPerRecord     float64      `json:"restored_bytes_per_record,omitempty"`
	RestoredHeapBytesPerRecord float64      `json:"restored_heap_bytes_per_record,omitempty"`
	// MemAvailableBytes is the machine's MemAvailable after the fill.
	MemAvailableBytes int64            `json:"mem_available_bytes"`
	Checkpoint        *Checkpoint      `json:"checkpoint,omitempty"`
	RaftSnapshot      *RaftSnapshot    `json:"raft_snapshot,omitempty"`
	Restart           *Rejoin          `json:"restart,omitempty"`
	Wiped             *Rejoin          `json:"wiped,omitempty"`
	Load              map[string]*Load `json:"load,omitempty"`
	// Disk is every node's data dir at the end of the size (after the
	// raft snapshot and the rejoins).
	Disk []NodeDisk `json:"disk,omitempty"`
	// StateDiskBytesPerRecord is the leader's state store on disk
	// (metad_state_disk_bytes) over LiveRecords; 0 when the server does
	// not report it (a state machine held in memory).
	StateDiskBytesPerRecord float64 `json:"state_disk_bytes_per_record,omitempty"`
	// DataDirBytesPerRecord is the leader's whole data dir (state store,
	// raft log, raft snapshots) over LiveRecords.
	DataDirBytesPerRecord float64 `json:"data_dir_bytes_per_record,omitempty"`
}

// NodeDisk is one node's data dir, in bytes of allocated disk (du's
// count: raft-wal's preallocated segments count whole).
type NodeDisk struct {
	Node         string `json:"node"`
	DataDirBytes int64  `json:"data_dir_bytes"`
	// RaftLogBytes is raft/ without its snapshots and state store: the
	// log store and raft's stable store.
	RaftLogBytes  int64 `json:"raft_log_bytes"`
	SnapshotBytes int64 `json:"snapshot_bytes"`
	// StateDirBytes is raft/state, the state store's files, as du counts
	// them (Pebble's WAL preallocation included); 0 before the state store.
	StateDirBytes int64 `json:"state_dir_bytes,omitempty"`
	// StateBytes is what the node reports its state store holds on disk
	// (metad_state_disk_bytes); 0 when it does not report it.
	StateBytes int64 `json:"state_bytes,omitempty"`
}

// Cache is the state store's cache over one load run, summed over the
// nodes: the change of metad_state_cache_hits_total and
// metad_state_cache_misses_total. Absent when the servers do not export
// them.
type Cache struct {
	Hits   int64 `json:"hits"`
	Misses int64 `json:"misses"`
	// HitRatio is Hits over Hits+Misses; 0 when there were no lookups.
	HitRatio float64 `json:"hit_ratio"`
}

// Checkpoint is one consistent snapshot streamed from the leader
// (Cluster.Snapshot, as `metad snapshot save` takes it): a clone of the
// state machine written out in the snapshot encoding raft's own snapshots
// use, sent over loopback gRPC and counted, not stored.
type Checkpoint struct {
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
}

// RaftSnapshot is the newest raft snapshot of the leader once it covers
// the fill: its size on disk and what raft's metrics say writing it took
// (the mean over the snapshots the leader took while this size was
// measured).
type RaftSnapshot struct {
	Taken     bool    `json:"taken"`
	Index     uint64  `json:"index,omitempty"`
	Bytes     int64   `json:"bytes,omitempty"`
	Count     int     `json:"count,omitempty"`
	CreateMs  float64 `json:"create_ms,omitempty"`
	PersistMs float64 `json:"persist_ms,omitempty"`
	Note      string  `json:"note,omitempty"`
}

// Rejoin is a follower brought back: restarted on its data dir, or wiped
// and restarted under the same id.
type Rejoin struct {
	Node string `json:"node"`
	// StopSeconds is SIGTERM until the process exited.
	StopSeconds float64 `json:"stop_s"`
	// ServingSeconds is the start of the process until /readyz said 200
	// and the node had applied the leader's commit index of the moment it
	// was stopped.
	ServingSeconds float64 `json:"serving_s"`
	// RestoreMs is the snapshot restore in the new process: raft's
	// raft_fsm_restore (an installed snapshot), or for the restore of its
	// own snapshot at start, which that metric misses (it runs before the
	// node bridges raft's metrics), the time between raft's "starting
	// restore from snapshot" and "restored from snapshot" log lines; 0
	// when none ran.
	RestoreMs float64 `json:"restore_ms"`
	// FromSnapshot: the node restored a snapshot (its own on restart; one
	// the leader sent by InstallSnapshot when wiped). Without it, it
	// replayed the log.
	FromSnapshot bool `json:"from_snapshot"`
	// InstallSnapshot: the leader sent the node a snapshot.
	InstallSnapshot bool `json:"install_snapshot"`
	// Commit is commit-append at --concurrency from the start of the new
	// process until it served (the wiped follower only): what writers see
	// while the leader sends a snapshot and the follower catches up, to
	// set against the steady commit-append run.
	Commit *Load `json:"commit,omitempty"`
}

// Load is one closed-loop run at --concurrency.
type Load struct {
	Ops        int64            `json:"ops"`
	Throughput float64          `json:"throughput"`
	P50Ms      float64          `json:"p50_ms"`
	P99Ms      float64          `json:"p99_ms"`
	Errors     map[string]int64 `json:"errors,omitempty"`
	// Checkpoints is how many checkpoints were streamed from the leader
	// during the run (the "during snapshot" runs).
	Checkpoints int `json:"checkpoints,omitempty"`
	// CheckpointErrors counts checkpoints that failed (the node had lost
	// its leader for a moment); LeaderLost says the node measured against
	// was no longer the leader when the run ended.
	CheckpointErrors int  `json:"checkpoint_errors,omitempty"`
	LeaderLost       bool `json:"leader_lost,omitempty"`
	// RaftSnapshots is how many raft snapshots the leader took during the
	// run: a steady run with one is not steady.
	RaftSnapshots int `json:"raft_snapshots,omitempty"`
	// Cache is the state store's cache during the run, when the servers
	// report it.
	Cache *Cache `json:"cache,omitempty"`
}

// The load runs, by key of SizeResult.Load.
const (
	loadResolve       = "resolve"
	loadAppend        = "commit-append"
	loadResolveDuring = "resolve-during-snapshot"
	loadAppendDuring  = "commit-append-during-snapshot"
)

func loadOf(r load.Result) *Load {
	l := &Load{Ops: r.Ops, Throughput: r.Throughput, P50Ms: r.Latency.P50, P99Ms: r.Latency.P99}
	if len(r.Errors) > 0 {
		l.Errors = r.Errors
	}
	return l
}

// bytesPerRecord is the memory the leader gained over the empty cluster,
// per live record; 0 when there is nothing to divide by.
func bytesPerRecord(rss, emptyRSS, live int64) float64 {
	if live <= 0 {
		return 0
	}
	return float64(rss-emptyRSS) / float64(live)
}

// leaderMemory returns the leader's entry of mem and the same node's
// entry of empty.
func leaderMemory(mem, empty []NodeMemory) (leader, before NodeMemory, ok bool) {
	if leader, ok = leaderOf(mem); !ok {
		return leader, before, false
	}
	before, ok = nodeMemory(empty, leader.Node)
	return leader, before, ok
}

// leaderOf returns the leader's entry of mem.
func leaderOf(mem []NodeMemory) (NodeMemory, bool) {
	for _, m := range mem {
		if m.Role == "leader" {
			return m, true
		}
	}
	return NodeMemory{}, false
}

// nodeMemory returns node id's entry of mem.
func nodeMemory(mem []NodeMemory, id string) (NodeMemory, bool) {
	for _, m := range mem {
		if m.Node == id {
			return m, true
		}
	}
	return NodeMemory{}, false
}

// cacheDelta is the cache's lookups between two scrapes of every node's
// counters (summed over the nodes), or nil when no node exported them.
// A node restarted in between (its counters went back) adds nothing.
func cacheDelta(before, after []map[string]float64) *Cache {
	var c Cache
	seen := false
	for i := range min(len(before), len(after)) {
		h0, okH0 := before[i][stateCacheHits]
		m0, okM0 := before[i][stateCacheMisses]
		h1, okH1 := after[i][stateCacheHits]
		m1, okM1 := after[i][stateCacheMisses]
		if !okH0 || !okM0 || !okH1 || !okM1 {
			continue
		}
		seen = true
		if h1 < h0 || m1 < m0 {
			continue
		}
		c.Hits += int64(h1 - h0)
		c.Misses += int64(m1 - m0)
	}
	if !seen {
		return nil
	}
	if n := c.Hits + c.Misses; n > 0 {
		c.HitRatio = float64(c.Hits) / float64(n)
	}
	return &c
}

// diskPerRecord is node id's state store and whole data dir per live
// record; each 0 when unknown.
func diskPerRecord(disk []NodeDisk, id string, live int64) (state, dataDir float64) {
	for _, d := range disk {
		if d.Node == id && live > 0 {
			return float64(d.StateBytes) / float64(live), float64(d.DataDirBytes) / float64(live)
		}
	}
	return 0, 0
}

// summaryDelta is the mean of the observations a Prometheus summary got
// between two scrapes (sum and count of each), and how many there were.
func summaryDelta(sum0, count0, sum1, count1 float64) (mean float64, n int) {
	n = int(count1 - count0)
	if n <= 0 {
		return 0, 0
	}
	return (sum1 - sum0) / float64(n), n
}

func writeReport(path string, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
