package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/bench/load"
)

func TestBytesPerRecordUsesTheLeadersOwnEmptyRSS(t *testing.T) {
	empty := []NodeMemory{{Node: "n1", RSSBytes: 30 << 20}, {Node: "n2", RSSBytes: 40 << 20}}
	mem := []NodeMemory{{Node: "n1", Role: "follower", RSSBytes: 100 << 20}, {Node: "n2", Role: "leader", RSSBytes: 140 << 20}}
	lm, e, ok := leaderMemory(mem, empty)
	if !ok || lm.Node != "n2" || e.Node != "n2" {
		t.Fatalf("leaderMemory = %+v %+v %v", lm, e, ok)
	}
	if got := bytesPerRecord(lm.RSSBytes, e.RSSBytes, 1<<20); got != 100 {
		t.Errorf("bytesPerRecord = %v, want 100", got)
	}
	if got := bytesPerRecord(1, 0, 0); got != 0 {
		t.Errorf("bytesPerRecord over no records = %v", got)
	}
	if _, _, ok := leaderMemory(mem[:1], empty); ok {
		t.Error("leaderMemory found a leader among followers")
	}
}

func TestSummaryDelta(t *testing.T) {
	mean, n := summaryDelta(100, 2, 700, 5)
	if mean != 200 || n != 3 {
		t.Errorf("summaryDelta = %v, %d; want 200, 3", mean, n)
	}
	if mean, n := summaryDelta(100, 2, 100, 2); mean != 0 || n != 0 {
		t.Errorf("no new observations: %v, %d", mean, n)
	}
}

func TestParseMetrics(t *testing.T) {
	text := `# HELP raft_fsm_restore Raft: milliseconds.
# TYPE raft_fsm_restore summary
raft_fsm_restore{quantile="0.5"} NaN
raft_fsm_restore_sum 1234.5
raft_fsm_restore_count 1
metad_raft_log_store{store="bolt"} 1
metad_raft_applied_index 4.2e+06
`
	m, err := parseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if m["raft_fsm_restore_sum"] != 1234.5 || m["raft_fsm_restore_count"] != 1 || m["metad_raft_applied_index"] != 4.2e6 ||
		m[`metad_raft_log_store{store="bolt"}`] != 1 {
		t.Errorf("parseMetrics = %v", m)
	}
}

func TestParseStatus(t *testing.T) {
	text := "Name:\tmetad\nVmPeak:\t 900000 kB\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\n"
	rss, peak, err := parseStatus(strings.NewReader(text))
	if err != nil || rss != 100<<20 || peak != 200<<20 {
		t.Errorf("parseStatus = %d, %d, %v", rss, peak, err)
	}
	if _, _, err := parseStatus(strings.NewReader("Name:\tmetad\n")); err == nil {
		t.Error("parseStatus accepted a status without VmRSS")
	}
}

func TestLoadOfKeepsTheFiguresAndErrors(t *testing.T) {
	r := load.Result{Ops: 10, Throughput: 5, Latency: load.Latency{P50: 1.5, P99: 9}, Errors: map[string]int64{"UNAVAILABLE": 2}}
	l := loadOf(r)
	if l.Ops != 10 || l.Throughput != 5 || l.P50Ms != 1.5 || l.P99Ms != 9 || l.Errors["UNAVAILABLE"] != 2 {
		t.Errorf("loadOf = %+v", l)
	}
	if loadOf(load.Result{Errors: map[string]int64{}}).Errors != nil {
		t.Error("no errors should leave Errors out of the JSON")
	}
}

