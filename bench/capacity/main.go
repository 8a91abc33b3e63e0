package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/metad/metad/bench/load"
	"github.com/metad/metad/client"
	"github.com/metad/metad/clock"
)

// options are the command's flags.
type options struct {
	metad             string
	sizes             []int
	streams           int
	trim              float64
	writers           int
	concurrency       int
	resolveWindow     uint64
	duration, warmup  time.Duration
	snapshotThreshold uint64
	snapshotWait      time.Duration
	snapshotInterval  time.Duration
	rejoinTimeout     time.Duration
	work, out, label  string
	serverFlags       []string
	skip              []string
	// diskCheck: refuse to start (or to grow to the next size) when the
	// work directory's filesystem has less free space than diskEstimate.
	diskCheck bool
}

// The phases --skip can leave out.
var skippable = []string{"load", "raft-snapshot", "restart", "wipe"}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "capacity:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "capacity:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, usage io.Writer) (options, error) {
	var o options
	var sizes, serverFlags, skip string
	fs := flag.NewFlagSet("capacity", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.StringVar(&o.metad, "metad", "", "metad binary to run (default: go build ./cmd/metad into the work directory)")
	fs.StringVar(&sizes, "sizes", "10k,100k,1M", "index-record counts to fill to, ascending, k and M suffixes (up to 100M)")
	fs.IntVar(&o.streams, "streams", 1000, "streams the records are spread over (1..1M; never more than records)")
	fs.Float64Var(&o.trim, "trim", 0, "after each size, trim every stream's oldest fraction of offsets (0: untrimmed; 0..0.99)")
	fs.IntVar(&o.writers, "writers", 8, "concurrent writers of the fill (1..256)")
	fs.IntVar(&o.concurrency, "concurrency", 16, "workers of the resolve and commit-append runs")
	fs.Uint64Var(&o.resolveWindow, "resolve-window", 0, "resolve only the first N live offsets of each stream (a working set, and so a set of objects to pin, that stays the same as the state grows); 0: any live offset")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured time of each load run")
	fs.DurationVar(&o.warmup, "warmup", 2*time.Second, "warm-up of each load run")
	fs.Uint64Var(&o.snapshotThreshold, "snapshot-threshold", 1024, "the servers' --raft-snapshot-threshold (log entries between raft snapshots)")
	fs.DurationVar(&o.snapshotInterval, "snapshot-interval", 0, "the servers' --raft-snapshot-interval (0: theirs, 2m); shorter waits less for raft snapshots but lets them fall into the load runs")
	fs.DurationVar(&o.snapshotWait, "snapshot-wait", 6*time.Minute, "how long to wait at each size for the leader's raft snapshot to cover the fill (raft checks every 2-4 min); 0 skips")
	fs.DurationVar(&o.rejoinTimeout, "rejoin-timeout", 30*time.Minute, "how long a restarted or wiped follower may take to serve")
	fs.StringVar(&o.work, "work", "", "directory for the servers' data, logs and the JSON (default: a new temporary one, kept)")
	fs.StringVar(&o.out, "out", "", "the JSON results file (default WORK/capacity.json)")
	fs.StringVar(&o.label, "label", "", "what this run is, kept in the JSON")
	fs.StringVar(&serverFlags, "server-flags", "", "extra flags for every metad server, space-separated (e.g. --raft-log-store wal)")
	fs.BoolVar(&o.diskCheck, "disk-check", true, "estimate the disk the largest size needs (printed) and stop before any size the work directory's filesystem cannot hold")
	fs.StringVar(&skip, "skip", "", "phases to leave out, comma-separated: "+strings.Join(skippable, ", "))
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var errs []error
	var err error
	if o.sizes, err = parseSizes(sizes); err != nil {
		errs = append(errs, err)
	}
	o.serverFlags = strings.Fields(serverFlags)
	if skip != "" {
		for _, p := range strings.Split(skip, ",") {
			if !slices.Contains(skippable, p) {
				errs = append(errs, fmt.Errorf("--skip %q: want some of %s", p, strings.Join(skippable, ", ")))
			}
			o.skip = append(o.skip, p)
		}
	}
	return o, errors.Join(append(errs, o.validate())...)
}

func (o options) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.streams < 1 || o.streams > 1_000_000 {
		bad("--streams %d: want 1..1000000", o.streams)
	}
	if o.trim < 0 || o.trim > 0.99 {
		bad("--trim %v: want 0..0.99", o.trim)
	}
	if o.writers < 1 || o.writers > 256 {
		bad("--writers %d: want 1..256", o.writers)
	}
	if o.concurrency < 1 || o.concurrency > 1024 {
		bad("--concurrency %d: want 1..1024", o.concurrency)
	}
	if err := (load.Config{Concurrency: o.concurrency, Duration: o.duration, Warmup: o.warmup}).Validate(); err != nil {
		bad("--duration/--warmup: %v", err)
	}
	if o.snapshotThreshold < 1 {
		bad("--snapshot-threshold %d: want at least 1", o.snapshotThreshold)
	}
	if o.snapshotInterval < 0 {
		bad("--snapshot-interval %v: want >= 0", o.snapshotInterval)
	}
	if o.snapshotWait < 0 || o.rejoinTimeout <= 0 {
		bad("--snapshot-wait %v, --rejoin-timeout %v: want >= 0 and > 0", o.snapshotWait, o.rejoinTimeout)
	}
	return errors.Join(errs...)
}

