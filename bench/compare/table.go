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

// printTable prints the rows against etcd, then the rows against the bare
// object-store read, each under its own header.
func printTable(w io.Writer, rows []*row) {
	var etcd, reads, objects []*row
	for _, r := range rows {
		switch {
		case r.StreamsPerObject > 0:
			objects = append(objects, r)
		case r.BaseSystem == baseGet:
			reads = append(reads, r)
		default:
			etcd = append(etcd, r)
		}
	}
	if len(etcd) > 0 {
		printSides(w, etcd, "METAD", "ETCD", "M/E")
		fmt.Fprintln(w, "latencies in ms; each figure is the median of the rounds; RATIO = metad / etcd")
		fmt.Fprintln(w, "(throughput: above 1 is metad faster; latency: below 1 is metad faster)")
	}
	if len(reads) > 0 {
		if len(etcd) > 0 {
			fmt.Fprintln(w)
		}
		printSides(w, reads, "READ", "GET", "R/G")
		fmt.Fprintln(w, "READ = resolve + ranged read by identity (a broker's read); GET = the bare ranged read of the")
		fmt.Fprintln(w, "same bytes; latencies in ms, medians of the rounds; RATIO = read / get")
	}
	if len(objects) > 0 {
		if len(etcd)+len(reads) > 0 {
			fmt.Fprintln(w)
		}
		printObjects(w, objects)
	}
}

// entries is the median over samples of each one's entries per second
// (stream appends or puts; an operation of one entry counts one).
func entries(samples []sample) float64 {
	var xs []float64
	for _, s := range samples {
		xs = append(xs, s.Throughput*float64(max(1, s.EntriesPerOp)))
	}
	return median(xs)
}

// printObjects prints the object-txn rows: stream appends per second of
// objects of N streams against puts per second of etcd transactions of N
// puts, and each side's latency per object or transaction.
func printObjects(w io.Writer, rows []*row) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "STREAMS/OBJECT\tC\tAPPENDS/S\tETCD PUTS/S\tRATIO\tOBJECTS/S\tP50\tETCD P50\tP99\tETCD P99\tERRORS M/E\t\n")
	for _, r := range rows {
		m, e := summarize(r.Metad), summarize(r.Base)
		ma, ea := entries(r.Metad), entries(r.Base)
		if len(r.Base) == 0 {
			fmt.Fprintf(tw, "%d\t%d\t%.0f\t-\t-\t%.0f\t%.3f\t-\t%.3f\t-\t%d/-\t\n",
				r.StreamsPerObject, r.Concurrency, ma, m.Throughput, m.P50, m.P99, m.Errors)
			continue
		}
		fmt.Fprintf(tw, "%d\t%d\t%.0f\t%.0f\t%.2f\t%.0f\t%.3f\t%.3f\t%.3f\t%.3f\t%d/%d\t\n",
			r.StreamsPerObject, r.Concurrency, ma, ea, ratio(ma, ea), m.Throughput, m.P50, e.P50, m.P99, e.P99, m.Errors, e.Errors)
	}
	tw.Flush()
	fmt.Fprintln(w, "APPENDS/S = objects/s x streams per object (CommitObject); ETCD PUTS/S = txns/s x puts per txn, one")
	fmt.Fprintf(w, "txn of as many puts (none above %d, etcd's --max-txn-ops); latencies in ms per object or txn, medians of the rounds\n", maxTxnOps)
}

func printSides(w io.Writer, rows []*row, a, b, ab string) {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-28s\tC\t", "PAIR")
	fmt.Fprintf(tw, "%[1]s OPS/S\t%[2]s OPS/S\tRATIO\t%[1]s P50\t%[2]s P50\tRATIO\t%[1]s P99\t%[2]s P99\tRATIO\tERRORS %[3]s\t\n", a, b, ab)
	for _, r := range rows {
		m, e := summarize(r.Metad), summarize(r.Base)
		fmt.Fprintf(tw, "%-28s\t%d\t%.0f\t%.0f\t%.2f\t%.3f\t%.3f\t%.2f\t%.3f\t%.3f\t%.2f\t%d/%d\t\n",
			r.Pair, r.Concurrency, m.Throughput, e.Throughput, ratio(m.Throughput, e.Throughput),
			m.P50, e.P50, ratio(m.P50, e.P50), m.P99, e.P99, ratio(m.P99, e.P99), m.Errors, e.Errors)
	}
	tw.Flush()
}

// target is one of PERFORMANCE.md's goals for pair at concurrency c,
// decided by check.
type target struct {
	pair  string
	c     int
	name  string
	check func(r *row) (bool, string)
}

