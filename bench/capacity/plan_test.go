package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseSizes(t *testing.T) {
	got, err := parseSizes("2500,10k,100k, 1M,10M,100M")
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{2500, 10_000, 100_000, 1_000_000, 10_000_000, 100_000_000}; !slices.Equal(got, want) {
		t.Errorf("parseSizes = %v", got)
	}
	for _, bad := range []string{"100k,10k", "10k,10k", "0", "101M", "1000M", "ten", "", "1G"} {
		if _, err := parseSizes(bad); err == nil || !strings.Contains(err.Error(), "--sizes") {
			t.Errorf("parseSizes(%q) = %v, want an error naming --sizes", bad, err)
		}
	}
}

func TestDistributeAddsExactlyTheNewRecords(t *testing.T) {
	for _, tc := range []struct{ prev, next, streams int }{
		{0, 10_000, 1000}, {10_000, 100_000, 1000}, {0, 10, 1000}, {10, 100, 1000},
		{0, 10_000, 1_000_000}, {10_000, 100_000, 1_000_000}, {0, 7, 3}, {7, 8, 3},
	} {
		add := distribute(tc.prev, tc.next, tc.streams)
		if want := min(tc.next, tc.streams); len(add) != want {
			t.Errorf("%+v: %d streams active, want %d", tc, len(add), want)
		}
		sum := 0
		for i, n := range add {
			sum += n
			if i >= min(tc.prev, tc.streams) && n < 1 {
				t.Errorf("%+v: new stream %d gets %d records; a stream needs one", tc, i, n)
			}
		}
		if sum != tc.next-tc.prev {
			t.Errorf("%+v: adds %d records, want %d", tc, sum, tc.next-tc.prev)
		}
	}
}

func TestDistributeIsEven(t *testing.T) {
	add := distribute(0, 10, 4)
	if !slices.Equal(add, []int{3, 3, 2, 2}) {
		t.Errorf("distribute(0, 10, 4) = %v, want [3 3 2 2]", add)
	}
	// Two new streams get one each first; the other 6 go evenly over all 4.
	add = distribute(2, 10, 4)
	if !slices.Equal(add, []int{2, 2, 2, 2}) {
		t.Errorf("distribute(2, 10, 4) = %v, want [2 2 2 2]", add)
	}
}

func TestLiveRecords(t *testing.T) {
	// Two segments: [0,5) and [5,6): 5 + 1 records.
	segs := []segment{{0, 5}, {5, 1}}
	for _, tc := range []struct {
		trim uint64
		want uint64
	}{
		{0, 6},
		{1, 6}, // [0,1) holds only the generation-0 record [0,5), still live
		{2, 5}, // published [1,2) dropped
		{4, 3}, // [1,2) [2,3) [3,4) dropped
		{5, 1}, // the first segment entirely: only [5,6) left
		{6, 0},
	} {
		if got := liveRecords(segs, tc.trim); got != tc.want {
			t.Errorf("liveRecords(trim %d) = %d, want %d", tc.trim, got, tc.want)
		}
	}
}

func TestTrimPoint(t *testing.T) {
	if got := trimPoint(1000, 0.5); got != 500 {
		t.Errorf("trimPoint(1000, 0.5) = %d", got)
	}
	if got := trimPoint(1000, 0); got != 0 {
		t.Errorf("trimPoint(1000, 0) = %d", got)
	}
	if trimPoint(3, 0.5) > trimPoint(4, 0.5) {
		t.Error("trim point moved back as the stream grew")
	}
}

func TestParseFlagsNamesEachBadFlag(t *testing.T) {
	_, err := parseFlags([]string{"--streams", "0", "--trim", "1.5", "--writers", "0", "--sizes", "1M,10k", "--skip", "nap",
		"--duration", "1ms"}, &strings.Builder{})
	for _, flag := range []string{"--streams", "--trim", "--writers", "--sizes", "--skip", "--duration"} {
		if err == nil || !strings.Contains(err.Error(), flag) {
			t.Errorf("parseFlags did not name %s: %v", flag, err)
		}
	}
	o, err := parseFlags(nil, &strings.Builder{})
	if err != nil {
		t.Fatalf("defaults refused: %v", err)
	}
	if !slices.Equal(o.sizes, []int{10_000, 100_000, 1_000_000}) || o.streams != 1000 || o.concurrency != 16 {
		t.Errorf("defaults = %+v", o)
	}
}

