package main

import (
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// capacityJSON is two sizes in bench/capacity's shape; the second has no
// raft snapshot and its restart replayed the log.
const capacityJSON = `{
 "label": "test", "commit": "abc",
 "settings": {"streams": 1000, "trim": 0, "concurrency": 16},
 "sizes": [
  {"records": 10000, "live_records": 10000,
   "memory": [{"node": "n1", "role": "leader", "rss_bytes": 104857600, "peak_bytes": 209715200},
              {"node": "n2", "role": "follower", "rss_bytes": 52428800, "peak_bytes": 62914560},
              {"node": "n3", "role": "follower", "rss_bytes": 73400320, "peak_bytes": 83886080}],
   "bytes_per_record": 4000, "heap_bytes_per_record": 3000, "restored_bytes_per_record": 900,
   "checkpoint": {"bytes": 2700000, "seconds": 0.04},
   "raft_snapshot": {"taken": true, "bytes": 2600000, "persist_ms": 120},
   "restart": {"serving_s": 0.6, "restore_ms": 30, "from_snapshot": true},
   "wiped": {"serving_s": 0.9, "restore_ms": 40, "from_snapshot": true},
   "load": {"resolve": {"throughput": 7000, "p50_ms": 1.8, "p99_ms": 7},
            "commit-append": {"throughput": 2500, "p50_ms": 5.7, "p99_ms": 19},
            "resolve-during-snapshot": {"throughput": 4500, "p50_ms": 2.5, "p99_ms": 13},
            "commit-append-during-snapshot": {"throughput": 1700, "p50_ms": 6.4, "p99_ms": 38}}},
  {"records": 1000000, "live_records": 1000000,
   "memory": [{"node": "n1", "role": "leader", "rss_bytes": 314572800, "peak_bytes": 419430400}],
   "bytes_per_record": 250,
   "checkpoint": {"bytes": 150000000, "seconds": 1.5},
   "raft_snapshot": {"taken": false},
   "restart": {"serving_s": 4.5, "restore_ms": 0, "from_snapshot": false},
   "load": {"resolve": {"throughput": 6500, "p50_ms": 2, "p99_ms": 8}}}
 ]}`

func writeCapacity(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "capacity.json")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestDrawsEveryCapacityChart: a run's JSON gives one decodable PNG per
// capacity chart.
func TestDrawsEveryCapacityChart(t *testing.T) {
	r, err := readCapacity(writeCapacity(t, capacityJSON))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files, err := drawCapacity(r, dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(capacityCharts) {
		t.Errorf("wrote %v, want all %d charts", files, len(capacityCharts))
	}
	for _, name := range files {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
			t.Errorf("%s is %v", name, b)
		}
	}
}

// TestCapacityPointsSkipWhatWasNotMeasured: a size without a raft
// snapshot, or whose restart restored none, has no point on those lines,
// rather than a zero that would read as "instant".
func TestCapacityPointsSkipWhatWasNotMeasured(t *testing.T) {
	r, err := readCapacity(writeCapacity(t, capacityJSON))
	if err != nil {
		t.Fatal(err)
	}
	series := func(file, name string) capSeries {
		for _, c := range capacityCharts {
			for _, s := range c.series {
				if c.file == file && s.name == name {
					return s
				}
			}
		}
		t.Fatalf("no series %q in %s", name, file)
		return capSeries{}
	}
	for _, tc := range []struct {
		file, name string
		want       []float64 // y per measured size, in order
	}{
		{"snapshot-size.png", "raft snapshot on disk", []float64{2.6}},
		{"snapshot-size.png", "checkpoint (Cluster.Snapshot)", []float64{2.7, 150}},
		{"snapshot-time.png", "restore on restart", []float64{0.03}},
		{"rejoin.png", "follower restarted", []float64{0.6, 4.5}},
		{"rejoin.png", "follower wiped", []float64{0.9}},
		{"memory.png", "followers (largest)", []float64{70}},
		{"bytes-per-record.png", "leader live heap after the fill", []float64{3000}},
		{"bytes-per-record.png", "leader RSS after the fill", []float64{4000, 250}},
		{"memory.png", "peak of any node (VmHWM)", []float64{200, 400}},
		{"commit-latency.png", "p99", []float64{19}},
		{"resolve-latency.png", "p99", []float64{7, 8}},
	} {
		pts := capPoints(r.Sizes, series(tc.file, tc.name).value)
		if len(pts) != len(tc.want) {
			t.Errorf("%s %q: %d points, want %d", tc.file, tc.name, len(pts), len(tc.want))
			continue
		}
		for i, p := range pts {
			if diff := p.Y - tc.want[i]; diff > 1e-9 || diff < -1e-9 {
				t.Errorf("%s %q point %d = %v, want %v", tc.file, tc.name, i, p.Y, tc.want[i])
			}
		}
	}
}

func TestReadCapacityRefusesWhatItCannotDraw(t *testing.T) {
	for name, text := range map[string]string{
		"no sizes":    `{"sizes": []}`,
		"compare's":   `[{"pair": "x", "concurrency": 1}]`,
		"shrinking":   `{"sizes": [{"records": 100}, {"records": 10}]}`,
		"zero":        `{"sizes": [{"records": 0}]}`,
		"not json at": `{"sizes": [`,
	} {
		if _, err := readCapacity(writeCapacity(t, text)); err == nil {
			t.Errorf("%s: readCapacity accepted %s", name, text)
		}
	}
}

func TestShortCount(t *testing.T) {
	for n, want := range map[int64]string{10_000: "10k", 100_000: "100k", 1_000_000: "1M", 2_500_000: "2.5M", 10_000_000: "10M", 500: "500", 1500: "1.5k"} {
		if got := shortCount(n); got != want {
			t.Errorf("shortCount(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestCapacityRefusesAnEmptyRun(t *testing.T) {
	r := &capReport{Sizes: []capSize{{Records: 10}}}
	if _, err := drawCapacity(r, t.TempDir(), ""); err == nil || !strings.Contains(err.Error(), "no capacity figures") {
		t.Errorf("drawCapacity of a run that measured nothing: %v", err)
	}
}