var targets = []target{
	{"resolve vs linearizable get", 64, "resolve at 64 >= 1.0x etcd linearizable get, p99 <= etcd's", verdict},
	{"commit-append vs put", 64, "commit-append at 64 >= 1.0x etcd put, p99 <= etcd's", verdict},
	{"read vs ranged get", 1, "read at 1: resolve overhead (read p50 - get p50) <= get p50", readVerdict},
	{"read vs ranged get", 16, "read at 16: resolve overhead (read p50 - get p50) <= get p50", readVerdict},
}

// readVerdict: what the resolve adds to a read's p50 is no more than the
// bare read's own p50 (issue 11), with no failed read.
func readVerdict(r *row) (bool, string) {
	rd, g := summarize(r.Metad), summarize(r.Base)
	overhead := rd.P50 - g.P50
	met := overhead <= g.P50 && rd.Errors == 0 && g.Errors == 0
	return met, fmt.Sprintf("overhead %.3f ms vs get p50 %.3f ms (read p50 %.3f, p99 %.3f vs %.3f ms), errors %d/%d",
		overhead, g.P50, rd.P50, rd.P99, g.P99, rd.Errors, g.Errors)
}

// verdict says whether r meets the goal against etcd (at least etcd's
// throughput, no worse p99, no errors), with the figures that decide it.
func verdict(r *row) (bool, string) {
	m, e := summarize(r.Metad), summarize(r.Base)
	met := m.Throughput >= e.Throughput && m.P99 <= e.P99 && m.Errors == 0
	return met, fmt.Sprintf("throughput %.2fx (%.0f vs %.0f/s), p99 %.3f vs %.3f ms, metad errors %d",
		ratio(m.Throughput, e.Throughput), m.Throughput, e.Throughput, m.P99, e.P99, m.Errors)
}

func printTargets(w io.Writer, rows []*row) {
	fmt.Fprintln(w)
	defer printObjectTargets(w, rows)
	for _, t := range targets {
		for _, r := range rows {
			if r.Pair != t.pair || r.Concurrency != t.c {
				continue
			}
			met, why := t.check(r)
			word := "NOT MET"
			if met {
				word = "MET"
			}
			fmt.Fprintf(w, "%-7s %s: %s\n", word, t.name, why)
		}
	}
}

// The stream-set object targets (issue 23), at objectTargetSize streams
// per object.
const (
	objectTargetSize    = 100
	objectTargetAppends = 100_000 // stream-appends/s, at the best concurrency measured
	objectTargetP99     = 2.0     // at most this times commit-append's p99, at the same concurrency
	objectTargetEtcd    = 5.0     // at least this times etcd's puts/s in txns of as many puts
)

// printObjectTargets says which stream-set object targets the object-txn
// rows of objectTargetSize streams meet: throughput at the best
// concurrency; p99 against the commit-append row (of the append-put or
// append-cas pair) and stream-appends/s against etcd at each concurrency.
func printObjectTargets(w io.Writer, rows []*row) {
	var best *row
	for _, r := range rows {
		if r.StreamsPerObject != objectTargetSize {
			continue
		}
		if best == nil || entries(r.Metad) > entries(best.Metad) {
			best = r
		}
	}
	if best == nil {
		return
	}
	say := func(met bool, format string, args ...any) {
		word := "NOT MET"
		if met {
			word = "MET"
		}
		fmt.Fprintf(w, "%-7s %s\n", word, fmt.Sprintf(format, args...))
	}
	m := summarize(best.Metad)
	say(entries(best.Metad) >= objectTargetAppends && m.Errors == 0,
		"commit-object x%d >= %d stream-appends/s: %.0f at concurrency %d (the best measured), errors %d",
		objectTargetSize, objectTargetAppends, entries(best.Metad), best.Concurrency, m.Errors)
	for _, r := range rows {
		if r.StreamsPerObject != objectTargetSize {
			continue
		}
		m := summarize(r.Metad)
		if a := appendRow(rows, r.Concurrency); a != nil {
			p99 := summarize(a.Metad).P99
			say(m.P99 <= objectTargetP99*p99, "commit-object x%d p99 <= %.0fx commit-append p99 at %d: %.3f vs %.3f ms (%.2fx)",
				objectTargetSize, objectTargetP99, r.Concurrency, m.P99, p99, ratio(m.P99, p99))
		}
		if len(r.Base) > 0 {
			ma, ea := entries(r.Metad), entries(r.Base)
			say(ma >= objectTargetEtcd*ea, "commit-object x%d >= %.0fx etcd txn of %d puts at %d: %.0f vs %.0f/s (%.2fx)",
				objectTargetSize, objectTargetEtcd, objectTargetSize, r.Concurrency, ma, ea, ratio(ma, ea))
		}
	}
}

// appendRow is a commit-append row at concurrency c, or nil.
func appendRow(rows []*row, c int) *row {
	for _, r := range rows {
		if r.StreamsPerObject == 0 && r.Concurrency == c && len(r.Metad) > 0 && r.Metad[0].Workload == "commit-append" {
			return r
		}
	}
	return nil
}
