package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/jepsen/cluster"
	"github.com/metad/metad/jepsen/nemesis"
	"github.com/metad/metad/jepsen/report"
	"github.com/metad/metad/jepsen/workload"
)

// options are the command line.
type options struct {
	nodes     int
	nemesis   string
	profile   string
	timeLimit time.Duration
	seed      int64
	matrix    string
	bugs      string
	streams   int
	readers   int
	watchers  int
	longHold  time.Duration
	minOps    int
	out       string
	keep      bool
	verbose   bool
	checkTO   time.Duration
	binary    string
	tls       bool
	store     string
	falseReps int
}

func main() {
	var o options
	flag.IntVar(&o.nodes, "nodes", 3, "servers: 3 or 5")
	flag.StringVar(&o.nemesis, "nemesis", "partition,kill,pause", "faults, comma-separated: "+strings.Join(slices.Concat(nemesis.AllKinds, nemesis.MembershipKinds, nemesis.StoreKinds), ", ")+", or none")
	flag.StringVar(&o.profile, "workload", workload.ProfileStream, "workload: stream, resolve, append, replace, reupload or streamset")
	flag.DurationVar(&o.timeLimit, "time-limit", 60*time.Second, "length of each run (faults, then recovery)")
	flag.Int64Var(&o.seed, "seed", 0, "seed of the fault schedule and the clients' choices (0: from the clock)")
	flag.StringVar(&o.matrix, "matrix", "", "smoke or full: run every nemesis x workload cell")
	flag.StringVar(&o.bugs, "bugs", "", "planted bugs to switch on (METAD_FAULTS): stale-read, skip-recheck, cross-view, lose-append, diverge-NODE, heartbeat-fast-path, accept-old-incarnation, half-object")
	flag.IntVar(&o.streams, "streams", 6, "streams (one writer each; the streamset workload runs at least 50)")
	flag.IntVar(&o.readers, "readers", 4, "reading clients")
	flag.IntVar(&o.watchers, "watchers", 3, "watching clients in the stream and streamset workloads (each follows 2 streams with Watch, 4 in streamset)")
	flag.DurationVar(&o.longHold, "long-hold", 30*time.Second, "how long a long-partition fault keeps its node cut off")
	flag.IntVar(&o.minOps, "min-ops", 20, "successful operations required before each fault for a valid run")
	flag.StringVar(&o.out, "out", filepath.Join("jepsen", "runs"), "directory for run reports")
	flag.BoolVar(&o.keep, "keep", false, "keep data directories and objects after a run")
	flag.BoolVar(&o.verbose, "v", false, "log every fault and server start")
	flag.DurationVar(&o.checkTO, "check-timeout", 2*time.Minute, "bound on the linearizability check")
	flag.StringVar(&o.binary, "binary", "", "metad binary built with -tags metad_faults (default: build it)")
	flag.BoolVar(&o.tls, "tls", false, "run the cluster with mutual TLS on every channel; the harness's clients use an operator certificate")
	flag.StringVar(&o.store, "store", cluster.StoreLocal, "object store: local (a shared directory) or s3 (a versioned bucket in SeaweedFS weed mini, started by the harness); the store nemeses are "+strings.Join(nemesis.StoreKinds, ", "))
	flag.IntVar(&o.falseReps, "false-reports", 0, "clients that report healthy candidates as broken (CORRUPT, OBJECT_MISSING, IDENTITY_MISMATCH): none may be confirmed")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	passed, err := run(ctx, o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jepsen:", err)
		os.Exit(2)
	}
	if !passed {
		os.Exit(1)
	}
}

// cell is one run of a matrix.
type cell struct {
	nemesis []string
	profile string
}

// matrixCells lists a matrix's runs: every nemesis with every workload.
func matrixCells(name string) ([]cell, error) {
	kinds := map[string][]string{
		"smoke": {nemesis.Partition, nemesis.Kill, nemesis.Pause, nemesis.LeaderPause, nemesis.Membership},
		"full":  nemesis.AllKinds,
	}[name]
	if kinds == nil {
		return nil, fmt.Errorf("matrix %q: want smoke or full", name)
	}
	var out []cell
	for _, k := range kinds {
		for _, p := range workload.Profiles {
			out = append(out, cell{nemesis: []string{k}, profile: p})
		}
	}
	return out, nil
}

