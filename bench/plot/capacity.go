package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The capacity charts: each figure bench/capacity measured against the
// state's size, index records on a log scale, one PNG per chart.

// capReport is the part of bench/capacity's JSON the charts read.
type capReport struct {
	Label    string `json:"label"`
	Commit   string `json:"commit"`
	Settings struct {
		Streams     int     `json:"streams"`
		Trim        float64 `json:"trim"`
		Concurrency int     `json:"concurrency"`
	} `json:"settings"`
	Sizes []capSize `json:"sizes"`
}

type capSize struct {
	Records        int64     `json:"records"`
	LiveRecords    int64     `json:"live_records"`
	Memory         []capNode `json:"memory"`
	BytesPerRecord float64   `json:"bytes_per_record"`
	HeapPerRecord  float64   `json:"heap_bytes_per_record"`
	Restored       float64   `json:"restored_bytes_per_record"`
	RestoredHeap   float64   `json:"restored_heap_bytes_per_record"`
	Checkpoint     *struct {
		Bytes   float64 `json:"bytes"`
		Seconds float64 `json:"seconds"`
	} `json:"checkpoint"`
	RaftSnapshot *struct {
		Taken     bool    `json:"taken"`
		Bytes     float64 `json:"bytes"`
		PersistMs float64 `json:"persist_ms"`
	} `json:"raft_snapshot"`
	Restart *capRejoin          `json:"restart"`
	Wiped   *capRejoin          `json:"wiped"`
	Load    map[string]*capLoad `json:"load"`
}

type capNode struct {
	Node      string  `json:"node"`
	Role      string  `json:"role"`
	RSSBytes  float64 `json:"rss_bytes"`
	PeakBytes float64 `json:"peak_bytes"`
}

type capRejoin struct {
	ServingSeconds float64 `json:"serving_s"`
	RestoreMs      float64 `json:"restore_ms"`
	FromSnapshot   bool    `json:"from_snapshot"`
}

type capLoad struct {
	Throughput float64 `json:"throughput"`
	P50Ms      float64 `json:"p50_ms"`
	P99Ms      float64 `json:"p99_ms"`
}

// readCapacity reads bench/capacity's JSON; it needs at least one size,
// and sizes in growing order.
func readCapacity(path string) (*capReport, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r capReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(r.Sizes) == 0 {
		return nil, fmt.Errorf("%s: no sizes (is it bench/capacity's JSON?)", path)
	}
	for i, s := range r.Sizes {
		if s.Records <= 0 || (i > 0 && s.Records <= r.Sizes[i-1].Records) {
			return nil, fmt.Errorf("%s: sizes[%d]: records %d: want positive and growing", path, i, s.Records)
		}
	}
	return &r, nil
}

// capSeries is one line of a chart: a value per size, absent where the
// run did not measure it.
type capSeries struct {
	name  string
	value func(capSize) (float64, bool)
}

type capChart struct {
	file, title, axis string
	series            []capSeries
	// target, if set, is drawn as a dashed line: issue 15's bound.
	target *capTarget
}

type capTarget struct {
	value float64
	name  string
}

const mib = 1 << 20

// peakSeries is drawn dashed: it often lies on the leader's line.
const peakSeries = "peak of any node (VmHWM)"

