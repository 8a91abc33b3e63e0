// Command compare runs metad's operations next to a baseline — their
// nearest etcd equivalents, or the bare object-store read — against
// running clusters and prints each pair's ratios. bench/compare.sh starts
// the clusters and calls it; see PERFORMANCE.md for what it measured.
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
//	commit-object vs txn  one stream-set object of N streams (CommitObject:
//	                      an append to each of N worker-owned streams, all
//	                      or none, in one command) vs one etcd transaction
//	                      of N puts of new keys, each as large as metad's
//	                      request per append; a row per N of
//	                      --streams-per-object, compared in entries/s
//	                      (stream appends, puts). N above 128, etcd's
//	                      default --max-txn-ops, has no etcd side
//	read vs ranged get    a broker's read (resolve, then a ranged read of
//	                      the target by its identity: on S3 a GET by
//	                      VersionId with If-Match) vs the bare ranged read
//	                      of the same bytes (metad-bench --workload get);
//	                      needs the servers' object store (--store-args)
//
// Every run's JSON and summary.json (all rows, with --label) go to --out;
// `compare --diff BASE.json NEW.json` sets two summaries side by side — a
// TLS run against a plain one, or one commit against another — and prints
// what the change cost each system, as ratios.
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
	metadBench, etcdload string
	metadAddrs, etcdEnds string
	duration, warmup     time.Duration
	rounds               int
	concurrency          []int
	pairs                []string
	out                  string
	label                string
	metadArgs            []string
	etcdArgs             []string
	storeArgs            []string
	streamsPerObject     []int
}

func main() {
	if len(os.Args) == 4 && os.Args[1] == "--diff" {
		if err := diff(os.Stdout, os.Args[2], os.Args[3]); err != nil {
			fmt.Fprintln(os.Stderr, "compare:", err)
			os.Exit(1)
		}
		return
	}
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
	fs.StringVar(&o.metadBench, "metad-bench", "metad-bench", "the metad-bench binary")
	fs.StringVar(&o.etcdload, "etcdload", "etcdload", "the etcdload binary")
	fs.StringVar(&o.metadAddrs, "metad-addrs", "127.0.0.1:7420", "metad gRPC addresses, comma-separated")
	fs.StringVar(&o.etcdEnds, "etcd-endpoints", "127.0.0.1:2379", "etcd client endpoints, comma-separated")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured time of each run")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "warm-up of each run")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds at each concurrency")
	fs.StringVar(&conc, "concurrency", "1,16,64", "concurrency levels, comma-separated")
	fs.StringVar(&pairs, "pairs", "append-put,append-cas,resolve-get", "pairs to run, comma-separated (also object-txn, read-get)")
	var perObject string
	fs.StringVar(&perObject, "streams-per-object", "1,10,100,1000", "streams per object of the object-txn pair, comma-separated: a row each")
	var metadArgs, etcdArgs, storeArgs string
	fs.StringVar(&metadArgs, "metad-args", "", "extra arguments for every metad-bench run, space-separated (e.g. --spread, or the TLS flags)")
	fs.StringVar(&etcdArgs, "etcd-args", "", "extra arguments for every etcdload run, space-separated (e.g. --cacert ca.pem --cert c.pem --key k.pem)")
	fs.StringVar(&storeArgs, "store-args", "", "the servers' object store for the read pair, as metad-bench flags (e.g. --object-store s3://b/p --s3-endpoint URL --s3-path-style)")
	fs.StringVar(&o.out, "out", "", "directory for every run's JSON and summary.json (default: none kept)")
	fs.StringVar(&o.label, "label", "", "what this run is (settings, commit), kept in summary.json")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.metadArgs, o.etcdArgs, o.storeArgs = strings.Fields(metadArgs), strings.Fields(etcdArgs), strings.Fields(storeArgs)
	var errs []error
	for _, s := range strings.Split(conc, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 || n > load.MaxConcurrency {
			errs = append(errs, fmt.Errorf("--concurrency %q: want integers 1..%d", s, load.MaxConcurrency))
		}
		o.concurrency = append(o.concurrency, n)
	}
	for _, p := range strings.Split(pairs, ",") {
		if pr, ok := pairByName[p]; !ok {
			errs = append(errs, fmt.Errorf("--pairs: unknown pair %q", p))
		} else if pr.base == baseGet && len(o.storeArgs) == 0 {
			errs = append(errs, fmt.Errorf("--pairs %s: needs --store-args (the servers' object store)", p))
		}
		o.pairs = append(o.pairs, p)
	}
	for _, s := range strings.Split(perObject, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			errs = append(errs, fmt.Errorf("--streams-per-object %q: want positive integers", s))
		}
		o.streamsPerObject = append(o.streamsPerObject, n)
	}
	if o.rounds < 1 {
		errs = append(errs, fmt.Errorf("--rounds %d: want at least 1", o.rounds))
	}
	if err := (load.Config{Duration: o.duration, Warmup: o.warmup}).Validate(); err != nil {
		errs = append(errs, err)
	}
	return o, errors.Join(errs...)
}