func (o options) skipped(phase string) bool { return slices.Contains(o.skip, phase) }

// run builds or takes the server, starts the cluster, and measures every
// size in turn, writing the JSON after each so that a long run stopped
// halfway keeps what it measured.
func run(ctx context.Context, o options, stdout, stderr io.Writer) error {
	began := clock.Real.Now()
	if o.work == "" {
		dir, err := os.MkdirTemp("", "metad-capacity.")
		if err != nil {
			return err
		}
		o.work = dir
	}
	if err := os.MkdirAll(o.work, 0o755); err != nil {
		return err
	}
	if o.out == "" {
		o.out = filepath.Join(o.work, "capacity.json")
	}
	b := &bench{o: o, out: stderr}
	b.say("work directory %s", o.work)
	bin, err := b.binary()
	if err != nil {
		return err
	}
	largest := o.sizes[len(o.sizes)-1]
	model := diskModelOf(bin)
	estimate := diskEstimate(model, largest, clusterSize, trailingLogs(o.serverFlags))
	free, err := freeBytes(o.work)
	if err != nil {
		return err
	}
	b.say("disk: %s records need an estimated %s for %d servers whose %s (doc.go, Disk); %s free in %s",
		count(int64(largest)), bytesIEC(estimate), clusterSize, model, bytesIEC(free), o.work)
	if o.diskCheck {
		if err := checkDisk(free, estimate, 0, largest); err != nil {
			return err
		}
	}
	b.estimate = estimate
	serverFlags := []string{"--raft-snapshot-threshold", strconv.FormatUint(o.snapshotThreshold, 10)}
	if o.snapshotInterval > 0 {
		serverFlags = append(serverFlags, "--raft-snapshot-interval", o.snapshotInterval.String())
	}
	serverFlags = append(serverFlags, o.serverFlags...)
	if b.cl, err = newCluster(bin, o.work, clusterSize, serverFlags); err != nil {
		return err
	}
	defer b.cl.killAll()
	if b.c, err = client.New(client.Config{Addrs: b.cl.grpcAddrs(), Timeout: callTimeout, Holder: "metad-capacity"}); err != nil {
		return err
	}
	defer b.c.Close()
	rep := &Report{Label: o.label, Commit: commit(), Machine: machine(), DiskEstimateBytes: estimate, DiskFreeBytes: free, Settings: Settings{
		Streams: o.streams, Trim: o.trim, Writers: o.writers, Concurrency: o.concurrency, ResolveWindow: o.resolveWindow,
		DurationSeconds: o.duration.Seconds(), SnapshotThreshold: o.snapshotThreshold,
		SnapshotIntervalSeconds: o.snapshotInterval.Seconds(), ServerFlags: o.serverFlags}}
	if err := b.startCluster(ctx, rep); err != nil {
		return err
	}
	b.f = &filler{c: b.c, prefix: fmt.Sprintf("cap%04x", rand.Uint32()&0xffff), maxStreams: o.streams, log: stderr}
	prev := 0
	for step, size := range o.sizes {
		sr, err := b.measureSize(ctx, step+1, prev, size, rep.Empty)
		if sr != nil {
			rep.Sizes = append(rep.Sizes, *sr)
		}
		rep.WallSeconds = clock.Since(clock.Real, began).Seconds()
		if werr := writeReport(o.out, rep); werr != nil {
			return werr
		}
		if err != nil {
			return fmt.Errorf("at %d records: %w (partial results in %s)", size, err, o.out)
		}
		prev = size
	}
	writeTables(stdout, rep)
	b.say("results in %s; servers' data and logs in %s (wall time %s)", o.out, o.work, clock.Since(clock.Real, began).Round(time.Second))
	return nil
}

