package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/bench/load"
	"github.com/metad/metad/checksum"
	"github.com/metad/metad/client"
	"github.com/metad/metad/cmd/internal/cliflags"
	"github.com/metad/metad/objectstore"
)

// metad-bench drives a running cluster with one workload and prints what
// it measured. The runner and the latency summary are package bench/load,
// shared with the etcd yardstick (bench/etcdload) so that both sides of
// bench/compare.sh are measured the same way. PERFORMANCE.md has figures.

// benchOpts are the flags of metad-bench.
type benchOpts struct {
	workload    string
	concurrency int
	duration    time.Duration
	warmup      time.Duration
	payload     int
	streams     int
	appends     int
	offsets     uint64
	readRatio   float64
	records     int
	readSize    int
	objects     cliflags.ClientObjectStore
	release     bool
	spread      bool
	prefix      string
	// noDataChecksum: appends and published records carry no data
	// checksum, as records from before data checksums, so reads of them
	// are unchecked (the other side of the checksum's cost).
	noDataChecksum bool
	// clientRead: the read workload calls client.Read, the broker's API,
	// instead of its own resolve and ranged read.
	clientRead bool
	// streamsPerObject: the appends of each commit-object operation.
	streamsPerObject int
}

var benchWorkloads = []string{"commit-append", "resolve", "mixed", "publish", "read", "get", "commit-object"}

// readWorkloads read bytes from the object store, so they need one.
func readWorkload(w string) bool { return w == "read" || w == "get" }