var capacityCharts = []capChart{
	{"memory.png", "Resident memory per node", "MiB (VmRSS after the fill)", []capSeries{
		{"leader", func(s capSize) (float64, bool) { return role(s, "leader", false) }},
		{"followers (largest)", func(s capSize) (float64, bool) { return role(s, "follower", false) }},
		{peakSeries, func(s capSize) (float64, bool) { return role(s, "", true) }},
	}, nil},
	{"bytes-per-record.png", "Memory per index record", "bytes over the empty cluster's, per live record", []capSeries{
		{"leader RSS after the fill", positive(func(s capSize) float64 { return s.BytesPerRecord })},
		{"leader live heap after the fill", positive(func(s capSize) float64 { return s.HeapPerRecord })},
		{"wiped follower RSS after its restore", positive(func(s capSize) float64 { return s.Restored })},
		{"wiped follower live heap after its restore", positive(func(s capSize) float64 { return s.RestoredHeap })},
	}, &capTarget{150, "target: 150 bytes per record"}},
	{"snapshot-size.png", "Snapshot size", "MB", []capSeries{
		{"checkpoint (Cluster.Snapshot)", func(s capSize) (float64, bool) {
			return pick(s.Checkpoint != nil, func() float64 { return s.Checkpoint.Bytes / 1e6 })
		}},
		{"raft snapshot on disk", func(s capSize) (float64, bool) {
			return pick(s.RaftSnapshot != nil && s.RaftSnapshot.Taken, func() float64 { return s.RaftSnapshot.Bytes / 1e6 })
		}},
	}, nil},
	{"snapshot-time.png", "Snapshot write and restore", "seconds", []capSeries{
		{"checkpoint streamed", func(s capSize) (float64, bool) {
			return pick(s.Checkpoint != nil, func() float64 { return s.Checkpoint.Seconds })
		}},
		{"raft snapshot persist (leader)", func(s capSize) (float64, bool) {
			return pick(s.RaftSnapshot != nil && s.RaftSnapshot.Taken && s.RaftSnapshot.PersistMs > 0,
				func() float64 { return s.RaftSnapshot.PersistMs / 1000 })
		}},
		{"restore on restart", func(s capSize) (float64, bool) { return restoreOf(s.Restart) }},
		{"restore on the wiped follower", func(s capSize) (float64, bool) { return restoreOf(s.Wiped) }},
	}, nil},
	{"rejoin.png", "Back to serving (/readyz 200, leader's commit applied)", "seconds", []capSeries{
		{"follower restarted", func(s capSize) (float64, bool) {
			return pick(s.Restart != nil, func() float64 { return s.Restart.ServingSeconds })
		}},
		{"follower wiped", func(s capSize) (float64, bool) {
			return pick(s.Wiped != nil, func() float64 { return s.Wiped.ServingSeconds })
		}},
	}, nil},
	{"resolve-latency.png", "Resolve latency", "ms", []capSeries{
		{"p50", loadValue("resolve", p50)},
		{"p99", loadValue("resolve", p99)},
		{"p99 while a snapshot is written", loadValue("resolve-during-snapshot", p99)},
	}, nil},
	{"commit-latency.png", "Commit-append latency", "ms", []capSeries{
		{"p50", loadValue("commit-append", p50)},
		{"p99", loadValue("commit-append", p99)},
		{"p99 while a snapshot is written", loadValue("commit-append-during-snapshot", p99)},
	}, nil},
	{"throughput.png", "Throughput", "operations/s", []capSeries{
		{"resolve", loadValue("resolve", rate)},
		{"commit-append", loadValue("commit-append", rate)},
		{"resolve while a snapshot is written", loadValue("resolve-during-snapshot", rate)},
		{"commit-append while a snapshot is written", loadValue("commit-append-during-snapshot", rate)},
	}, nil},
}

// positive is a series measured where its value is above zero.
func positive(v func(capSize) float64) func(capSize) (float64, bool) {
	return func(s capSize) (float64, bool) { return v(s), v(s) > 0 }
}

func pick(ok bool, v func() float64) (float64, bool) {
	if !ok {
		return 0, false
	}
	return v(), true
}

// role is the largest RSS (or peak) among the nodes of a role ("" for
// all), in MiB.
func role(s capSize, r string, peak bool) (float64, bool) {
	best, found := 0.0, false
	for _, n := range s.Memory {
		if r != "" && n.Role != r {
			continue
		}
		v := n.RSSBytes
		if peak {
			v = n.PeakBytes
		}
		best, found = max(best, v/mib), true
	}
	return best, found
}

func restoreOf(r *capRejoin) (float64, bool) {
	if r == nil || !r.FromSnapshot {
		return 0, false
	}
	return r.RestoreMs / 1000, true
}

func p50(l *capLoad) float64  { return l.P50Ms }
func p99(l *capLoad) float64  { return l.P99Ms }
func rate(l *capLoad) float64 { return l.Throughput }

