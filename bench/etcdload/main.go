// Command etcdload is the etcd side of metad's side-by-side benchmark: the
// same closed-loop runner and latency summary as metad-bench (package
// github.com/metad/metad/bench/load), driving a running etcd cluster with
// the operations nearest to metad's:
//
//	put   each worker puts a new key (prefix/w<worker>/<seq>) with a value
//	      of --value-size bytes: the nearest to commit-append, which adds
//	      one evidence record and one index record to the state
//	cas   each worker owns one key and replaces it in a transaction that
//	      compares its mod revision first: append's compare-and-set on the
//	      expected start, done the etcd way
//	get   a linearizable Get of a random key of --keys keys holding
//	      --value-size bytes each (loaded before measuring): the nearest to
//	      resolve
//	txn   one transaction of --txn-puts puts of new keys
//	      (prefix/w<worker>/<seq>/<i>), --value-size bytes each: the
//	      nearest to commit-object, one command appending to that many
//	      streams, all or none. At most 128 puts: etcd's default
//	      --max-txn-ops. The report counts transactions (ops) and puts
//	      (entries).
//
// With --cacert (and --cert/--key for etcd's --client-cert-auth) it talks
// TLS, as etcdctl does with the same flags; bench/compare.sh's TLS=1 mode
// uses them so that etcd is measured with TLS when metad is.
//
// It lives in its own module so that metad's go.mod never sees etcd's
// client; it reaches the shared runner through a replace directive.
//
//	etcdload --endpoints 127.0.0.1:2379 --workload get --concurrency 64 --duration 10s -o json
//	etcdload --endpoints https://127.0.0.1:2379 --cacert ca.pem --cert client.pem --key client-key.pem --workload put
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/status"

	"github.com/metad/metad/bench/load"
)

// options are the command's flags.
type options struct {
	endpoints   string
	workload    string
	concurrency int
	duration    time.Duration
	warmup      time.Duration
	timeout     time.Duration
	valueSize   int
	keys        int
	txnPuts     int
	prefix      string
	output      string
	caFile      string
	certFile    string
	keyFile     string
}

func main() {
	var o options
	flag.StringVar(&o.endpoints, "endpoints", "127.0.0.1:2379", "comma-separated etcd client endpoints")
	flag.StringVar(&o.workload, "workload", "put", "put, cas, get or txn")
	flag.IntVar(&o.concurrency, "concurrency", 1, "workers, each with one request in flight")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "how long to measure")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "run this long before measuring")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Second, "deadline of each request")
	flag.IntVar(&o.valueSize, "value-size", 128, "bytes per value")
	flag.IntVar(&o.keys, "keys", 1000, "keys to read from (get)")
	flag.IntVar(&o.txnPuts, "txn-puts", 10, "puts per transaction (txn; at most 128, etcd's default --max-txn-ops)")
	flag.StringVar(&o.prefix, "prefix", "", "key prefix (default: a fresh one per run)")
	flag.StringVar(&o.output, "o", "table", "output: table or json")
	flag.StringVar(&o.caFile, "cacert", "", "PEM CA bundle of the servers' certificates: turns TLS on")
	flag.StringVar(&o.certFile, "cert", "", "PEM client certificate (for etcd's --client-cert-auth)")
	flag.StringVar(&o.keyFile, "key", "", "PEM key of --cert")
	flag.Parse()
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "etcdload:", err)
		os.Exit(1)
	}
}

// report is what -o json prints: the shared Result plus what was run.
type report struct {
	System    string `json:"system"`
	Workload  string `json:"workload"`
	ValueSize int    `json:"value_size"`
	// EntriesPerOp is txn's puts per transaction; EntriesPerSecond is
	// Throughput times it (puts/s). As metad-bench's fields of the names.
	EntriesPerOp     int     `json:"entries_per_op,omitempty"`
	EntriesPerSecond float64 `json:"entries_per_s,omitempty"`
	load.Result
}

func run(o options) error {
	if err := o.validate(); err != nil {
		return err
	}
	if o.prefix == "" {
		o.prefix = fmt.Sprintf("bench/%x", rand.Uint64())
	}
	tlsConfig, err := o.tlsConfig()
	if err != nil {
		return err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: strings.Split(o.endpoints, ","), DialTimeout: 5 * time.Second, TLS: tlsConfig})
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx := context.Background()
	op, err := o.prepare(ctx, cli)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	cfg := load.Config{Concurrency: o.concurrency, Duration: o.duration, Warmup: o.warmup, Progress: progressLine(o)}
	res, err := load.Run(ctx, cfg, op, classify)
	if isTerminal(os.Stderr) {
		fmt.Fprint(os.Stderr, "\r\x1b[K")
	}
	if err != nil {
		return err
	}
	rep := report{System: "etcd", Workload: o.workload, ValueSize: o.valueSize, Result: res}
	if o.workload == "txn" {
		rep.EntriesPerOp = o.txnPuts
		rep.EntriesPerSecond = res.Throughput * float64(o.txnPuts)
	}
	if o.output == "json" {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printTable(rep)
	return nil
}

