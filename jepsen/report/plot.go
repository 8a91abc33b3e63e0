package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/metad/metad/jepsen/history"
)

// Plot draws, as SVG, every operation's latency (log scale) against time
// and the throughput of successful operations per second, with each fault
// window shaded and labelled.
func Plot(h history.History) string {
	const (
		w, left, right = 1100.0, 60.0, 20.0
		latTop, latH   = 30.0, 320.0
		thrTop, thrH   = 400.0, 150.0
		height         = 600.0
	)
	if len(h.Ops) == 0 {
		return `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="40"><text x="10" y="25">no operations</text></svg>`
	}
	t0, t1 := h.Ops[0].Call, h.Ops[0].Return
	for _, op := range h.Ops {
		t0, t1 = min(t0, op.Call), max(t1, op.Return)
	}
	span := float64(max(t1-t0, 1))
	x := func(t int64) float64 { return left + (w-left-right)*float64(t-t0)/span }
	const lo, hi = -1.0, 4.0 // log10 of milliseconds: 0.1ms .. 10s
	y := func(ms float64) float64 {
		l := math.Log10(max(ms, 0.1))
		return latTop + latH - latH*(min(l, hi)-lo)/(hi-lo)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", w, height)
	b.WriteString(`<rect width="100%" height="100%" fill="white"/>` + "\n")
	for _, f := range h.Faults {
		end := f.End
		if end == 0 {
			end = t1
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="#f7c6c6" opacity="0.5"/>`+"\n",
			x(f.Start), latTop, max(x(end)-x(f.Start), 1), thrTop+thrH-latTop)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" fill="#a33">%s:%s</text>`+"\n", x(f.Start)+2, latTop-4, f.Kind, f.Shape)
	}
	axes(&b, left, w-right, latTop, latH, thrTop, thrH, span, y)
	colors := map[history.Status]string{history.OK: "#2b6cb0", history.Rejected: "#888", history.Fail: "#dd8a00", history.Info: "#d00"}
	for _, op := range h.Ops {
		if op.Kind == history.KindWatch {
			continue // a session lasts as long as the watcher chose: not a latency
		}
		ms := float64(op.Return-op.Call) / 1e6
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="1.4" fill="%s" opacity="0.6"/>`+"\n", x(op.Call), y(ms), colors[op.Status])
	}
	throughput(&b, h, t0, span, x, thrTop, thrH)
	legend := []string{"ok", "rejected", "fail (definite)", "info (indeterminate)"}
	for i, s := range []history.Status{history.OK, history.Rejected, history.Fail, history.Info} {
		fmt.Fprintf(&b, `<circle cx="%.0f" cy="%.0f" r="4" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`+"\n",
			left+10+float64(i)*150, height-12, colors[s], left+18+float64(i)*150, height-8, legend[i])
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func axes(b *strings.Builder, x0, x1, latTop, latH, thrTop, thrH, span float64, y func(float64) float64) {
	fmt.Fprintf(b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#333"/>`+"\n", x0, latTop, x1-x0, latH)
	fmt.Fprintf(b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#333"/>`+"\n", x0, thrTop, x1-x0, thrH)
	for _, ms := range []float64{0.1, 1, 10, 100, 1000, 10000} {
		fmt.Fprintf(b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.0f" y="%.1f" text-anchor="end">%gms</text>`+"\n",
			x0, x1, y(ms), y(ms), x0-4, y(ms)+4, ms)
	}
	secs := span / 1e9
	step := math.Max(1, math.Round(secs/10))
	for s := 0.0; s <= secs; s += step {
		px := x0 + (x1-x0)*s/secs
		fmt.Fprintf(b, `<text x="%.1f" y="%.0f" text-anchor="middle">%.0fs</text>`+"\n", px, thrTop+thrH+14, s)
	}
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f">latency per operation (by call time)</text>`+"\n", x0+4, latTop+14)
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f">successful operations per second</text>`+"\n", x0+4, thrTop+14)
}

func throughput(b *strings.Builder, h history.History, t0 int64, span float64, x func(int64) float64, top, height float64) {
	n := int(span/1e9) + 1
	buckets := make([]int, n)
	for _, op := range h.Ops {
		if op.Status == history.OK {
			if i := int((op.Return - t0) / 1e9); i >= 0 && i < n {
				buckets[i]++
			}
		}
	}
	peak := 1
	for _, c := range buckets {
		peak = max(peak, c)
	}
	var pts []string
	for i, c := range buckets {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(t0+int64(i)*1e9+5e8), top+height-height*float64(c)/float64(peak)))
	}
	fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="#2b6cb0" stroke-width="1.5"/>`+"\n", strings.Join(pts, " "))
	fmt.Fprintf(b, `<text x="%.0f" y="%.0f" text-anchor="end">%d/s</text>`+"\n", x(t0)-4, top+8, peak)
}
