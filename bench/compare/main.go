// Command compare runs metad's operations and their nearest etcd
// equivalents side by side against two running clusters and prints each
// pair's ratios. bench/compare.sh starts the clusters and calls it; see
// PERFORMANCE.md for what it measured.
//
// The pairs:
//
//	commit-append vs put  one append (evidence + index record, CAS on the
//	                      expected start) vs a put of the same number of
//	                      bytes as the append request
//	commit-append vs cas  the same append vs etcd's own compare-and-put
//	                      transaction on a worker-owned key
//	resolve vs get        one resolve (linearizable read, pin through
//	                      Raft, linearizable recheck) vs a linearizable get
//	                      of a value as large as the resolve response
//
// Interleaving: at each concurrency, every round runs every pair once, the
// two sides back to back, metad first in even rounds and etcd first in odd
// ones, so slow drifts of a shared, noisy machine fall on both sides. A
// pair's figure is the median over rounds of each side's figure; a ratio
// is metad's median over etcd's. Both sides are measured by the same
// runner (bench/load): throughput counts successful calls only, and
// errors are reported next to it.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/metad/metad/bench/load"
)

// options are the command's flags.
type options struct {
	metad, etcdload      string
	metadAddrs, etcdEnds string
	duration, warmup     time.Duration
	rounds               int
	concurrency          []int
	pairs                []string
	out                  string
	metadArgs            []string
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(2)
	}
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string) (options, error) {
	var o options
	var conc, pairs string
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.StringVar(&o.metad, "metad", "metad", "the metad binary")
	fs.StringVar(&o.etcdload, "etcdload", "etcdload", "the etcdload binary")
	fs.StringVar(&o.metadAddrs, "metad-addrs", "127.0.0.1:7420", "metad gRPC addresses, comma-separated")
	fs.StringVar(&o.etcdEnds, "etcd-endpoints", "127.0.0.1:2379", "etcd client endpoints, comma-separated")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured time of each run")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "warm-up of each run")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds at each concurrency")
	fs.StringVar(&conc, "concurrency", "1,16,64", "concurrency levels, comma-separated")
	fs.StringVar(&pairs, "pairs", "append-put,append-cas,resolve-get", "pairs to run, comma-separated")
	var metadArgs string
	fs.StringVar(&metadArgs, "metad-args", "", "extra arguments for every metad bench run, space-separated (e.g. --spread)")
	fs.StringVar(&o.out, "out", "", "directory for every run's JSON and summary.json (default: none kept)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.metadArgs = strings.Fields(metadArgs)
	var errs []error
	for _, s := range strings.Split(conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > load.MaxConcurrency {
			errs = append(errs, fmt.Errorf("--concurrency %q: want integers 1..%d", s, load.MaxConcurrency))
		}
		o.concurrency = append(o.concurrency, n)
	}
	for _, p := range strings.Split(pairs, ",") {
		if _, ok := pairByName[p]; !ok {
			errs = append(errs, fmt.Errorf("--pairs: unknown pair %q", p))
		}
		o.pairs = append(o.pairs, p)
	}
	if o.rounds < 1 {
		errs = append(errs, fmt.Errorf("--rounds %d: want at least 1", o.rounds))
	}
	if err := (load.Config{Duration: o.duration, Warmup: o.warmup}).Validate(); err != nil {
		errs = append(errs, err)
	}
	return o, errors.Join(errs...)
}

// pair is a metad workload and its etcd counterpart.
type pair struct {
	name          string // as printed
	metadWorkload string
	etcdWorkload  string
}

var pairByName = map[string]pair{
	"append-put":  {"commit-append vs put", "commit-append", "put"},
	"append-cas":  {"commit-append vs cas txn", "commit-append", "cas"},
	"resolve-get": {"resolve vs linearizable get", "resolve", "get"},
}