// binary returns --metad, or builds cmd/metad of the module the tool is
// run from.
func (b *bench) binary() (string, error) {
	if b.o.metad != "" {
		return b.o.metad, nil
	}
	bin := filepath.Join(b.o.work, "metad")
	b.say("building cmd/metad into %s", bin)
	cmd := exec.Command("go", "build", "-o", bin, "github.com/metad/metad/cmd/metad")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/metad: %w\n%s", err, out)
	}
	return bin, nil
}

// startCluster starts the three servers, waits until they form a cluster
// and records their memory with no state.
func (b *bench) startCluster(ctx context.Context, rep *Report) error {
	for i := range b.cl.nodes {
		if err := b.cl.start(i); err != nil {
			return err
		}
	}
	if err := b.cl.waitFormed(ctx, b.c, 2*time.Minute); err != nil {
		return err
	}
	if m, err := b.cl.metrics(0); err == nil {
		rep.Settings.LogStore = logStore(m)
	}
	var err error
	rep.Empty, err = b.memory(ctx)
	b.say("cluster formed: %s", describeMemory(rep.Empty))
	return err
}

// measureSize fills the state to size records and measures it. It
// returns what it measured even when a phase fails.
func (b *bench) measureSize(ctx context.Context, step, prev, size int, empty []NodeMemory) (*SizeResult, error) {
	sr := &SizeResult{Records: int64(size), Phases: map[string]float64{}}
	phase := func(name string, fn func() error) error {
		start := clock.Real.Now()
		b.say("%d records: %s", size, name)
		err := fn()
		sr.Phases[name] = clock.Since(clock.Real, start).Seconds()
		return err
	}
	var leader int
	var before snapCounts
	if err := b.checkDiskBefore(size); err != nil {
		return nil, err
	}
	err := phase("fill", func() error {
		live, err := b.f.fillStep(ctx, step, prev, size, b.o.writers, b.o.trim)
		sr.LiveRecords, sr.Streams = live, len(b.f.streams)
		return err
	})
	sr.FillRecordsPerSecond = float64(size-prev) / sr.Phases["fill"]
	if err != nil {
		return sr, err
	}
	err = phase("memory", func() error {
		var err error
		if leader, err = b.cl.leader(ctx, b.c); err != nil {
			return err
		}
		commit, _ := b.gauge(leader, "metad_raft_commit_index")
		sr.RaftIndex = uint64(commit)
		before = b.snapCounts(leader)
		if sr.Memory, err = b.memory(ctx); err != nil {
			return err
		}
		if lm, e, ok := leaderMemory(sr.Memory, empty); ok {
			sr.BytesPerRecord = bytesPerRecord(lm.RSSBytes, e.RSSBytes, sr.LiveRecords)
			sr.HeapBytesPerRecord = bytesPerRecord(lm.HeapBytes, e.HeapBytes, sr.LiveRecords)
		}
		sr.MemAvailableBytes = memAvailable()
		b.say("%s; %.0f B/record (RSS), %.0f B/record (live heap)", describeMemory(sr.Memory), sr.BytesPerRecord, sr.HeapBytesPerRecord)
		return nil
	})
	if err != nil {
		return sr, err
	}
	if err := phase("checkpoint", func() (err error) {
		sr.Checkpoint, err = b.checkpoint(ctx, leader)
		return err
	}); err != nil {
		return sr, err
	}
	if !b.o.skipped("load") {
		if err := phase("load", func() error { return b.loads(ctx, sr, leader) }); err != nil {
			return sr, err
		}
	}
	if !b.o.skipped("raft-snapshot") {
		_ = phase("raft-snapshot", func() error {
			sr.RaftSnapshot = b.waitRaftSnapshot(ctx, leader, sr.RaftIndex, before)
			return nil
		})
	}
	if err := b.rejoins(ctx, sr, phase, empty); err != nil {
		return sr, err
	}
	return sr, phase("disk", func() error { return b.disk(ctx, sr) })
}