func newBenchCmd() *cobra.Command {
	var b benchOpts
	o := &clientOpts{}
	cmd := &cobra.Command{
		Use:   "metad-bench",
		Short: "Drive the cluster with a workload and print throughput, latency percentiles and errors",
		Long: `Run a closed-loop load test against a running cluster: --concurrency workers,
each with one call in flight, for --duration after --warmup. Prints throughput,
latency (mean, p50, p90, p99, p99.9, max) and errors by reason; -o json for
scripts. Progress is shown on stderr when it is a terminal.

Workloads:
  commit-append  each worker creates and opens its own stream once, then commits
                 appends of --offsets offsets at its committed end (with the
                 generation-0 index record), a new request id per append. With
                 --object-dir each append first writes --payload bytes to that
                 object store and registers the object (three steps, all timed);
                 without it each worker registers one synthetic object once and
                 every append references a --payload-byte range of it, so only
                 metadata is measured. (--object-store works as --object-dir.)
  resolve        loads --streams streams with --appends indexed appends each,
                 then resolves random committed offsets in COMMITTED (each
                 resolve takes a pin; --release also releases it, timed,
                 unless the server shares it with other readers: a shared
                 pin is never released, and such calls count as "resolve").
  mixed          resolve with probability --read-ratio, else commit-append.
  publish        each worker publishes ever newer COMMITTED generations of
                 --records records over its own stream (they accumulate).
  read           a broker's read, end to end: loads --streams streams with
                 --appends appends whose --payload bytes are written to the
                 object store (--object-store, required), then resolves a
                 random committed offset and reads --read-size bytes of the
                 target's object by its identity (S3: a ranged GET by
                 VersionId with If-Match), checking the data checksum when
                 --read-size is the whole payload. With --client-read each
                 read is one call of client.Read, the broker's API (resolve,
                 read the record's whole byte range, check its data checksum,
                 release the pin unless shared, fall back), instead of the
                 bench's own resolve and ranged read; the report counts the
                 reads that were checked and those that were not.
  get            the bare ranged read of the same bytes, with no resolve: the
                 same load, the same offsets, the object looked up locally.
                 Run it next to read: the difference is what metad adds.
  commit-object  each worker creates and opens --streams-per-object streams of
                 its own, then commits stream-set objects (CommitObject): one
                 new synthetic object version per operation (key and identity
                 made up by the tool, registered by the command itself) with an
                 append of --offsets offsets and a --payload-byte range of it
                 to each of the worker's streams, at their committed ends (with
                 the generation-0 index record). Only metadata is measured. The
                 report counts objects (ops) and stream appends (entries).

Calls go to the leader once the client knows it, as a broker's would; --spread
sends them round robin over --addr instead (followers then serve them).
--timeout is the deadline of each call, not of the whole run. Streams are named
--prefix (default bench-<random>), so runs do not collide.

--no-data-checksum makes every append and published record the bench writes
(the setup's too) carry no data checksum, as records written before data
checksums: the same read workload then reads unchecked, so a run with it and
one without measure what checking the CRC-32C costs a read.`,
		Example: `  metad-bench --workload commit-append --concurrency 16 --duration 30s
  metad-bench --workload resolve -c 64 --streams 64 -o json
  metad-bench --workload mixed --read-ratio 0.9 -c 32
  metad-bench --workload commit-object --streams-per-object 100 -c 64
  metad-bench --workload read -c 16 --streams 16 --appends 20 --payload 65536 --read-size 4096 \
      --object-store s3://metad/bench --s3-endpoint http://127.0.0.1:8333 --s3-path-style
  metad-bench --workload read --client-read --no-data-checksum -c 16 --object-dir ./objects`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 0 {
				return usageError(fmt.Errorf("metad-bench takes no arguments, received %d", len(args)))
			}
			return nil
		},
		RunE:          func(cmd *cobra.Command, _ []string) error { return runBench(cmd, o, &b) },
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	o.register(cmd)
	f := cmd.Flags()
	f.StringVar(&b.workload, "workload", "commit-append", strings.Join(benchWorkloads, ", "))
	f.IntVarP(&b.concurrency, "concurrency", "c", 16, "workers, each with one call in flight")
	f.DurationVar(&b.duration, "duration", 10*time.Second, "how long to measure")
	f.DurationVar(&b.warmup, "warmup", time.Second, "run this long before measuring (discarded)")
	f.IntVar(&b.payload, "payload", 1024, "bytes per append")
	f.IntVar(&b.streams, "streams", 64, "streams to resolve in (resolve, mixed)")
	f.IntVar(&b.appends, "appends", 50, "appends loaded per stream before resolving")
	f.Uint64Var(&b.offsets, "offsets", 10, "offsets per append")
	f.Float64Var(&b.readRatio, "read-ratio", 0.9, "share of resolves (mixed)")
	f.IntVar(&b.records, "records", 1, "records per published generation (publish)")
	f.IntVar(&b.readSize, "read-size", 0, "bytes each read reads (read, get; default: the whole --payload)")
	b.objects.Register(f, "", "write payloads to this local object store, an alias of --object-store file://DIR (the servers'); default: synthetic objects")
	f.BoolVar(&b.release, "release", false, "release each resolve's pin too (resolve, mixed)")
	f.BoolVar(&b.spread, "spread", false, "spread calls round robin over --addr instead of sending them to the leader once known")
	f.StringVar(&b.prefix, "prefix", "", "stream name prefix (default bench-<random>)")
	f.BoolVar(&b.noDataChecksum, "no-data-checksum", false, "appends and published records carry no data checksum (reads of them are unchecked)")
	f.IntVar(&b.streamsPerObject, "streams-per-object", 10, "streams each object appends to (commit-object; the server allows --max-object-streams)")
	f.BoolVar(&b.clientRead, "client-read", false, "read: each read is one client.Read call (the whole byte range, checked), not the bench's own resolve and ranged read")
	return cmd
}