// pair is a metad workload and its baseline: an etcd workload (etcdload)
// or metad-bench's bare object-store read.
type pair struct {
	name          string // as printed
	metadWorkload string
	base          string // baseEtcd or baseGet
	baseWorkload  string
}

// The baselines a pair can have.
const (
	baseEtcd = "etcd"
	baseGet  = "get" // metad-bench --workload get: the bare ranged read
)

var pairByName = map[string]pair{
	"append-put":  {"commit-append vs put", "commit-append", baseEtcd, "put"},
	"append-cas":  {"commit-append vs cas txn", "commit-append", baseEtcd, "cas"},
	"resolve-get": {"resolve vs linearizable get", "resolve", baseEtcd, "get"},
	"read-get":    {"read vs ranged get", "read", baseGet, "get"},
	"object-txn":  {"commit-object vs txn", "commit-object", baseEtcd, "txn"},
}

// maxTxnOps is etcd's default --max-txn-ops: the largest transaction the
// object-txn pair's etcd side can commit.
const maxTxnOps = 128

// objectName is the printed pair of the object-txn row of n streams.
func objectName(n int) string { return fmt.Sprintf("commit-object x%d vs txn", n) }

// readArgs shape the read pair's load on both sides: 16 streams of 20
// appends of 64 KiB objects (320 objects, 20 MiB per run), each read
// 4 KiB, as a broker's fetch of a few records from a segment.
var readArgs = []string{"--streams", "16", "--appends", "20", "--payload", "65536", "--read-size", "4096"}

// sample is one run's result as either side prints it with -o json.
type sample struct {
	System       string `json:"system"`
	Workload     string `json:"workload"`
	MessageBytes int    `json:"message_bytes"`
	// EntriesPerOp: stream appends per object (commit-object), puts per
	// transaction (txn); 0 for one-entry operations.
	EntriesPerOp int `json:"entries_per_op,omitempty"`
	load.Result
}

// row is one pair at one concurrency: every round of both sides.
type row struct {
	Pair        string `json:"pair"`
	Concurrency int    `json:"concurrency"`
	BaseSystem  string `json:"base_system"` // etcd, or get (the bare object-store read)
	// StreamsPerObject is the object-txn pair's N (its etcd side, when
	// N <= 128, commits N puts per transaction); 0 for the other pairs.
	StreamsPerObject int      `json:"streams_per_object,omitempty"`
	Metad            []sample `json:"metad"`
	Base             []sample `json:"base"`
}

// summary is what summary.json holds.
type summary struct {
	Label string `json:"label"`
	Rows  []*row `json:"rows"`
}