// clusterSize is the servers the tool runs.
const clusterSize = 3

// checkDiskBefore fails, with --disk-check, when the free space left is
// less than what the estimate for the largest size still needs beyond what
// the servers' data dirs hold now, before the fill to size starts.
func (b *bench) checkDiskBefore(size int) error {
	if !b.o.diskCheck {
		return nil
	}
	free, err := freeBytes(b.o.work)
	if err != nil {
		return err
	}
	var used int64
	for _, nd := range b.cl.nodes {
		used += dirBytes(nd.dataDir)
	}
	if err := checkDisk(free, b.estimate, used, b.o.sizes[len(b.o.sizes)-1]); err != nil {
		return fmt.Errorf("before the fill to %s: %w", count(int64(size)), err)
	}
	return nil
}

// disk measures every node's data dir and the leader's per record.
func (b *bench) disk(ctx context.Context, sr *SizeResult) error {
	leader, err := b.cl.leader(ctx, b.c)
	if err != nil {
		return err
	}
	sr.Disk = nil
	for i := range b.cl.nodes {
		sr.Disk = append(sr.Disk, b.cl.nodeDisk(i))
	}
	sr.StateDiskBytesPerRecord, sr.DataDirBytesPerRecord = diskPerRecord(sr.Disk, b.cl.nodes[leader].id, sr.LiveRecords)
	var parts []string
	for _, d := range sr.Disk {
		state := "-"
		if d.StateBytes > 0 {
			state = fmt.Sprintf("%s, %s live by its metrics", bytesIEC(d.StateDirBytes), bytesIEC(d.StateBytes))
		}
		parts = append(parts, fmt.Sprintf("%s data dir %s (raft log %s, snapshots %s, state store %s)",
			d.Node, bytesIEC(d.DataDirBytes), bytesIEC(d.RaftLogBytes), bytesIEC(d.SnapshotBytes), state))
	}
	b.say("%s; leader %.0f B/record (data dir), %.0f B/record (state store; 0: not reported)",
		strings.Join(parts, ", "), sr.DataDirBytesPerRecord, sr.StateDiskBytesPerRecord)
	return nil
}