func (b benchOpts) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	found := false
	for _, w := range benchWorkloads {
		found = found || w == b.workload
	}
	if !found {
		bad("--workload %q: want one of %s", b.workload, strings.Join(benchWorkloads, ", "))
	}
	if b.concurrency < 1 || b.concurrency > load.MaxConcurrency {
		bad("--concurrency %d: want 1..%d", b.concurrency, load.MaxConcurrency)
	}
	if b.duration < load.MinDuration || b.duration > load.MaxDuration {
		bad("--duration %v: want %v..%v", b.duration, load.MinDuration, load.MaxDuration)
	}
	if b.warmup < 0 || b.warmup > load.MaxWarmup {
		bad("--warmup %v: want 0..%v", b.warmup, load.MaxWarmup)
	}
	errs = append(errs, b.validateShape()...)
	if readWorkload(b.workload) && !b.objects.Named() {
		bad("--workload %s: needs the servers' object store (--object-store or --object-dir)", b.workload)
	}
	if b.clientRead && (b.workload != "read" || (b.readSize != 0 && b.readSize != b.payload)) {
		bad("--client-read: only with --workload read, which then reads the whole --payload (not --read-size %d)", b.readSize)
	}
	if err := errors.Join(errs...); err != nil {
		return usageError(err)
	}
	return nil
}

// validateShape checks the sizes of what each run writes and reads.
func (b benchOpts) validateShape() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if b.payload < 1 || b.payload > 64<<20 {
		bad("--payload %d: want 1..64MiB", b.payload)
	}
	if b.streams < 1 || b.appends < 1 || b.offsets < 1 || b.records < 1 {
		bad("--streams, --appends, --offsets and --records must be positive")
	}
	if b.records > client.MaxRecordsPerPart || uint64(b.records) > b.offsets {
		bad("--records %d: want at most %d and at most --offsets", b.records, client.MaxRecordsPerPart)
	}
	if b.streamsPerObject < 1 || b.streamsPerObject > maxStreamsPerObject {
		bad("--streams-per-object %d: want 1..%d", b.streamsPerObject, maxStreamsPerObject)
	}
	if b.readRatio < 0 || b.readRatio > 1 {
		bad("--read-ratio %v: want 0..1", b.readRatio)
	}
	if b.readSize < 0 || b.readSize > b.payload {
		bad("--read-size %d: want 0..--payload (%d)", b.readSize, b.payload)
	}
	return errs
}

// benchReport is what `metad-bench -o json` prints: the shared load.Result
// plus what was run.
type benchReport struct {
	System   string `json:"system"`
	Workload string `json:"workload"`
	// Objects says what an append costs besides metadata: "synthetic"
	// (metadata only) or "written to DIR".
	Objects string `json:"objects"`
	Payload int    `json:"payload"`
	// ReadSize is the bytes each read of read and get reads.
	ReadSize int `json:"read_size,omitempty"`
	// MessageBytes is the protobuf size of one commit-append request
	// (commit-append, publish) or one resolve response (resolve, mixed):
	// the metadata each call moves, for sizing the etcd yardstick's values.
	MessageBytes int `json:"message_bytes"`
	Streams      int `json:"streams"`
	// EntriesPerOp is what one operation writes, when it writes several:
	// commit-object's stream appends per object. EntriesPerSecond is
	// Throughput times it (stream-appends/s).
	EntriesPerOp     int     `json:"entries_per_op,omitempty"`
	EntriesPerSecond float64 `json:"entries_per_s,omitempty"`
	// Release: each resolve's pin was released too, inside the timed call.
	Release bool `json:"release,omitempty"`
	// Spread: calls went round robin over --addr, not to the leader.
	Spread bool `json:"spread,omitempty"`
	// NoDataChecksum: what the bench wrote carries no data checksum.
	NoDataChecksum bool `json:"no_data_checksum,omitempty"`
	// ClientRead: each read was one client.Read call. CheckedReads and
	// UncheckedReads count those that were checked against a data
	// checksum and those that were not (ReadResult.Unchecked), failed
	// calls not counted, warm-up included.
	ClientRead     bool  `json:"client_read,omitempty"`
	CheckedReads   int64 `json:"checked_reads,omitempty"`
	UncheckedReads int64 `json:"unchecked_reads,omitempty"`
	load.Result
}

