// Command plot draws PERFORMANCE.md's charts from the JSON that
// bench/compare writes (its summary.json, one row per pair and
// concurrency with every round of both systems): throughput and p99
// latency against concurrency, metad next to etcd, one line per pair and
// system, each point the median of its rounds.
//
//	go run . -in /tmp/metad-bench.X/summary.json -out ../../docs/perf
//
// With -capacity it draws bench/capacity's JSON instead: each figure
// (memory per node and per record, snapshot size, snapshot write and
// restore, back-to-serving times, resolve and commit latency,
// throughput) against the number of index records, on a log scale.
//
//	go run . -capacity /tmp/metad-capacity.X/capacity.json -out ../charts/capacity
//
// It reads only the fields it draws, so it needs nothing from the metad
// module, and keeps gonum's plotting libraries out of metad's go.mod.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// sample is one round of one system, as bench/compare records it.
type sample struct {
	Throughput float64 `json:"throughput"`
	// EntriesPerOp: stream appends per object, puts per transaction
	// (the object-txn pair); 0 for one-entry operations.
	EntriesPerOp int `json:"entries_per_op"`
	Latency      struct {
		P50 float64 `json:"p50_ms"`
		P99 float64 `json:"p99_ms"`
	} `json:"latency"`
}

// row is one pair at one concurrency. bench/compare writes
// {"label", "rows"} with each row's other side in "base" and its system in
// "base_system" ("etcd", or "get": the bare object-store read, which these
// charts of metad next to etcd leave out); older summaries are a bare
// array of rows with the other side in "etcd".
type row struct {
	Pair        string   `json:"pair"`
	Concurrency int      `json:"concurrency"`
	Metad       []sample `json:"metad"`
	Etcd        []sample `json:"etcd"`
	Base        []sample `json:"base"`
	BaseSystem  string   `json:"base_system"`
	// StreamsPerObject is the object-txn pair's size; 0 for other pairs.
	StreamsPerObject int `json:"streams_per_object"`
}

// metric is what a chart draws from a sample.
type metric struct {
	file, title, axis string
	value             func(sample) float64
}

var metrics = []metric{
	{"throughput.png", "Throughput", "operations/s (median of rounds)", func(s sample) float64 { return s.Throughput }},
	{"p99.png", "p99 latency", "ms (median of rounds)", func(s sample) float64 { return s.Latency.P99 }},
}

func main() {
	in := flag.String("in", "", "bench/compare's summary.json")
	out := flag.String("out", ".", "directory for the PNG files")
	title := flag.String("title", "", "a suffix for every chart's title, e.g. the commit and mode")
	capacity := flag.String("capacity", "", "bench/capacity's JSON: draw the capacity charts from it instead")
	flag.Parse()
	if *capacity != "" {
		r, err := readCapacity(*capacity)
		var files []string
		if err == nil {
			files, err = drawCapacity(r, *out, *title)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "plot:", err)
			os.Exit(1)
		}
		fmt.Printf("wrote %s in %s\n", strings.Join(files, ", "), *out)
		return
	}
	if *in == "" {
		fmt.Fprintln(os.Stderr, "plot: -in is required: the summary.json of a bench/compare run (WORKDIR/summary.json); or -capacity: bench/capacity's JSON")
		os.Exit(2)
	}
	rows, err := read(*in)
	if err == nil {
		err = drawAll(rows, *out, *title)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "plot:", err)
		os.Exit(1)
	}
}