func TestDiskEstimate(t *testing.T) {
	// 10M: the log holds every record (fewer than 10240 full entries).
	const r10M, r100M = int64(10_000_000), int64(100_000_000)
	whole := r10M*(raftLogBytesPerRecord+snapshotCopies*snapshotBytesPerRecord) + fixedDiskBytes
	if got := diskEstimate(wholeSnapshots, int(r10M), 3, defaultTrailingLogs); got != 3*whole {
		t.Errorf("whole snapshots: diskEstimate(10M) = %d, want %d", got, 3*whole)
	}
	store := r10M*(raftLogBytesPerRecord+stateDiskBytesPerRecord) + fixedDiskBytes
	if got, want := diskEstimate(stateStore, int(r10M), 3, defaultTrailingLogs), 3*store+r10M*snapshotBytesPerRecord; got != want {
		t.Errorf("state store: diskEstimate(10M) = %d, want %d", got, want)
	}
	// 100M: the log holds 10240 full entries and what is written between
	// two snapshots, not every record.
	logRecords := int64(defaultTrailingLogs)*4096 + compactionLagRecords
	whole = r100M*snapshotCopies*snapshotBytesPerRecord + logRecords*raftLogBytesPerRecord + fixedDiskBytes
	if got := diskEstimate(wholeSnapshots, int(r100M), 3, defaultTrailingLogs); got != 3*whole {
		t.Errorf("whole snapshots: diskEstimate(100M) = %d, want %d", got, 3*whole)
	}
	store = r100M*stateDiskBytesPerRecord + logRecords*raftLogBytesPerRecord + fixedDiskBytes
	if got, want := diskEstimate(stateStore, int(r100M), 3, defaultTrailingLogs), 3*store+r100M*snapshotBytesPerRecord; got != want {
		t.Errorf("state store: diskEstimate(100M) = %d, want %d", got, want)
	}
	for _, m := range []diskModel{stateStore, wholeSnapshots} {
		if diskEstimate(m, int(r100M), 3, 100) >= diskEstimate(m, int(r100M), 3, defaultTrailingLogs) {
			t.Errorf("%s: fewer trailing logs should need less disk", m)
		}
		prev := int64(0)
		for _, n := range []int{0, 10_000, 1_000_000, 50_000_000, 100_000_000} {
			if e := diskEstimate(m, n, 3, defaultTrailingLogs); e <= prev {
				t.Errorf("%s: diskEstimate(%d) = %d, not above %d", m, n, e, prev)
			} else {
				prev = e
			}
		}
	}
}

func TestTrailingLogsFromServerFlags(t *testing.T) {
	for _, tc := range []struct {
		flags []string
		want  uint64
	}{
		{nil, defaultTrailingLogs},
		{[]string{"--raft-log-store", "wal"}, defaultTrailingLogs},
		{[]string{"--raft-trailing-logs", "500"}, 500},
		{[]string{"-raft-trailing-logs=700", "--raft-log-store", "wal"}, 700},
		{[]string{"--raft-log-store", "raft-trailing-logs"}, defaultTrailingLogs}, // a value, not a flag
	} {
		if got := trailingLogs(tc.flags); got != tc.want {
			t.Errorf("trailingLogs(%q) = %d, want %d", tc.flags, got, tc.want)
		}
	}
}

func TestCheckDiskSaysWhatIsMissing(t *testing.T) {
	if err := checkDisk(100<<30, 90<<30, 0, 100_000_000); err != nil {
		t.Errorf("enough space refused: %v", err)
	}
	if err := checkDisk(50<<30, 90<<30, 45<<30, 100_000_000); err != nil {
		t.Errorf("space the servers already hold not counted: %v", err)
	}
	err := checkDisk(10<<30, 90<<30, 0, 100_000_000)
	if err == nil {
		t.Fatal("too little space accepted")
	}
	for _, want := range []string{"100M records", "90.0 GiB", "10.0 GiB free", "--disk-check=false"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("checkDisk error lacks %q: %v", want, err)
		}
	}
}

func TestDirBytesCountsAllocatedBlocks(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "raft", "snapshots"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "raft", "snapshots", "s"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := dirBytes(dir); got < 1<<20 || got > 1<<20+64<<10 {
		t.Errorf("dirBytes = %d, want about 1 MiB", got)
	}
	if got := dirBytes(filepath.Join(dir, "missing")); got != 0 {
		t.Errorf("dirBytes of a missing dir = %d", got)
	}
}
