package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/cmd/internal/cliflags"
)

// progress draws a one-line progress bar for long byte-moving work
// (snapshot save, restore, inspect) on a terminal, redrawn at most every
// redrawEvery:
//
//	restore  [===========>             ]  46%   12.3 MiB / 26.8 MiB   41.2 MiB/s
//
// With an unknown total (a snapshot streaming in) it shows bytes and rate.
// It draws nothing when its writer is not a terminal, so scripts and logs
// stay clean.
type progress struct {
	w       io.Writer
	label   string
	total   int64 // <= 0: unknown
	enabled bool
	start   time.Time

	mu       sync.Mutex // guards the fields below
	done     int64
	lastDraw time.Time
}

const redrawEvery = 100 * time.Millisecond

// newProgress returns a bar on w (drawn only if w is a terminal).
func newProgress(w io.Writer, label string, total int64) *progress {
	return &progress{w: w, label: label, total: total, enabled: cliflags.IsTerminal(w), start: clock.Real.Now()}
}

// Reader counts what is read through r.
func (p *progress) Reader(r io.Reader) io.Reader { return &progressReader{r: r, p: p} }

// Writer counts what is written through w.
func (p *progress) Writer(w io.Writer) io.Writer { return &progressWriter{w: w, p: p} }

func (p *progress) add(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += int64(n)
	if now := clock.Real.Now(); p.enabled && now.Sub(p.lastDraw) >= redrawEvery {
		p.lastDraw = now
		p.draw(now)
	}
}

// Finish draws the final state and ends the line.
func (p *progress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.enabled {
		return
	}
	p.draw(clock.Real.Now())
	fmt.Fprintln(p.w)
}

func (p *progress) draw(now time.Time) {
	fmt.Fprint(p.w, "\r"+p.line(now.Sub(p.start))+"\x1b[K")
}

// line renders the bar after elapsed.
func (p *progress) line(elapsed time.Duration) string {
	rate := ""
	if s := elapsed.Seconds(); s > 0 {
		rate = humanBytes(int64(float64(p.done)/s)) + "/s"
	}
	if p.total <= 0 {
		return fmt.Sprintf("%-8s %12s   %s", p.label, humanBytes(p.done), rate)
	}
	const width = 26
	frac := min(float64(p.done)/float64(p.total), 1)
	filled := int(frac * width)
	bar := strings.Repeat("=", filled)
	if filled < width {
		bar += ">" + strings.Repeat(" ", width-filled-1)
	}
	return fmt.Sprintf("%-8s [%s] %3.0f%%  %s / %s   %s", p.label, bar, frac*100,
		humanBytes(p.done), humanBytes(p.total), rate)
}

// humanBytes prints n in B, KiB, MiB or GiB.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, suffix := float64(n)/unit, "KiB"
	for _, s := range []string{"MiB", "GiB", "TiB"} {
		if f < unit {
			break
		}
		f, suffix = f/unit, s
	}
	return fmt.Sprintf("%.1f %s", f, suffix)
}

type progressReader struct {
	r io.Reader
	p *progress
}

func (r *progressReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	r.p.add(n)
	return n, err
}

type progressWriter struct {
	w io.Writer
	p *progress
}

func (w *progressWriter) Write(b []byte) (int, error) {
	n, err := w.w.Write(b)
	w.p.add(n)
	return n, err
}