// loads runs resolve and commit-append, steady and while checkpoints are
// streamed.
func (b *bench) loads(ctx context.Context, sr *SizeResult, leader int) error {
	sr.Load = map[string]*Load{}
	for _, run := range []struct {
		key    string
		op     load.Op
		during bool
	}{
		{loadResolve, b.resolveOnce, false},
		{loadAppend, b.appendOnce, false},
		{loadResolveDuring, b.resolveOnce, true},
		{loadAppendDuring, b.appendOnce, true},
	} {
		if run.key == loadAppend || run.key == loadAppendDuring {
			if err := b.makeAppenders(ctx); err != nil {
				return err
			}
		}
		l, err := b.runLoad(ctx, run.op, leader, run.during)
		if err != nil {
			return fmt.Errorf("%s: %w", run.key, err)
		}
		sr.Load[run.key] = l
		b.say("  %s: %.0f/s p50 %.2f ms p99 %.2f ms, errors %v, checkpoints %d (%d failed), raft snapshots %d, leader lost %v, cache hits %s",
			run.key, l.Throughput, l.P50Ms, l.P99Ms, l.Errors, l.Checkpoints, l.CheckpointErrors, l.RaftSnapshots, l.LeaderLost, hitRatio(l.Cache))
		if run.key == loadAppend || run.key == loadAppendDuring {
			if err := b.trimAppenders(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// rejoins restarts one follower and wipes another.
func (b *bench) rejoins(ctx context.Context, sr *SizeResult, phase func(string, func() error) error, empty []NodeMemory) error {
	for _, wipe := range []bool{false, true} {
		name := "restart"
		if wipe {
			name = "wipe"
		}
		if b.o.skipped(name) {
			continue
		}
		err := phase(name, func() error {
			leader, err := b.cl.leader(ctx, b.c)
			if err != nil {
				return err
			}
			f := b.follower(leader, wipe)
			r, err := b.rejoin(ctx, f, leader, wipe)
			if err != nil {
				return err
			}
			if wipe {
				sr.Wiped = r
			} else {
				sr.Restart = r
			}
			b.say("  %s: %s served after %.2fs (restore %.2fs, from snapshot %v, InstallSnapshot %v)",
				name, r.Node, r.ServingSeconds, r.RestoreMs/1000, r.FromSnapshot, r.InstallSnapshot)
			if l := r.Commit; l != nil {
				b.say("  commit-append while %s caught up: %d ops, %.0f/s p50 %.2f ms p99 %.2f ms, errors %v",
					r.Node, l.Ops, l.Throughput, l.P50Ms, l.P99Ms, l.Errors)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	if sr.Wiped == nil {
		return nil
	}
	mem, err := b.memory(ctx)
	if err != nil {
		return err
	}
	sr.MemoryAfterRejoin = mem
	if m, ok := nodeMemory(mem, sr.Wiped.Node); ok {
		if e, ok := nodeMemory(empty, sr.Wiped.Node); ok {
			sr.RestoredBytesPerRecord = bytesPerRecord(m.RSSBytes, e.RSSBytes, sr.LiveRecords)
			sr.RestoredHeapBytesPerRecord = bytesPerRecord(m.HeapBytes, e.HeapBytes, sr.LiveRecords)
		}
	}
	return nil
}

// follower picks the follower to restart (the first) or to wipe (the
// last), so the two are different nodes.
func (b *bench) follower(leader int, last bool) int {
	var fs []int
	for i := range b.cl.nodes {
		if i != leader {
			fs = append(fs, i)
		}
	}
	if last {
		return fs[len(fs)-1]
	}
	return fs[0]
}

func describeMemory(mem []NodeMemory) string {
	var parts []string
	for _, m := range mem {
		parts = append(parts, fmt.Sprintf("%s (%s) RSS %s MiB heap %s MiB", m.Node, m.Role, mib(m.RSSBytes), mib(m.HeapBytes)))
	}
	return strings.Join(parts, ", ")
}

// logStore names the raft log store a node's metrics report
// (metad_raft_log_store{store="wal"} 1).
func logStore(metrics map[string]float64) string {
	const prefix = `metad_raft_log_store{store="`
	for k, v := range metrics {
		if rest, ok := strings.CutPrefix(k, prefix); ok && v == 1 {
			return strings.TrimSuffix(rest, `"}`)
		}
	}
	return "unknown"
}

// commit names the checkout the tool runs in.
func commit() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if name, ok := strings.CutPrefix(line, "model name"); ok {
				model = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(name), ":"))
				break
			}
		}
	}
	total := int64(0)
	if f, err := os.Open("/proc/meminfo"); err == nil {
		fields, _ := kBFields(f, "MemTotal:")
		total = fields["MemTotal:"]
		f.Close()
	}
	return fmt.Sprintf("%d cores, %s, %.1f GiB memory", runtime.NumCPU(), model, float64(total)/(1<<30))
}