func read(path string) ([]row, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var all []row
	if trimmed := strings.TrimSpace(string(b)); strings.HasPrefix(trimmed, "{") {
		var s struct {
			Rows []row `json:"rows"`
		}
		err = json.Unmarshal(b, &s)
		all = s.Rows
	} else {
		err = json.Unmarshal(b, &all)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var rows []row
	for _, r := range all {
		if r.BaseSystem != "" && r.BaseSystem != "etcd" {
			continue
		}
		if len(r.Base) > 0 {
			r.Etcd = r.Base
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s: no rows", path)
	}
	return rows, nil
}

// drawAll writes one PNG per metric into dir, against concurrency, and
// the stream-set object charts (objectMetrics) if there are object-txn
// rows.
func drawAll(rows []row, dir, suffix string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var objects, others []row
	for _, r := range rows {
		if r.StreamsPerObject > 0 {
			objects = append(objects, r)
		} else {
			others = append(others, r)
		}
	}
	if len(objects) > 0 {
		if err := drawObjects(objects, dir, suffix); err != nil {
			return err
		}
	}
	if len(others) == 0 && len(objects) > 0 {
		return nil
	}
	rows = others
	for _, m := range metrics {
		p, err := chart(rows, m, suffix)
		if err != nil {
			return fmt.Errorf("%s: %w", m.file, err)
		}
		if err := p.Save(7*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, m.file)); err != nil {
			return err
		}
	}
	return nil
}

// chart draws m against concurrency: a colour per pair, solid for metad,
// dashed for etcd.
func chart(rows []row, m metric, suffix string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = strings.TrimSpace(m.title + " " + suffix)
	p.X.Label.Text = "concurrency (log scale)"
	p.Y.Label.Text = m.axis
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = concurrencyTicks(rows)
	p.Y.Tick.Marker = plainTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	drawn := 0
	for i, pair := range pairs(rows) {
		for _, system := range []string{"metad", "etcd"} {
			pts := points(rows, pair, system, m.value)
			if len(pts) == 0 {
				continue
			}
			line, dots, err := plotter.NewLinePoints(pts)
			if err != nil {
				return nil, err
			}
			line.Color = palette[i%len(palette)]
			dots.Color = line.Color
			dots.Shape = draw.CircleGlyph{}
			line.Width = vg.Points(1.5)
			if system == "etcd" {
				line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
				dots.Shape = draw.BoxGlyph{}
			}
			p.Add(line, dots)
			p.Legend.Add(system+": "+pair, line, dots)
			drawn++
		}
	}
	if drawn == 0 {
		return nil, errors.New("no samples to draw")
	}
	return p, nil
}

var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff},
	color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff},
	color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
}

// pairs lists the pairs in the order they first appear.
func pairs(rows []row) []string {
	var out []string
	for _, r := range rows {
		if !slices.Contains(out, r.Pair) {
			out = append(out, r.Pair)
		}
	}
	return out
}

// points is one line: for each concurrency of pair, the median of
// system's rounds.
func points(rows []row, pair, system string, value func(sample) float64) plotter.XYs {
	var pts plotter.XYs
	for _, r := range rows {
		if r.Pair != pair {
			continue
		}
		samples := r.Metad
		if system == "etcd" {
			samples = r.Etcd
		}
		if len(samples) == 0 {
			continue
		}
		vals := make([]float64, len(samples))
		for i, s := range samples {
			vals[i] = value(s)
		}
		pts = append(pts, plotter.XY{X: float64(r.Concurrency), Y: median(vals)})
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].X < pts[j].X })
	return pts
}

// median of vals (the mean of the middle two for an even count).
func median(vals []float64) float64 {
	s := slices.Clone(vals)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// concurrencyTicks labels exactly the concurrencies measured.
func concurrencyTicks(rows []row) plot.Ticker {
	return measuredTicks(rows, func(r row) int { return r.Concurrency })
}

// measuredTicks labels exactly the values of one column of rows.
func measuredTicks(rows []row, value func(row) int) plot.Ticker {
	var ticks plot.ConstantTicks
	seen := map[int]bool{}
	for _, r := range rows {
		if v := value(r); !seen[v] {
			seen[v] = true
			ticks = append(ticks, plot.Tick{Value: float64(v), Label: fmt.Sprint(v)})
		}
	}
	sort.Slice(ticks, func(i, j int) bool { return ticks[i].Value < ticks[j].Value })
	return ticks
}

// plainTicks are gonum's default ticks labelled without trailing zeros.
type plainTicks struct{}

func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', -1, 64)
		}
	}
	return ticks
}