func (o options) validate() error {
	var errs []error
	switch o.workload {
	case "put", "cas", "get", "txn":
	default:
		errs = append(errs, fmt.Errorf("--workload %q: want put, cas, get or txn", o.workload))
	}
	if o.txnPuts < 1 || o.txnPuts > maxTxnOps {
		errs = append(errs, fmt.Errorf("--txn-puts %d: want 1..%d (etcd's default --max-txn-ops)", o.txnPuts, maxTxnOps))
	}
	if o.valueSize < 0 || o.valueSize > 1<<20 {
		errs = append(errs, fmt.Errorf("--value-size %d: want 0..1MiB", o.valueSize))
	}
	if o.keys < 1 {
		errs = append(errs, fmt.Errorf("--keys %d: want at least 1", o.keys))
	}
	if o.output != "table" && o.output != "json" {
		errs = append(errs, fmt.Errorf("-o %q: want table or json", o.output))
	}
	if (o.certFile == "") != (o.keyFile == "") || (o.certFile != "" && o.caFile == "") {
		errs = append(errs, errors.New("--cert and --key: give both, with --cacert"))
	}
	return errors.Join(errs...)
}

// tlsConfig is the client's TLS, or nil without --cacert.
func (o options) tlsConfig() (*tls.Config, error) {
	if o.caFile == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(o.caFile)
	if err != nil {
		return nil, fmt.Errorf("--cacert: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--cacert %s: no PEM certificate in it", o.caFile)
	}
	c := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if o.certFile != "" {
		pair, err := tls.LoadX509KeyPair(o.certFile, o.keyFile)
		if err != nil {
			return nil, fmt.Errorf("--cert/--key: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}

// prepare loads what the workload reads and returns its operation.
func (o options) prepare(ctx context.Context, cli *clientv3.Client) (load.Op, error) {
	value := strings.Repeat("v", o.valueSize)
	switch o.workload {
	case "put":
		seq := make([]uint64, o.concurrency)
		return func(ctx context.Context, w int) (string, error) {
			seq[w]++
			ctx, cancel := context.WithTimeout(ctx, o.timeout)
			defer cancel()
			_, err := cli.Put(ctx, fmt.Sprintf("%s/w%d/%020d", o.prefix, w, seq[w]), value)
			return "put", err
		}, nil
	case "cas":
		return o.casOp(ctx, cli, value)
	case "txn":
		return o.txnOp(cli, value), nil
	}
	for i := range o.keys {
		if _, err := cli.Put(ctx, o.key(i), value); err != nil {
			return nil, err
		}
	}
	return func(ctx context.Context, w int) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, o.timeout)
		defer cancel()
		resp, err := cli.Get(ctx, o.key(rand.IntN(o.keys))) // linearizable: the default
		if err == nil && len(resp.Kvs) != 1 {
			err = errors.New("key missing")
		}
		return "get", err
	}, nil
}

// casOp: each worker owns one key and replaces it only if it is unchanged
// since the worker last wrote it.
func (o options) casOp(ctx context.Context, cli *clientv3.Client, value string) (load.Op, error) {
	revs := make([]int64, o.concurrency)
	for w := range revs {
		resp, err := cli.Put(ctx, o.key(w), value)
		if err != nil {
			return nil, err
		}
		revs[w] = resp.Header.Revision
	}
	return func(ctx context.Context, w int) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, o.timeout)
		defer cancel()
		key := o.key(w)
		resp, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision(key), "=", revs[w])).
			Then(clientv3.OpPut(key, value)).Commit()
		switch {
		case err != nil:
			return "cas", err
		case !resp.Succeeded:
			return "cas", errors.New("compare failed")
		}
		revs[w] = resp.Header.Revision
		return "cas", nil
	}, nil
}

// maxTxnOps is etcd's default --max-txn-ops: the most operations one
// transaction may hold.
const maxTxnOps = 128

// txnOp: each worker commits transactions of --txn-puts puts of new keys.
func (o options) txnOp(cli *clientv3.Client, value string) load.Op {
	seq := make([]uint64, o.concurrency)
	return func(ctx context.Context, w int) (string, error) {
		seq[w]++
		ops := make([]clientv3.Op, o.txnPuts)
		for i := range ops {
			ops[i] = clientv3.OpPut(fmt.Sprintf("%s/w%d/%020d/%d", o.prefix, w, seq[w], i), value)
		}
		ctx, cancel := context.WithTimeout(ctx, o.timeout)
		defer cancel()
		_, err := cli.Txn(ctx).Then(ops...).Commit()
		return "txn", err
	}
}

func (o options) key(i int) string { return fmt.Sprintf("%s/k%08d", o.prefix, i) }

// classify names a failure by its gRPC code, or its text.
func classify(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "DeadlineExceeded"
	}
	if s, ok := status.FromError(err); ok {
		return s.Code().String()
	}
	return err.Error()
}

func progressLine(o options) func(load.Progress) {
	if !isTerminal(os.Stderr) {
		return nil
	}
	return func(p load.Progress) {
		phase := "etcd " + o.workload
		if p.Warmup {
			phase += " (warm-up)"
		}
		fmt.Fprintf(os.Stderr, "\r%s c=%d  %s/%s  %d ok  %d errors  %.0f/s\x1b[K", phase, o.concurrency,
			p.Elapsed.Round(time.Second), p.Total, p.Ops, p.Errors, p.Rate)
	}
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func printTable(r report) {
	l := r.Latency
	fmt.Printf("etcd %s  concurrency %d  value %d B  %.1fs\n", r.Workload, r.Concurrency, r.ValueSize, r.ElapsedSeconds)
	fmt.Printf("ops %d  throughput %.0f/s\n", r.Ops, r.Throughput)
	if r.EntriesPerOp > 0 {
		fmt.Printf("%d puts per txn: %.0f puts/s\n", r.EntriesPerOp, r.EntriesPerSecond)
	}
	fmt.Printf("latency ms  mean %.3f  p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n", l.Mean, l.P50, l.P90, l.P99, l.P999, l.Max)
	for _, reason := range load.SortedKeys(r.Errors) {
		fmt.Printf("error %s: %d\n", reason, r.Errors[reason])
	}
}