// sample is one run's result as either side prints it with -o json.
type sample struct {
	System       string `json:"system"`
	Workload     string `json:"workload"`
	MessageBytes int    `json:"message_bytes"`
	load.Result
}

// row is one pair at one concurrency: every round of both sides.
type row struct {
	Pair        string   `json:"pair"`
	Concurrency int      `json:"concurrency"`
	Metad       []sample `json:"metad"`
	Etcd        []sample `json:"etcd"`
}

func run(ctx context.Context, o options) error {
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
	}
	var rows []*row
	for _, c := range o.concurrency {
		byPair := map[string]*row{}
		for _, p := range o.pairs {
			byPair[p] = &row{Pair: pairByName[p].name, Concurrency: c}
			rows = append(rows, byPair[p])
		}
		for round := range o.rounds {
			for _, p := range o.pairs {
				if err := o.runPair(ctx, pairByName[p], byPair[p], round); err != nil {
					return err
				}
			}
		}
	}
	printTable(os.Stdout, rows)
	printTargets(os.Stdout, rows)
	if o.out == "" {
		return nil
	}
	b, err := json.MarshalIndent(rows, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(o.out, "summary.json"), b, 0o644)
}

// runPair runs both sides of p once, in the round's order. The etcd
// values are as large as metad's messages, which the first metad run
// measures (round 0 always starts with metad).
func (o options) runPair(ctx context.Context, p pair, r *row, round int) error {
	metadFirst := round%2 == 0
	for i := range 2 {
		var s sample
		var err error
		if (i == 0) == metadFirst {
			s, err = o.runMetad(ctx, p, r.Concurrency, round)
			r.Metad = append(r.Metad, s)
		} else {
			s, err = o.runEtcd(ctx, p, r.Concurrency, round, r.Metad[0].MessageBytes)
			r.Etcd = append(r.Etcd, s)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "  %-6s %-14s c=%-3d round %d: %8.0f/s  p50 %7.3f ms  p99 %7.3f ms  errors %d\n",
			s.System, s.Workload, r.Concurrency, round, s.Throughput, s.Latency.P50, s.Latency.P99, errorCount(s))
	}
	return nil
}

func (o options) runMetad(ctx context.Context, p pair, c, round int) (sample, error) {
	args := []string{"bench", "--addr", o.metadAddrs, "--workload", p.metadWorkload, "-c", strconv.Itoa(c),
		"--duration", o.duration.String(), "--warmup", o.warmup.String(), "-o", "json"}
	args = append(args, o.metadArgs...)
	return o.runJSON(ctx, o.metad, args, fmt.Sprintf("metad-%s-c%d-r%d.json", p.metadWorkload, c, round))
}

func (o options) runEtcd(ctx context.Context, p pair, c, round, valueSize int) (sample, error) {
	args := []string{"--endpoints", o.etcdEnds, "--workload", p.etcdWorkload, "--concurrency", strconv.Itoa(c),
		"--duration", o.duration.String(), "--warmup", o.warmup.String(), "--value-size", strconv.Itoa(valueSize),
		"--keys", "3200", "-o", "json"}
	return o.runJSON(ctx, o.etcdload, args, fmt.Sprintf("etcd-%s-c%d-r%d.json", p.etcdWorkload, c, round))
}

// runJSON runs bin with args (progress on our stderr) and decodes its JSON.
func (o options) runJSON(ctx context.Context, bin string, args []string, name string) (sample, error) {
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return sample{}, fmt.Errorf("%s %s: %w", bin, strings.Join(args, " "), err)
	}
	var s sample
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil {
		return sample{}, fmt.Errorf("%s: output is not a report: %w", bin, err)
	}
	if o.out != "" {
		if err := os.WriteFile(filepath.Join(o.out, name), stdout.Bytes(), 0o644); err != nil {
			return sample{}, err
		}
	}
	return s, nil
}

func errorCount(s sample) int64 {
	var n int64
	for _, c := range s.Errors {
		n += c
	}
	return n
}
