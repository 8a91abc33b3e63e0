package main

import (
	"errors"
	"fmt"
	"math"
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

// The stream-set object charts draw bench/compare's object-txn rows
// against streams per object: a colour per concurrency, solid for metad
// (CommitObject of N streams), dashed for etcd (a transaction of N puts,
// drawn up to 128, etcd's --max-txn-ops).
var objectMetrics = []metric{
	{"stream-appends.png", "Stream-set objects: entries/s", "stream appends/s, puts/s",
		func(s sample) float64 { return s.Throughput * float64(max(1, s.EntriesPerOp)) }},
	{"object-p99.png", "Stream-set objects: p99 latency", "ms per object or txn",
		func(s sample) float64 { return s.Latency.P99 }},
}

func drawObjects(rows []row, dir, suffix string) error {
	for _, m := range objectMetrics {
		p, err := objectChart(rows, m, suffix)
		if err != nil {
			return fmt.Errorf("%s: %w", m.file, err)
		}
		if err := p.Save(7*vg.Inch, 4.5*vg.Inch, filepath.Join(dir, m.file)); err != nil {
			return err
		}
	}
	return nil
}

func objectChart(rows []row, m metric, suffix string) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = strings.TrimSpace(m.title + " " + suffix)
	p.X.Label.Text = "streams per object, puts per txn (log scale)"
	p.Y.Label.Text = m.axis
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = sizeTicks(rows)
	p.Y.Tick.Marker = logTicks{}
	p.Legend.Top, p.Legend.Left = false, false
	var concurrencies []int
	for _, r := range rows {
		if !slices.Contains(concurrencies, r.Concurrency) {
			concurrencies = append(concurrencies, r.Concurrency)
		}
	}
	slices.Sort(concurrencies)
	drawn := 0
	for i, c := range concurrencies {
		for _, system := range []string{"metad", "etcd"} {
			pts := sizePoints(rows, c, system, m.value)
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
			name := fmt.Sprintf("metad CommitObject, c=%d", c)
			if system == "etcd" {
				line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
				dots.Shape = draw.BoxGlyph{}
				name = fmt.Sprintf("etcd txn of N puts, c=%d", c)
			}
			p.Add(line, dots)
			p.Legend.Add(name, line, dots)
			drawn++
		}
	}
	if drawn == 0 {
		return nil, errors.New("no samples to draw")
	}
	return p, nil
}

// sizePoints is one line: for each size measured at concurrency c, the
// median of system's rounds (none where the value is not positive, which
// a log scale cannot draw).
func sizePoints(rows []row, c int, system string, value func(sample) float64) plotter.XYs {
	var pts plotter.XYs
	for _, r := range rows {
		samples := r.Metad
		if system == "etcd" {
			samples = r.Etcd
		}
		if r.Concurrency != c || len(samples) == 0 {
			continue
		}
		vals := make([]float64, len(samples))
		for i, s := range samples {
			vals[i] = value(s)
		}
		if y := median(vals); y > 0 {
			pts = append(pts, plotter.XY{X: float64(r.StreamsPerObject), Y: y})
		}
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].X < pts[j].X })
	return pts
}

// sizeTicks labels exactly the sizes measured.
func sizeTicks(rows []row) plot.Ticker {
	return measuredTicks(rows, func(r row) int { return r.StreamsPerObject })
}

// logTicks label 1, 2 and 5 of every decade a log axis spans (gonum's
// LogTicks label only powers of ten, none on a span narrower than one).
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v >= lo && v <= hi {
				ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', -1, 64)})
			}
		}
	}
	return ticks
}
