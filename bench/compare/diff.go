package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
)

// diff sets two runs' summary.json side by side: run A (the baseline:
// plain, or the older commit) and run B (with TLS, or the newer commit).
// For each pair at each concurrency in both it prints B/A for metad and
// for the pair's other side (etcd, or the bare read): the share of its
// throughput each system keeps, and how much its latencies grow. The last
// column says whether the change cost metad no more, as a ratio, than it
// cost the other side (issue 10's TLS target): metad's throughput B/A at
// least the other's.
func diff(w io.Writer, pathA, pathB string) error {
	a, err := readSummary(pathA)
	if err != nil {
		return err
	}
	b, err := readSummary(pathB)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "A: %s (%s)\nB: %s (%s)\n\n", a.Label, pathA, b.Label, pathB)
	printDiff(w, a.Rows, b.Rows)
	return nil
}

func readSummary(path string) (summary, error) {
	var s summary
	raw, err := os.ReadFile(path)
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return s, fmt.Errorf("%s: not a compare summary.json: %w", path, err)
	}
	return s, nil
}

func printDiff(w io.Writer, a, b []*row) {
	type key struct {
		pair string
		c    int
	}
	before := map[key]*row{}
	for _, r := range a {
		before[key{r.Pair, r.Concurrency}] = r
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-28s\tC\tOTHER\tMETAD OPS/S A\tB\tB/A\tOTHER OPS/S A\tB\tB/A\tP50 B/A M\tO\tP99 B/A M\tO\tMETAD COST <= OTHER'S\t\n", "PAIR")
	for _, rb := range b {
		ra, ok := before[key{rb.Pair, rb.Concurrency}]
		if !ok {
			continue
		}
		ma, mb := summarize(ra.Metad), summarize(rb.Metad)
		oa, ob := summarize(ra.Base), summarize(rb.Base)
		kept, otherKept := ratio(mb.Throughput, ma.Throughput), ratio(ob.Throughput, oa.Throughput)
		verdict := "yes"
		if kept < otherKept {
			verdict = "no"
		}
		fmt.Fprintf(tw, "%-28s\t%d\t%s\t%.0f\t%.0f\t%.2f\t%.0f\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t\n",
			rb.Pair, rb.Concurrency, rb.BaseSystem, ma.Throughput, mb.Throughput, kept, oa.Throughput, ob.Throughput, otherKept,
			ratio(mb.P50, ma.P50), ratio(ob.P50, oa.P50), ratio(mb.P99, ma.P99), ratio(ob.P99, oa.P99), verdict)
	}
	tw.Flush()
	fmt.Fprintln(w, "B/A = run B's median over run A's; OTHER = the pair's other side (etcd, or the bare get);")
	fmt.Fprintln(w, "throughput B/A is the share each system keeps; METAD COST <= OTHER'S: metad keeps at least as much")
}