func TestWriteReportRoundTrips(t *testing.T) {
	path := filepath.Join(t.TempDir(), "capacity.json")
	in := sampleReport()
	if err := writeReport(path, in); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out Report
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(in)
	c, _ := json.Marshal(&out)
	if !bytes.Equal(a, c) {
		t.Errorf("round trip differs:\n%s\n%s", a, c)
	}
	for _, field := range []string{`"records"`, `"bytes_per_record"`, `"checkpoint"`, `"raft_snapshot"`, `"wiped"`, `"p99_ms"`, `"phases_s"`,
		`"disk"`, `"state_disk_bytes_per_record"`, `"data_dir_bytes_per_record"`, `"raft_log_bytes"`, `"cache"`, `"hit_ratio"`,
		`"commit"`, `"disk_estimate_bytes"`} {
		if !bytes.Contains(b, []byte(field)) {
			t.Errorf("JSON lacks %s (bench/plot reads it)", field)
		}
	}
}

// sampleReport is two sizes as a run would record them.
func sampleReport() *Report {
	size := func(n int64, p99 float64) SizeResult {
		return SizeResult{
			Records: n, LiveRecords: n, Streams: 1000, RaftIndex: 5000,
			Phases:               map[string]float64{"fill": 12.5, "checkpoint": 0.5},
			FillRecordsPerSecond: float64(n) / 12.5,
			Memory: []NodeMemory{{Node: "n1", Role: "leader", RSSBytes: 64 << 20, PeakBytes: 80 << 20, HeapBytes: 40 << 20},
				{Node: "n2", Role: "follower", RSSBytes: 60 << 20}},
			BytesPerRecord: 180, HeapBytesPerRecord: 120,
			Checkpoint:   &Checkpoint{Bytes: n * 150, Seconds: 0.25},
			RaftSnapshot: &RaftSnapshot{Taken: true, Index: 5000, Bytes: n * 150, Count: 1, PersistMs: 800},
			Restart:      &Rejoin{Node: "n2", ServingSeconds: 1.5, RestoreMs: 700, FromSnapshot: true},
			Wiped: &Rejoin{Node: "n3", ServingSeconds: 3.25, RestoreMs: 900, FromSnapshot: true, InstallSnapshot: true,
				Commit: &Load{Ops: 300, Throughput: 90, P50Ms: 9, P99Ms: 55.5, Errors: map[string]int64{"UNAVAILABLE": 2}}},
			Disk: []NodeDisk{{Node: "n1", DataDirBytes: n * 400, RaftLogBytes: n * 150, SnapshotBytes: n * 180, StateBytes: n * 64},
				{Node: "n2", DataDirBytes: n * 390}},
			StateDiskBytesPerRecord: 64, DataDirBytesPerRecord: 400,
			Load: map[string]*Load{
				loadResolve:       {Ops: 1000, Throughput: 7000, P50Ms: 1.5, P99Ms: p99, Cache: &Cache{Hits: 975, Misses: 25, HitRatio: 0.975}},
				loadAppend:        {Ops: 500, Throughput: 2500, P50Ms: 5, P99Ms: 19},
				loadResolveDuring: {Ops: 800, Throughput: 5000, P50Ms: 2, P99Ms: 2 * p99, Checkpoints: 3},
				loadAppendDuring:  {Ops: 400, Throughput: 1500, P50Ms: 7, P99Ms: 40, Errors: map[string]int64{"UNAVAILABLE": 1}},
			},
		}
	}
	return &Report{Label: "test", Commit: "abc", Machine: "2 cores",
		Settings: Settings{Streams: 1000, Concurrency: 16, DurationSeconds: 10, SnapshotThreshold: 1024, LogStore: "wal"},
		Empty:    []NodeMemory{{Node: "n1", RSSBytes: 30 << 20}},
		Sizes:    []SizeResult{size(10_000, 7), size(1_000_000, 9)}, WallSeconds: float64(time.Minute / time.Second),
		DiskEstimateBytes: 3 << 30, DiskFreeBytes: 80 << 30}
}