func runBench(cmd *cobra.Command, o *clientOpts, b *benchOpts) error {
	if err := errors.Join(o.validate(), b.validate()); err != nil {
		return err
	}
	if b.readSize == 0 {
		b.readSize = b.payload
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt)
	defer stop()
	env := &benchEnv{opts: *b, timeout: o.timeout, status: cmd.ErrOrStderr()}
	if err := env.openStore(ctx, cmd); err != nil {
		return err
	}
	// Like a broker's client, calls go to the leader once it is known,
	// unless --spread asks to measure the members the way they are named.
	// client.Read fetches from the bench's object store.
	ccfg := o.auth.Config(o.addr)
	ccfg.Timeout, ccfg.Holder, ccfg.SpreadCalls = o.timeout, "metad-bench", b.spread
	ccfg.Objects = env.store
	c, err := client.New(ccfg)
	if err != nil {
		return err
	}
	defer c.Close()
	env.c = c
	op, rep, err := env.prepare(ctx)
	if err != nil {
		return fmt.Errorf("bench setup: %w", err)
	}
	cfg := load.Config{Concurrency: b.concurrency, Duration: b.duration, Warmup: b.warmup, Progress: env.progress()}
	res, runErr := load.Run(ctx, cfg, op, benchReason)
	env.clearLine()
	rep.Result = res
	rep.EntriesPerSecond = res.Throughput * float64(rep.EntriesPerOp)
	rep.CheckedReads, rep.UncheckedReads = env.checked.Load(), env.unchecked.Load()
	if err := o.printJSON(cmd.OutOrStdout(), rep, func(tw *tabwriter.Writer) { benchTable(tw, rep) }); err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("interrupted; the figures above are partial: %w", runErr)
	}
	return nil
}

