package main

import (
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

const summary = `[
 {"pair": "resolve vs linearizable get", "concurrency": 1,
  "metad": [{"throughput": 2500, "latency": {"p50_ms": 0.35, "p99_ms": 1.1}}, {"throughput": 2600, "latency": {"p50_ms": 0.34, "p99_ms": 1.0}}],
  "etcd":  [{"throughput": 1900, "latency": {"p50_ms": 0.47, "p99_ms": 1.2}}]},
 {"pair": "resolve vs linearizable get", "concurrency": 64,
  "metad": [{"throughput": 12000, "latency": {"p50_ms": 4.1, "p99_ms": 17}}],
  "etcd":  [{"throughput": 8300, "latency": {"p50_ms": 6.5, "p99_ms": 24}}]}
]`

// TestDrawsEveryChartFromASummary: a summary in bench/compare's shape
// gives one decodable PNG per metric.
func TestDrawsEveryChartFromASummary(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "summary.json")
	if err := os.WriteFile(in, []byte(summary), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := read(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := drawAll(rows, dir, "test"); err != nil {
		t.Fatal(err)
	}
	for _, m := range metrics {
		f, err := os.Open(filepath.Join(dir, m.file))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", m.file, err)
		}
		if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
			t.Errorf("%s is %v", m.file, b)
		}
	}
}

// TestMedianOfRounds: each point is the median of its rounds, so one wild
// round does not move a line.
func TestMedianOfRounds(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{10, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
	} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	rows, err := read(writeTemp(t, summary))
	if err != nil {
		t.Fatal(err)
	}
	pts := points(rows, "resolve vs linearizable get", "metad", func(s sample) float64 { return s.Throughput })
	if len(pts) != 2 || pts[0].X != 1 || pts[0].Y != 2550 || pts[1].X != 64 || pts[1].Y != 12000 {
		t.Errorf("points = %v", pts)
	}
}

// TestReadsTodaysSummary: bench/compare's summary.json is an object whose
// rows carry their other side in "base"; rows against the bare
// object-store read are not drawn.
func TestReadsTodaysSummary(t *testing.T) {
	const today = `{"label": "metad abc, TLS=1", "rows": [
 {"pair": "resolve vs linearizable get", "concurrency": 1, "base_system": "etcd",
  "metad": [{"throughput": 2500, "latency": {"p50_ms": 0.35, "p99_ms": 1.1}}],
  "base":  [{"throughput": 1900, "latency": {"p50_ms": 0.47, "p99_ms": 1.2}}]},
 {"pair": "read vs ranged get", "concurrency": 1, "base_system": "get",
  "metad": [{"throughput": 300, "latency": {"p50_ms": 2, "p99_ms": 20}}],
  "base":  [{"throughput": 450, "latency": {"p50_ms": 1, "p99_ms": 27}}]}]}`
	rows, err := read(writeTemp(t, today))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Pair != "resolve vs linearizable get" {
		t.Fatalf("rows = %+v", rows)
	}
	pts := points(rows, "resolve vs linearizable get", "etcd", func(s sample) float64 { return s.Throughput })
	if len(pts) != 1 || pts[0].Y != 1900 {
		t.Errorf("etcd points = %v", pts)
	}
}

// TestRefusesAnEmptySummary: nothing to draw is an error, not a blank chart.
func TestRefusesAnEmptySummary(t *testing.T) {
	if _, err := read(writeTemp(t, "[]")); err == nil {
		t.Error("an empty summary was accepted")
	}
}

func writeTemp(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "summary.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// A summary with object-txn rows also gives the stream-set object charts,
// and its other rows the charts against concurrency.
func TestDrawsTheObjectChartsFromObjectRows(t *testing.T) {
	const objects = `{"label": "x", "rows": [
 {"pair": "commit-append vs put", "concurrency": 64, "base_system": "etcd",
  "metad": [{"throughput": 3000, "latency": {"p50_ms": 18, "p99_ms": 80}}],
  "base":  [{"throughput": 1250, "latency": {"p50_ms": 43, "p99_ms": 140}}]},
 {"pair": "commit-object x100 vs txn", "concurrency": 64, "base_system": "etcd", "streams_per_object": 100,
  "metad": [{"throughput": 269, "entries_per_op": 100, "latency": {"p50_ms": 215, "p99_ms": 527}}],
  "base":  [{"throughput": 115, "entries_per_op": 100, "latency": {"p50_ms": 430, "p99_ms": 772}}]},
 {"pair": "commit-object x1000 vs txn", "concurrency": 64, "base_system": "etcd", "streams_per_object": 1000,
  "metad": [{"throughput": 16, "entries_per_op": 1000, "latency": {"p50_ms": 417, "p99_ms": 2118}}]}
]}`
	dir := t.TempDir()
	in := filepath.Join(dir, "summary.json")
	if err := os.WriteFile(in, []byte(objects), 0o644); err != nil {
		t.Fatal(err)
	}
	rows, err := read(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := drawAll(rows, dir, "test"); err != nil {
		t.Fatal(err)
	}
	for _, m := range append(objectMetrics, metrics...) {
		f, err := os.Open(filepath.Join(dir, m.file))
		if err != nil {
			t.Fatal(err)
		}
		_, err = png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", m.file, err)
		}
	}
	if got := objectMetrics[0].value(rows[1].Metad[0]); got != 26900 {
		t.Errorf("x100: %v stream appends/s, want 26900", got)
	}
}