func TestStartupRestoreFromTheLog(t *testing.T) {
	log := `time=2026-12-01T10:59:02.691Z level=INFO msg="effective configuration" data-dir=/tmp/x
time=2026-12-01T10:59:02.710Z level=INFO msg="starting restore from snapshot" component=raft id=2-56391-1 size-in-bytes=7112666
time=2026-12-01T10:59:02.842Z level=INFO msg="raftstore: state restored from a snapshot" component=raft index=56391
time=2026-12-01T10:59:02.842Z level=INFO msg="restored from snapshot" component=raft id=2-56391-1
`
	d, ok := startupRestore(log)
	if !ok || d != 132*time.Millisecond {
		t.Errorf("startupRestore = %v, %v; want 132ms", d, ok)
	}
	if _, ok := startupRestore(strings.SplitN(log, "\n", 2)[0]); ok {
		t.Error("startupRestore found a restore in a log without one")
	}
	if _, ok := startupRestore(`time=bad msg="starting restore from snapshot"` + "\n" + `time=2026-12-01T10:59:02.842Z msg="restored from snapshot"`); ok {
		t.Error("startupRestore accepted a restore whose start has no time")
	}
}

func TestLogStoreFromMetrics(t *testing.T) {
	m := map[string]float64{`metad_raft_log_store{store="bolt"}`: 0, `metad_raft_log_store{store="wal"}`: 1, "x": 1}
	if got := logStore(m); got != "wal" {
		t.Errorf("logStore = %q, want wal", got)
	}
	if got := logStore(map[string]float64{}); got != "unknown" {
		t.Errorf("logStore of no metrics = %q", got)
	}
}

func TestCacheDelta(t *testing.T) {
	scrape := func(hits, misses float64) map[string]float64 {
		return map[string]float64{stateCacheHits: hits, stateCacheMisses: misses, "go_goroutines": 9}
	}
	// Summed over the nodes: (90+0+10) hits of 100+0+100 lookups.
	before := []map[string]float64{scrape(10, 5), scrape(7, 7), scrape(0, 0)}
	after := []map[string]float64{scrape(100, 15), scrape(7, 7), scrape(10, 90)}
	c := cacheDelta(before, after)
	if c == nil || c.Hits != 100 || c.Misses != 100 || c.HitRatio != 0.5 {
		t.Errorf("cacheDelta = %+v, want 100 hits, 100 misses, 0.5", c)
	}
	// A node restarted in between (its counters went back) or not
	// answering (nil) adds nothing.
	c = cacheDelta([]map[string]float64{scrape(50, 50), scrape(10, 0)}, []map[string]float64{scrape(5, 1), nil})
	if c == nil || c.Hits != 0 || c.Misses != 0 || c.HitRatio != 0 {
		t.Errorf("cacheDelta over a restart = %+v, want zero lookups", c)
	}
	// Today's servers export no cache metrics: no figure at all.
	none := []map[string]float64{{"go_goroutines": 9}}
	if c := cacheDelta(none, none); c != nil {
		t.Errorf("cacheDelta without the metrics = %+v, want nil", c)
	}
}

func TestDiskPerRecord(t *testing.T) {
	disk := []NodeDisk{{Node: "n1", DataDirBytes: 4000, StateBytes: 640}, {Node: "n2", DataDirBytes: 9000}}
	if s, d := diskPerRecord(disk, "n1", 10); s != 64 || d != 400 {
		t.Errorf("diskPerRecord(n1) = %v, %v; want 64, 400", s, d)
	}
	if s, d := diskPerRecord(disk, "n2", 10); s != 0 || d != 900 {
		t.Errorf("diskPerRecord(n2), no state store reported = %v, %v; want 0, 900", s, d)
	}
	if s, d := diskPerRecord(disk, "n3", 10); s != 0 || d != 0 {
		t.Errorf("diskPerRecord of an unknown node = %v, %v", s, d)
	}
	if s, d := diskPerRecord(disk, "n1", 0); s != 0 || d != 0 {
		t.Errorf("diskPerRecord over no records = %v, %v", s, d)
	}
}
