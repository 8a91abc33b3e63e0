package main

import (
	"strings"
	"testing"
)

func TestWriteTables(t *testing.T) {
	var b strings.Builder
	writeTables(&b, sampleReport())
	out := b.String()
	for _, want := range []string{
		"### State and recovery (up to 1000 streams, untrimmed, raft snapshot threshold 1024, log store wal)",
		// records, live, streams, leader RSS, B/record (RSS, heap), disk B/record (state store,
		// data dir), checkpoint MB and s, raft snapshot MB and persist s, restart, restore, wiped, via
		"| 10k | 10k | 1000 | 64.0 | 180 | 120 | 64 | 400 | 1.5 | 0.25 | 1.5 | 0.80 | 1.50 | 0.70 | 3.25 | InstallSnapshot |",
		"| 1M | 1M | 1000 | 64.0 | 180 | 120 | 64 | 400 | 150.0 | 0.25 | 150.0 | 0.80 | 1.50 | 0.70 | 3.25 | InstallSnapshot |",
		"### Latency at concurrency 16",
		// resolve p50, p99, p99 snap, /s, cache hit %; append p50, p99, p99 snap, p99 wipe, /s;
		// errors (the wipe writer's 2 counted)
		"| 10k | 1.50 | 7.00 | 14.00 | 7000 | 97.5 | 5.00 | 19.00 | 40.00 | 55.50 | 2500 | 3 |",
		"### Phase wall times (s)",
		"| 10k | 12.5 | - | 0.50 | - | - | - | - | - | 800 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("tables lack %q:\n%s", want, out)
		}
	}
	// Every row has as many cells as its table's header.
	cells := 0
	for _, line := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(line, "| records"):
			cells = strings.Count(line, "|")
		case strings.HasPrefix(line, "|") && strings.Count(line, "|") != cells:
			t.Errorf("row %q has %d cells, its header %d", line, strings.Count(line, "|")-1, cells-1)
		}
	}
}

func TestTablesSayWhatIsMissing(t *testing.T) {
	r := sampleReport()
	s := &r.Sizes[0]
	s.RaftSnapshot = &RaftSnapshot{Note: "timed out"}
	s.Restart.FromSnapshot = false
	s.Wiped.InstallSnapshot = false
	s.Wiped.Commit = nil
	s.Load = nil
	s.StateDiskBytesPerRecord, s.DataDirBytesPerRecord = 0, 0 // today's servers: no state store on disk
	r.Sizes[1].Load[loadResolve].Cache = nil                  // nor a cache to report
	var b strings.Builder
	writeTables(&b, r)
	out := b.String()
	for _, want := range []string{
		"| 10k | 10k | 1000 | 64.0 | 180 | 120 | - | - | 1.5 | 0.25 | - | - | 1.50 | none (log) | 3.25 | log |",
		"| 10k | - | - | - | - | - | - | - | - | - | - | 0 |",
		"| 1M | 1.50 | 9.00 | 18.00 | 7000 | - | 5.00 | 19.00 | 40.00 | 55.50 | 2500 | 3 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("tables lack %q:\n%s", want, out)
		}
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{10_000: "10k", 1_000_000: "1M", 2500: "2500", 1500: "1500", 12_000_000: "12M"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}
