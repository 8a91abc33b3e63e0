package main

import (
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
)

// side is one system's figures for a row: medians over rounds.
type side struct {
	Throughput, P50, P99 float64
	Errors               int64
}

// summarize takes the median of each figure over samples (the lower
// middle one for an even count, so a figure is always one that was
// measured) and sums the errors.
func summarize(samples []sample) side {
	var tput, p50, p99 []float64
	var s side
	for _, x := range samples {
		tput = append(tput, x.Throughput)
		p50 = append(p50, x.Latency.P50)
		p99 = append(p99, x.Latency.P99)
		s.Errors += errorCount(x)
	}
	s.Throughput, s.P50, s.P99 = median(tput), median(p50), median(p99)
	return s
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	xs = slices.Clone(xs)
	slices.Sort(xs)
	return xs[(len(xs)-1)/2]
}

// ratio is a/b, or 0 when b is 0 (nothing to compare with).
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func printTable(w io.Writer, rows []*row) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-28s\tC\t", "PAIR")
	fmt.Fprintln(tw, "METAD OPS/S\tETCD OPS/S\tRATIO\tMETAD P50\tETCD P50\tRATIO\tMETAD P99\tETCD P99\tRATIO\tERRORS M/E\t")
	for _, r := range rows {
		m, e := summarize(r.Metad), summarize(r.Etcd)
		fmt.Fprintf(tw, "%-28s\t%d\t%.0f\t%.0f\t%.2f\t%.3f\t%.3f\t%.2f\t%.3f\t%.3f\t%.2f\t%d/%d\t\n",
			r.Pair, r.Concurrency, m.Throughput, e.Throughput, ratio(m.Throughput, e.Throughput),
			m.P50, e.P50, ratio(m.P50, e.P50), m.P99, e.P99, ratio(m.P99, e.P99), m.Errors, e.Errors)
	}
	tw.Flush()
	fmt.Fprintln(w, "latencies in ms; each figure is the median of the rounds; RATIO = metad / etcd")
	fmt.Fprintln(w, "(throughput: above 1 is metad faster; latency: below 1 is metad faster)")
}

// target is one of PERFORMANCE.md's goals: at concurrency 64, metad's
// throughput at least etcd's and its p99 no worse.
type target struct {
	pair string
	name string
}

var targets = []target{
	{"resolve vs linearizable get", "resolve at 64 >= 1.0x etcd linearizable get, p99 <= etcd's"},
	{"commit-append vs put", "commit-append at 64 >= 1.0x etcd put, p99 <= etcd's"},
}

// verdict says whether r meets the goal, with the figures that decide it.
func verdict(r *row) (bool, string) {
	m, e := summarize(r.Metad), summarize(r.Etcd)
	met := m.Throughput >= e.Throughput && m.P99 <= e.P99 && m.Errors == 0
	return met, fmt.Sprintf("throughput %.2fx (%.0f vs %.0f/s), p99 %.3f vs %.3f ms, metad errors %d",
		ratio(m.Throughput, e.Throughput), m.Throughput, e.Throughput, m.P99, e.P99, m.Errors)
}

func printTargets(w io.Writer, rows []*row) {
	fmt.Fprintln(w)
	for _, t := range targets {
		for _, r := range rows {
			if r.Pair != t.pair || r.Concurrency != 64 {
				continue
			}
			met, why := verdict(r)
			word := "NOT MET"
			if met {
				word = "MET"
			}
			fmt.Fprintf(w, "%-7s %s: %s\n", word, t.name, why)
		}
	}
}