func run(ctx context.Context, o options) error {
	if o.out != "" {
		if err := os.MkdirAll(o.out, 0o755); err != nil {
			return err
		}
	}
	var rows []*row
	for _, c := range o.concurrency {
		var cells []*row // this concurrency's rows, in the order they run
		for _, p := range o.pairs {
			pr := pairByName[p]
			if p != "object-txn" {
				cells = append(cells, &row{Pair: pr.name, Concurrency: c, BaseSystem: pr.base})
				continue
			}
			for _, n := range o.streamsPerObject {
				cells = append(cells, &row{Pair: objectName(n), Concurrency: c, BaseSystem: pr.base, StreamsPerObject: n})
			}
		}
		rows = append(rows, cells...)
		for round := range o.rounds {
			for _, r := range cells {
				p := pairByName["object-txn"]
				if r.StreamsPerObject == 0 {
					p = pairByRow(r)
				}
				if err := o.runPair(ctx, p, r, round); err != nil {
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
	b, err := json.MarshalIndent(summary{Label: o.label, Rows: rows}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(o.out, "summary.json"), b, 0o644)
}

// pairByRow is the pair r measures (not object-txn, whose rows are named
// by their size).
func pairByRow(r *row) pair {
	for _, p := range pairByName {
		if p.name == r.Pair {
			return p
		}
	}
	panic("compare: a row of no pair: " + r.Pair)
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
			s, err = o.runMetad(ctx, p, r, round)
			r.Metad = append(r.Metad, s)
		} else {
			if r.StreamsPerObject > maxTxnOps {
				continue // etcd refuses a transaction this large
			}
			// Each put as large as metad's request per entry.
			valueSize := r.Metad[0].MessageBytes / max(1, r.StreamsPerObject)
			s, err = o.runBase(ctx, p, r, round, valueSize)
			r.Base = append(r.Base, s)
		}
		if err != nil {
			return err
		}
		workload := s.Workload
		if s.EntriesPerOp > 0 {
			workload += fmt.Sprintf(" x%d", s.EntriesPerOp)
		}
		fmt.Fprintf(os.Stderr, "  %-6s %-19s c=%-3d round %d: %8.0f/s  p50 %7.3f ms  p99 %7.3f ms  errors %d\n",
			s.System, workload, r.Concurrency, round, s.Throughput, s.Latency.P50, s.Latency.P99, errorCount(s))
	}
	return nil
}

func (o options) runMetad(ctx context.Context, p pair, r *row, round int) (sample, error) {
	args := o.metadBenchArgs(p, p.metadWorkload, r.Concurrency)
	if r.StreamsPerObject > 0 {
		args = append(args, "--streams-per-object", strconv.Itoa(r.StreamsPerObject))
	}
	return o.runJSON(ctx, o.metadBench, args, fmt.Sprintf("metad-%s%s-c%d-r%d.json", p.metadWorkload, sizeSuffix(r), r.Concurrency, round))
}

// sizeSuffix names an object-txn row's size in its runs' file names.
func sizeSuffix(r *row) string {
	if r.StreamsPerObject == 0 {
		return ""
	}
	return fmt.Sprintf("-n%d", r.StreamsPerObject)
}

// metadBenchArgs are the arguments of one metad-bench run of workload in
// pair p.
func (o options) metadBenchArgs(p pair, workload string, c int) []string {
	args := []string{"--addr", o.metadAddrs, "--workload", workload, "-c", strconv.Itoa(c),
		"--duration", o.duration.String(), "--warmup", o.warmup.String(), "-o", "json"}
	args = append(args, o.metadArgs...)
	if p.base == baseGet {
		args = append(append(args, readArgs...), o.storeArgs...)
	}
	return args
}

// runBase runs p's baseline: etcd, with values as large as metad's
// messages, or the bare read.
func (o options) runBase(ctx context.Context, p pair, r *row, round, valueSize int) (sample, error) {
	c := r.Concurrency
	if p.base == baseGet {
		return o.runJSON(ctx, o.metadBench, o.metadBenchArgs(p, p.baseWorkload, c), fmt.Sprintf("bare-%s-c%d-r%d.json", p.baseWorkload, c, round))
	}
	args := []string{"--endpoints", o.etcdEnds, "--workload", p.baseWorkload, "--concurrency", strconv.Itoa(c),
		"--duration", o.duration.String(), "--warmup", o.warmup.String(), "--value-size", strconv.Itoa(valueSize),
		"--keys", "3200", "-o", "json"}
	if r.StreamsPerObject > 0 {
		args = append(args, "--txn-puts", strconv.Itoa(r.StreamsPerObject))
	}
	args = append(args, o.etcdArgs...)
	return o.runJSON(ctx, o.etcdload, args, fmt.Sprintf("etcd-%s%s-c%d-r%d.json", p.baseWorkload, sizeSuffix(r), c, round))
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