func loadValue(key string, f func(*capLoad) float64) func(capSize) (float64, bool) {
	return func(s capSize) (float64, bool) {
		l := s.Load[key]
		if l == nil {
			return 0, false
		}
		return f(l), true
	}
}

// capPoints is one series' line: (records, value) where measured.
func capPoints(sizes []capSize, v func(capSize) (float64, bool)) plotter.XYs {
	var pts plotter.XYs
	for _, s := range sizes {
		if y, ok := v(s); ok {
			pts = append(pts, plotter.XY{X: float64(s.Records), Y: y})
		}
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].X < pts[j].X })
	return pts
}

// drawCapacity writes every capacity chart into dir; a chart with nothing
// measured is left out, and it is an error only if all are.
func drawCapacity(r *capReport, dir, suffix string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for _, c := range capacityCharts {
		p, ok, err := capacityChart(r, c, suffix)
		if err != nil {
			return written, fmt.Errorf("%s: %w", c.file, err)
		}
		if !ok {
			continue
		}
		if err := p.Save(7*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, c.file)); err != nil {
			return written, err
		}
		written = append(written, c.file)
	}
	if len(written) == 0 {
		return nil, errors.New("no capacity figures to draw")
	}
	return written, nil
}

func capacityChart(r *capReport, c capChart, suffix string) (*plot.Plot, bool, error) {
	p := plot.New()
	p.Title.Text = strings.TrimSpace(c.title + " " + suffix)
	p.X.Label.Text = "index records (log scale)" + trimNote(r)
	p.Y.Label.Text = c.axis
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = recordTicks(r.Sizes)
	p.Y.Tick.Marker = plainTicks{}
	p.Y.Min = 0
	p.Legend.Top, p.Legend.Left = true, true
	drawn, top := 0, 0.0
	for i, s := range c.series {
		pts := capPoints(r.Sizes, s.value)
		if len(pts) == 0 {
			continue
		}
		for _, pt := range pts {
			top = max(top, pt.Y)
		}
		line, dots, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, false, err
		}
		line.Color = palette[i%len(palette)]
		line.Width = vg.Points(1.5)
		dots.Color, dots.Shape = line.Color, draw.CircleGlyph{}
		if s.name == peakSeries {
			line.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
			dots.Shape = draw.BoxGlyph{}
		}
		p.Add(line, dots)
		p.Legend.Add(s.name, line, dots)
		drawn++
	}
	if drawn > 0 && c.target != nil {
		if err := addTarget(p, r.Sizes, *c.target); err != nil {
			return nil, false, err
		}
		top = max(top, c.target.value)
		drawn++
	}
	// Room above the lines for the legend, one line per series.
	p.Y.Max = top * (1.15 + 0.09*float64(drawn))
	return p, drawn > 0, nil
}

// addTarget draws a bound across the measured sizes, dashed and grey.
func addTarget(p *plot.Plot, sizes []capSize, t capTarget) error {
	line, err := plotter.NewLine(plotter.XYs{
		{X: float64(sizes[0].Records), Y: t.value}, {X: float64(sizes[len(sizes)-1].Records), Y: t.value}})
	if err != nil {
		return err
	}
	line.Color = color.Gray{Y: 0x80}
	line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	p.Add(line)
	p.Legend.Add(t.name, line)
	return nil
}

func trimNote(r *capReport) string {
	if r.Settings.Trim > 0 {
		return fmt.Sprintf(", written; %.0f%% of each stream trimmed", r.Settings.Trim*100)
	}
	return ""
}

// recordTicks labels exactly the sizes measured: 10k, 100k, 1M.
func recordTicks(sizes []capSize) plot.Ticker {
	var ticks plot.ConstantTicks
	for _, s := range sizes {
		ticks = append(ticks, plot.Tick{Value: float64(s.Records), Label: shortCount(s.Records)})
	}
	return ticks
}

func shortCount(n int64) string {
	switch {
	case n >= 1_000_000 && n%100_000 == 0:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e6), ".0") + "M"
	case n >= 1000 && n%100 == 0:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(n)/1e3), ".0") + "k"
	}
	return fmt.Sprint(n)
}