// benchReason names a failed call for the error table.
func benchReason(err error) string {
	if r := client.Reason(err); r != "" {
		return r
	}
	var oe outcomeError
	if errors.As(err, &oe) {
		return "OUTCOME_" + oe.outcome.String()
	}
	for _, se := range []struct {
		err    error
		reason string
	}{{objectstore.ErrNotFound, "STORE_NOT_FOUND"}, {objectstore.ErrIdentityMismatch, "STORE_IDENTITY_MISMATCH"},
		{objectstore.ErrCorrupt, "STORE_CORRUPT"}, {objectstore.ErrUnavailable, "STORE_UNAVAILABLE"}} {
		if errors.Is(err, se.err) {
			return se.reason
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "DEADLINE_EXCEEDED"
	}
	return "CLIENT_ERROR"
}

// outcomeError is a resolve that answered, but not with a target: every
// offset the bench resolves is committed and indexed, so it is a failure.
type outcomeError struct{ outcome metadpb.Outcome }

func (e outcomeError) Error() string { return "resolve answered " + e.outcome.String() }

func benchTable(tw *tabwriter.Writer, r benchReport) {
	release := ""
	if r.Release {
		release = " (with release)"
	}
	if r.Spread {
		release += " (spread over members)"
	}
	fmt.Fprintf(tw, "metad %s%s  concurrency %d  objects: %s  payload %d B  message %d B\n",
		r.Workload, release, r.Concurrency, r.Objects, r.Payload, r.MessageBytes)
	if r.ReadSize > 0 {
		fmt.Fprintf(tw, "each read reads %d B of an object\n", r.ReadSize)
	}
	if r.ClientRead {
		fmt.Fprintf(tw, "through client.Read: %d reads checked against a data checksum, %d unchecked (warm-up included)\n",
			r.CheckedReads, r.UncheckedReads)
	}
	if r.NoDataChecksum {
		fmt.Fprintln(tw, "written with no data checksums (--no-data-checksum)")
	}
	fmt.Fprintf(tw, "measured %.1fs  ops %d  throughput %.0f/s\n", r.ElapsedSeconds, r.Ops, r.Throughput)
	if r.EntriesPerOp > 0 {
		fmt.Fprintf(tw, "%d streams per object: %.0f stream-appends/s\n", r.EntriesPerOp, r.EntriesPerSecond)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "KIND\tOPS\tOPS/S\tMEAN\tP50\tP90\tP99\tP99.9\tMAX (ms)")
	row := func(kind string, ops int64, tput float64, l load.Latency) {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\n", kind, ops, tput, l.Mean, l.P50, l.P90, l.P99, l.P999, l.Max)
	}
	row("all", r.Ops, r.Throughput, r.Latency)
	for _, k := range load.SortedKeys(r.Kinds) {
		row(k, r.Kinds[k].Ops, r.Kinds[k].Throughput, r.Kinds[k].Latency)
	}
	if len(r.Errors) == 0 {
		fmt.Fprintln(tw, "\nerrors: none")
		return
	}
	fmt.Fprintln(tw, "\nERROR\tCOUNT")
	for _, reason := range load.SortedKeys(r.Errors) {
		fmt.Fprintf(tw, "%s\t%d\n", reason, r.Errors[reason])
	}
}

// benchEnv is one bench run's setup and operations.
type benchEnv struct {
	// Set by runBench; read-only afterwards.
	c       *client.Client
	opts    benchOpts
	timeout time.Duration
	status  io.Writer
	store   objectstore.Store // nil: synthetic objects

	// Set by prepare before the workers start; writers[w] is then touched
	// only by worker w.
	writers []*benchWriter
	objects []*objectWriter // objects[w]: worker w's streams (commit-object)
	reads   []benchStream
	buffers [][]byte // buffers[w]: worker w's read buffer (read, get)
	// objectChecksum is the data checksum of every commit-object append.
	objectChecksum checksum.Data

	// Updated by the workers of --client-read.
	checked, unchecked atomic.Int64
}

func (e *benchEnv) openStore(ctx context.Context, cmd *cobra.Command) error {
	if e.opts.prefix == "" {
		e.opts.prefix = fmt.Sprintf("bench-%08x", rand.Uint32())
	}
	if !e.opts.objects.Named() {
		return nil
	}
	store, err := e.opts.objects.Open(ctx, cmd.Flags())
	e.store = store
	return err
}

// prepare creates and loads the streams the workload needs and returns its
// operation and the report to fill in.
func (e *benchEnv) prepare(ctx context.Context) (load.Op, benchReport, error) {
	b := e.opts
	rep := benchReport{System: "metad", Workload: b.workload, Objects: "synthetic", Payload: b.payload,
		Release: b.release && (b.workload == "resolve" || b.workload == "mixed"), Spread: b.spread,
		NoDataChecksum: b.noDataChecksum, ClientRead: b.clientRead}
	if e.store != nil {
		rep.Objects = "written to " + b.objects.Describe()
	}
	if readWorkload(b.workload) {
		return e.prepareReads(ctx, rep)
	}
	if b.workload == "commit-object" {
		return e.prepareObjects(ctx, rep)
	}
	if b.workload != "resolve" {
		e.say("creating %d writer streams", b.concurrency)
		if err := e.makeWriters(ctx); err != nil {
			return nil, rep, err
		}
		rep.Streams = b.concurrency
		rep.MessageBytes = e.appendSize()
	}
	if b.workload == "resolve" || b.workload == "mixed" {
		e.say("loading %d streams with %d appends each", b.streams, b.appends)
		n, err := e.loadReads(ctx)
		if err != nil {
			return nil, rep, err
		}
		rep.Streams += b.streams
		rep.MessageBytes = n
	}
	switch b.workload {
	case "commit-append":
		return func(ctx context.Context, w int) (string, error) {
			return "commit-append", e.appendOnce(ctx, e.writers[w])
		}, rep, nil
	case "resolve":
		return e.resolveOnce, rep, nil
	case "mixed":
		return func(ctx context.Context, w int) (string, error) {
			if rand.Float64() < b.readRatio {
				return e.resolveOnce(ctx, w)
			}
			return "commit-append", e.appendOnce(ctx, e.writers[w])
		}, rep, nil
	}
	for _, w := range e.writers { // publish: something to cover
		if err := e.appendOnce(ctx, w); err != nil {
			return nil, rep, err
		}
	}
	return func(ctx context.Context, w int) (string, error) {
		return "publish", e.publishOnce(ctx, e.writers[w])
	}, rep, nil
}

// appendSize is the protobuf size of one commit-append request. Before
// its first append a writer with an object store has no object yet: a
// stand-in of the same shape takes its place.
func (e *benchEnv) appendSize() int {
	w := e.writers[0]
	req := w.appendRequest(e.opts.offsets)
	if req.Object == nil {
		req.Object = &metadpb.ObjectRef{Key: e.objectKey(w), Identity: "sha256:" + strings.Repeat("0", 64)}
		req.Bytes.Length = uint64(e.opts.payload)
	}
	return proto.Size(req)
}

// benchWriter is one stream opened for write by one worker.
type benchWriter struct {
	stream, epoch, end uint64
	obj                *metadpb.ObjectRef // the object appends reference
	objLen             uint64             // bytes of obj appends use
	data               checksum.Data      // data checksum of those bytes
	synthetic          bool               // obj is registered, never written
	seq                uint64             // appends so far, to vary byte ranges
	gen                uint64             // last published generation
}

// syntheticSize is the registered size of a synthetic object: large enough
// for every byte range an append can name (they wrap around).
const syntheticSize = 1 << 40

func (e *benchEnv) makeWriters(ctx context.Context) error {
	e.writers = make([]*benchWriter, e.opts.concurrency)
	return e.parallel(ctx, len(e.writers), func(ctx context.Context, i int) error {
		w, err := e.newWriter(ctx, fmt.Sprintf("%s-w%d", e.opts.prefix, i))
		e.writers[i] = w
		return err
	})
}

func (e *benchEnv) newWriter(ctx context.Context, name string) (*benchWriter, error) {
	cr, err := call(ctx, e, e.c.Metad.CreateStream, &metadpb.CreateStreamRequest{Name: name, RequestId: client.NewRequestID()})
	if err != nil {
		return nil, err
	}
	op, err := call(ctx, e, e.c.Metad.OpenForWrite, &metadpb.OpenForWriteRequest{StreamId: cr.StreamId, RequestId: client.NewRequestID()})
	if err != nil {
		return nil, err
	}
	w := &benchWriter{stream: cr.StreamId, epoch: op.WriterEpoch}
	if err := e.resync(ctx, w); err != nil {
		return nil, err
	}
	if e.store != nil {
		return w, nil
	}
	key := fmt.Sprintf("bench/%s/synthetic", name)
	sum := sha256.Sum256([]byte(key))
	w.obj = &metadpb.ObjectRef{Key: key, Identity: "sha256:" + hex.EncodeToString(sum[:])}
	w.objLen, w.synthetic = uint64(e.opts.payload), true
	// Nobody reads a synthetic object's bytes, but its appends carry a data
	// checksum as real ones do (of zeros), so the metadata measured is the
	// metadata a broker writes.
	w.data = e.dataChecksum(make([]byte, w.objLen))
	_, err = call(ctx, e, e.c.Metad.RegisterObject, &metadpb.RegisterObjectRequest{Object: w.obj, Size: syntheticSize, RequestId: client.NewRequestID()})
	return w, err
}

// resync reads the writer's committed end, after a failed append.
func (e *benchEnv) resync(ctx context.Context, w *benchWriter) error {
	d, err := call(ctx, e, e.c.Metad.DescribeStream, &metadpb.DescribeStreamRequest{StreamId: w.stream})
	if err == nil {
		w.end = d.Stream.CommittedEnd
	}
	return err
}

func (w *benchWriter) appendRequest(n uint64) *metadpb.CommitAppendRequest {
	var off uint64 // a real object holds exactly this append's bytes
	if w.synthetic {
		off = (w.seq * w.objLen) % (syntheticSize - w.objLen)
	}
	return &metadpb.CommitAppendRequest{
		StreamId: w.stream, WriterEpoch: w.epoch, ExpectedStart: w.end, End: w.end + n,
		Object: w.obj, Bytes: &metadpb.ByteRange{Offset: off, Length: w.objLen},
		IndexGen0: true, RequestId: client.NewRequestID(), DataCrc32C: w.data.Ptr(),
	}
}

// appendOnce commits one append at w's committed end (writing and
// registering its bytes first when there is an object store).
func (e *benchEnv) appendOnce(ctx context.Context, w *benchWriter) error {
	if e.store != nil {
		if err := e.putObject(ctx, w); err != nil {
			return err
		}
	}
	resp, err := call(ctx, e, e.c.Metad.CommitAppend, w.appendRequest(e.opts.offsets))
	w.seq++
	if err != nil {
		// Where is the end now? (A retried append may have landed; another
		// writer cannot have moved it: each stream has one.)
		_ = e.resync(ctx, w)
		return err
	}
	w.end = resp.CommittedEnd
	return nil
}

func (e *benchEnv) putObject(ctx context.Context, w *benchWriter) error {
	key := e.objectKey(w)
	payload := bytes.Repeat([]byte{byte(w.seq)}, e.opts.payload)
	info, err := e.store.Put(ctx, key, bytes.NewReader(payload))
	if err != nil {
		return err
	}
	w.obj, w.objLen = &metadpb.ObjectRef{Key: info.Key, Identity: info.Identity}, uint64(info.Size)
	w.data = e.dataChecksum(payload)
	_, err = call(ctx, e, e.c.Metad.RegisterObject, &metadpb.RegisterObjectRequest{Object: w.obj, Size: uint64(info.Size), RequestId: client.NewRequestID()})
	return err
}

// dataChecksum is the data checksum appends and records of p carry: its
// CRC-32C, or none with --no-data-checksum.
func (e *benchEnv) dataChecksum(p []byte) checksum.Data {
	if e.opts.noDataChecksum {
		return checksum.Data{}
	}
	return checksum.Of(p)
}

// objectKey names the object of w's next append.
func (e *benchEnv) objectKey(w *benchWriter) string {
	return fmt.Sprintf("bench/%s/s%d/%020d", e.opts.prefix, w.stream, w.end)
}

// publishOnce publishes the next COMMITTED generation of w's stream: the
// committed range split into --records records over w's object.
func (e *benchEnv) publishOnce(ctx context.Context, w *benchWriter) error {
	gen := w.gen + 1
	req := &metadpb.PublishGenerationRequest{StreamId: w.stream, View: metadpb.View_COMMITTED, Generation: gen,
		WriterEpoch: w.epoch, Coverage: &metadpb.Range{Start: 0, End: w.end}, Complete: true, RequestId: client.NewRequestID()}
	n := uint64(e.opts.records)
	for i := range n {
		rec := &metadpb.IndexRecord{
			Range: &metadpb.Range{Start: w.end * i / n, End: w.end * (i + 1) / n}, Object: w.obj,
			Bytes: &metadpb.ByteRange{Length: w.objLen}, DataCrc32C: w.data.Ptr(),
		}
		rec.Checksum = client.RecordChecksum(w.stream, req.View, gen, rec)
		req.Records = append(req.Records, rec)
	}
	if _, err := call(ctx, e, e.c.Metad.PublishGeneration, req); err != nil {
		if errors.Is(err, client.ErrGenerationNotNewer) {
			w.gen++ // a retried publish landed, or a stale count: move on
		}
		return err
	}
	w.gen = gen
	return nil
}

// benchStream is a loaded stream to resolve in.
type benchStream struct {
	id, end uint64
	// objects[i] holds the bytes of the i-th append (offsets
	// i*--offsets up to the next), when there is an object store.
	objects []*metadpb.ObjectRef
}

// loadReads creates --streams streams with --appends indexed appends each
// and returns the size of one resolve response.
func (e *benchEnv) loadReads(ctx context.Context) (int, error) {
	b := e.opts
	e.reads = make([]benchStream, b.streams)
	err := e.parallel(ctx, b.streams, func(ctx context.Context, i int) error {
		w, err := e.newWriter(ctx, fmt.Sprintf("%s-r%d", b.prefix, i))
		if err != nil {
			return err
		}
		s := benchStream{id: w.stream}
		for range b.appends {
			if err := e.appendOnce(ctx, w); err != nil {
				return err
			}
			s.objects = append(s.objects, w.obj)
		}
		s.end = w.end
		e.reads[i] = s
		return nil
	})
	if err != nil {
		return 0, err
	}
	resp, err := e.resolve(ctx, e.reads[0], 0)
	return proto.Size(resp), err
}

// resolveOnce resolves a random committed offset of a random loaded stream,
// and with --release gives its pin back, unless the pin is shared with
// other readers (Target.pin_shared), which must not be released.
func (e *benchEnv) resolveOnce(ctx context.Context, _ int) (string, error) {
	s := e.reads[rand.IntN(len(e.reads))]
	resp, err := e.resolve(ctx, s, rand.Uint64N(s.end))
	if err != nil || !e.opts.release || resp.Target.PinShared {
		return "resolve", err
	}
	_, err = call(ctx, e, e.c.Metad.ReleasePin, &metadpb.ReleasePinRequest{PinId: resp.Target.PinId, RequestId: client.NewRequestID()})
	return "resolve+release", err
}

func (e *benchEnv) resolve(ctx context.Context, s benchStream, offset uint64) (*metadpb.ResolveResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	resp, err := e.c.Resolve(ctx, s.id, metadpb.View_COMMITTED, offset, nil)
	if err == nil && resp.Outcome != metadpb.Outcome_TARGET {
		return nil, outcomeError{resp.Outcome}
	}
	return resp, err
}

// call is client.Call under the per-call --timeout.
func call[Req, Resp any](ctx context.Context, e *benchEnv, rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req) (Resp, error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	return client.Call(ctx, e.c, rpc, req)
}

// parallel runs fn(0..n-1), at most --concurrency at a time, and returns
// the first error (the others are cancelled).
func (e *benchEnv) parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	return e.parallelWidth(ctx, n, e.opts.concurrency, fn)
}

// parallelWidth is parallel with at most width at a time.
func (e *benchEnv) parallelWidth(ctx context.Context, n, width int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, width) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(ctx, i); err != nil {
					cancel(err)
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}

// say prints a setup step on a terminal.
func (e *benchEnv) say(format string, args ...any) {
	if cliflags.IsTerminal(e.status) {
		fmt.Fprintf(e.status, "\r"+format+"...\x1b[K", args...)
	}
}

func (e *benchEnv) clearLine() {
	if cliflags.IsTerminal(e.status) {
		fmt.Fprint(e.status, "\r\x1b[K")
	}
}

// progress redraws one status line on a terminal.
func (e *benchEnv) progress() func(load.Progress) {
	if !cliflags.IsTerminal(e.status) {
		return nil
	}
	return func(p load.Progress) {
		phase := ""
		if p.Warmup {
			phase = " (warm-up)"
		}
		fmt.Fprintf(e.status, "\rmetad %s%s c=%d  %s/%s  %d ok  %d errors  %.0f/s\x1b[K", e.opts.workload, phase,
			e.opts.concurrency, p.Elapsed.Round(time.Second), p.Total, p.Ops, p.Errors, p.Rate)
	}
}