func run(ctx context.Context, o options, stdout io.Writer) (bool, error) {
	if o.seed == 0 {
		o.seed = clock.Real.Now().UnixNano() % 1_000_000
	}
	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	cells := []cell{{profile: o.profile}}
	var err error
	if cells[0].nemesis, err = nemesis.ParseKinds(o.nemesis); err != nil {
		return false, err
	}
	if err := checkStoreFlags(o, cells[0].nemesis); err != nil {
		return false, err
	}
	if o.matrix != "" {
		if cells, err = matrixCells(o.matrix); err != nil {
			return false, err
		}
	}
	if err := checkDiskFlags(cells, os.Geteuid()); err != nil {
		return false, err
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return false, err
	}
	bin := o.binary
	if bin == "" {
		binDir, err := os.MkdirTemp(o.out, "bin-")
		if err != nil {
			return false, err
		}
		defer os.RemoveAll(binDir)
		if bin, err = cluster.Build(ctx, binDir); err != nil {
			return false, err
		}
	}
	stamp := clock.Real.Now().Format("20060102-150405")
	all := true
	var results []report.Result
	for i, c := range cells {
		name := fmt.Sprintf("%s-%s-%s-n%d", stamp, strings.Join(append([]string{"none"}, c.nemesis...)[min(1, len(c.nemesis)):], "+"), c.profile, o.nodes)
		cfg := RunConfig{Name: name, Dir: filepath.Join(o.out, name), Binary: bin, Nodes: o.nodes, Nemesis: c.nemesis,
			Profile: c.profile, TimeLimit: o.timeLimit, Seed: o.seed + int64(i), Bugs: o.bugs, Streams: o.streams,
			Readers: o.readers, Watchers: o.watchers, LongHold: o.longHold, MinOps: o.minOps, CheckTimeout: o.checkTO, Keep: o.keep, Log: log, TLS: o.tls,
			Store: o.store, FalseReports: o.falseReps}
		fmt.Fprintf(stdout, "== run %d/%d: %s (seed %d; replay: go run ./jepsen --nodes %d --nemesis %s --workload %s --time-limit %s --seed %d%s%s)\n",
			i+1, len(cells), name, cfg.Seed, o.nodes, strings.Join(append(c.nemesis, "none")[:max(1, len(c.nemesis))], ","), c.profile, o.timeLimit, cfg.Seed, bugsFlag(o.bugs), tlsFlag(o.tls)+storeFlags(o)+longHoldFlag(o.longHold))
		res, err := Run(ctx, cfg)
		if err != nil {
			return false, fmt.Errorf("run %s: %w", name, err)
		}
		fmt.Fprint(stdout, res.Text(cfg.Dir))
		results = append(results, res)
		all = all && res.Passed
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
	}
	if len(results) > 1 {
		fmt.Fprintln(stdout, "\n== matrix summary")
		for _, r := range results {
			fmt.Fprintf(stdout, "%-60s passed=%-5v anomalies=%d invalid=%d ops=%d faults=%d %.0fs\n", r.Name, r.Passed,
				len(r.Anomalies), len(r.Invalid), okOps(r), len(r.Faults), r.Seconds)
		}
	}
	return all, nil
}

func bugsFlag(b string) string {
	if b == "" {
		return ""
	}
	return " --bugs " + b
}

func okOps(r report.Result) int {
	n := 0
	for _, m := range r.Ops {
		n += m["ok"]
	}
	return n
}

func tlsFlag(on bool) string {
	if on {
		return " --tls"
	}
	return ""
}

func longHoldFlag(d time.Duration) string {
	if d == 30*time.Second {
		return ""
	}
	return " --long-hold " + d.String()
}

// checkStoreFlags refuses what the object store cannot do: a nemesis that
// stops the store needs --store s3.
func checkStoreFlags(o options, kinds []string) error {
	if o.store != cluster.StoreLocal && o.store != cluster.StoreS3 {
		return fmt.Errorf("--store %q: want %s or %s", o.store, cluster.StoreLocal, cluster.StoreS3)
	}
	if o.falseReps < 0 || o.falseReps > 16 {
		return fmt.Errorf("--false-reports %d: want 0 to 16", o.falseReps)
	}
	for _, k := range kinds {
		if nemesis.NeedsS3(k) && o.store != cluster.StoreS3 {
			return fmt.Errorf("--nemesis %s needs --store s3 (the local store cannot be stopped like a server)", k)
		}
	}
	return nil
}

func storeFlags(o options) string {
	s := ""
	if o.store != cluster.StoreLocal {
		s += " --store " + o.store
	}
	if o.falseReps > 0 {
		s += fmt.Sprintf(" --false-reports %d", o.falseReps)
	}
	return s
}

// checkDiskFlags refuses the disk-full nemesis (in any cell) unless the
// harness runs as root, and the disk-error and lose-unsynced nemeses
// unless it also has /dev/fuse: they mount a filesystem for each node's data dir,
// and a run that skipped the fault would pass having tested nothing.
func checkDiskFlags(cells []cell, euid int) error {
	for _, c := range cells {
		if nemesis.NeedsOwnDisks(c.nemesis) && euid != 0 {
			return fmt.Errorf("could not run: --nemesis %s mounts a %d MiB tmpfs for each node's data dir, which needs root (running as uid %d)",
				nemesis.DiskFull, nemesis.DiskSize>>20, euid)
		}
		if nemesis.NeedsFaultFS(c.nemesis) {
			if err := fuseOK(euid); err != nil {
				return fmt.Errorf("could not run: --nemesis %s puts each node's data dir on a fault filesystem served by the harness: %w",
					strings.Join(c.nemesis, ","), err)
			}
		}
	}
	return nil
}

// fuseOK reports why fault filesystems cannot be mounted (a variable:
// tests stand in for /dev/fuse).
var fuseOK = cluster.CheckFUSE
