package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/metad/metad/client"
	"github.com/metad/metad/clock"
	"github.com/metad/metad/jepsen/cluster"
	"github.com/metad/metad/jepsen/history"
	"github.com/metad/metad/jepsen/model"
	"github.com/metad/metad/jepsen/nemesis"
	"github.com/metad/metad/jepsen/report"
	"github.com/metad/metad/jepsen/workload"
)

// RunConfig is one run: a cluster, a workload, a fault schedule.
type RunConfig struct {
	Name      string
	Dir       string // the run's report directory
	Binary    string
	Nodes     int
	Nemesis   []string
	Profile   string
	TimeLimit time.Duration
	Seed      int64
	// Bugs is METAD_FAULTS: planted bugs to switch on.
	Bugs    string
	Streams int
	Readers int
	// Watchers follow streams with Watch (stream workload only).
	Watchers int
	// LongHold is how long a long-partition fault holds (0: its default).
	LongHold time.Duration
	// MinOps: successful operations required before each fault.
	MinOps int
	// CheckTimeout bounds porcupine.
	CheckTimeout time.Duration
	// Keep leaves data directories and objects behind.
	Keep bool
	// TLS runs the cluster with mutual TLS.
	TLS bool
	// Store is the object store: cluster.StoreLocal (default) or StoreS3.
	Store string
	// FalseReports is the number of false-reporting clients.
	FalseReports int
	// NoSettle leaves a write whose outcome is unknown indeterminate, as
	// the workload did before it settled them (workload.Config's
	// SettleTimeout): the planted-bug runs, calibrated on that workload,
	// keep it. A writer that settles waits up to 20 s and makes fewer
	// writes in a 15 s run, and stale-read once went unseen so in CI.
	NoSettle bool
	// UncheckedReads plants a harness bug: readers skip the data checksum
	// (planted_test.go).
	UncheckedReads bool
	Log            *slog.Logger
}

// Validate reports every problem at once.
func (c RunConfig) Validate() error {
	var errs []error
	if c.Nodes != 3 && c.Nodes != 5 {
		errs = append(errs, fmt.Errorf("nodes %d: want 3 or 5", c.Nodes))
	}
	if c.TimeLimit < 10*time.Second {
		errs = append(errs, fmt.Errorf("time-limit %s: at least 10s", c.TimeLimit))
	}
	if c.Dir == "" || c.Binary == "" || c.Log == nil {
		errs = append(errs, errors.New("run: Dir, Binary and Log are required"))
	}
	return errors.Join(errs...)
}

// Phases of a run's time limit.
const (
	warmup   = 3 * time.Second
	recovery = 8 * time.Second
)

// healWait is how long the end of a run waits, polling, for quarantine to
// heal: one --repair-scan-interval (2s) of the servers plus a margin for
// the leader's scan to reach every record and commit the lifts.
const healWait = 2*time.Second + 10*time.Second

// serverFlags are the timings every server runs with: short GC and repair
// intervals so objects are collected and records repaired within a run.
// The removal policy is the default (--dead-server-timeout in hours): the
// long-partition nemesis checks that a partitioned node is not removed.
var serverFlags = []string{"--pin-ttl", "10s", "--gc-interval", "500ms",
	"--gc-min-idle", "2s", "--repair-scan-interval", "2s"}

// Run performs one run and writes its report; the result says whether it
// passed.
func Run(ctx context.Context, cfg RunConfig) (report.Result, error) {
	if err := cfg.Validate(); err != nil {
		return report.Result{}, err
	}
	start := clock.Real.Now()
	ccfg := cluster.Config{Binary: cfg.Binary, Dir: filepath.Join(cfg.Dir, "cluster"), Nodes: cfg.Nodes,
		Faults: cfg.Bugs, Extra: serverFlags, TLS: cfg.TLS, Store: cfg.Store}
	if nemesis.NeedsOwnDisks(cfg.Nemesis) {
		// Each data dir on its own small filesystem, and a reserve the
		// nemesis's ballast can take the free space below.
		ccfg.DiskSize = nemesis.DiskSize
		ccfg.Extra = append(slices.Clone(serverFlags), "--disk-reserve", fmt.Sprint(nemesis.DiskReserve))
	}
	// Each data dir on its own fault filesystem, served by this process.
	ccfg.FaultFS = nemesis.NeedsFaultFS(cfg.Nemesis)
	cl, err := cluster.New(ccfg)
	if err != nil {
		return report.Result{}, err
	}
	defer func() {
		// Always, on failure too: the nodes stop and their filesystems
		// are unmounted (lazily if busy).
		if err := cl.Close(); err != nil {
			cfg.Log.Error("closing the cluster", "err", err)
		}
	}()
	if err := cl.StartAll(); err != nil {
		return report.Result{}, err
	}
	rec := history.NewRecorder()
	wl, closeClient, err := setup(ctx, cfg, cl, rec)
	if err != nil {
		return report.Result{}, err
	}
	defer closeClient()
	steps := nemesis.PlanWith(cfg.Seed, cfg.Nemesis, cfg.Nodes, cfg.TimeLimit-warmup, nemesis.Options{LongHold: cfg.LongHold})
	for _, s := range steps {
		cfg.Log.Info("planned", "step", s.String())
	}
	finalHeal := drive(ctx, cfg, cl, rec, wl, steps)
	phase := clock.Real.Now()
	rctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	q := wl.DrainQuarantine(rctx, clock.Real.Now().Add(healWait))
	cfg.Log.Info("quarantine drained", "took", clock.Since(clock.Real, phase), "status", q.Status, "left", quarantinedLeft(q))
	wl.ReadBack(rctx)
	cancel()
	cfg.Log.Info("read back", "took", clock.Since(clock.Real, phase))
	phase = clock.Real.Now()
	conv := converge(ctx, cl, 60*time.Second)
	cfg.Log.Info("converged", "took", clock.Since(clock.Real, phase), "ok", conv.Converged)
	if !conv.Converged {
		// Say whether a live state left its log or the logs differ, and
		// where; the data directories stay as evidence.
		conv.Detail += "; " + explainDivergence(ctx, cfg, cl)
		cfg.Keep = true
	}
	phase = clock.Real.Now()
	h := rec.History()
	if err := report.WriteHistory(cfg.Dir, h); err != nil {
		return report.Result{}, err
	}
	res := check(cfg, h, conv, finalHeal, len(steps))
	if crashed := crashes(cl); len(crashed) > 0 {
		res.Anomalies = append(res.Anomalies, crashed...)
		res.Passed = false
	}
	cfg.Log.Info("checked", "took", clock.Since(clock.Real, phase), "ops", len(h.Ops))
	res.Seconds = clock.Since(clock.Real, start).Seconds()
	if err := report.Write(cfg.Dir, h, res); err != nil {
		return res, err
	}
	if cfg.Keep && cl.OwnDisks() {
		// The data dirs live on filesystems Close unmounts.
		for i := range cl.Nodes {
			cl.Kill(i)
		}
		if err := cl.SaveDisks(); err != nil {
			cfg.Log.Error("keeping the data dirs", "err", err)
		}
	}
	if !cfg.Keep {
		cfg.cleanup(cl)
	}
	return res, nil
}

// setup waits for the cluster and creates the workload's streams. The
// returned func closes the workload's balancing client.
func setup(ctx context.Context, cfg RunConfig, cl *cluster.Cluster, rec *history.Recorder) (*workload.Workload, func(), error) {
	objs, err := cl.Store.Open(ctx)
	if err != nil {
		return nil, nil, err
	}
	var clients []*client.Client
	var ids, addrs []string
	for i, n := range cl.Nodes {
		clients, ids, addrs = append(clients, cl.Client(i)), append(ids, n.ID), append(addrs, n.GRPC)
	}
	all, err := client.New(cl.ClientConfig(addrs))
	if err != nil {
		return nil, nil, err
	}
	bcfg := cl.ClientConfig(addrs)
	bcfg.Objects, bcfg.Holder = objs, "jepsen-broker"
	broker, err := client.New(bcfg) // client.Read, as a broker reads
	if err != nil {
		all.Close()
		return nil, nil, err
	}
	var bound []*client.Client // one per node, never routed to the leader: for watchers
	closeAll := func() {
		all.Close()
		broker.Close()
		for _, c := range bound {
			c.Close()
		}
	}
	for _, addr := range addrs {
		ccfg := cl.ClientConfig([]string{addr})
		ccfg.SpreadCalls = true
		c, err := client.New(ccfg)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		bound = append(bound, c)
	}
	level := featureLevel(ctx, cl, 30*time.Second)
	rec.SetLevel(level)
	cfg.Log.Info("cluster feature level", "level", level)
	wl, err := workload.New(workload.Config{Profile: cfg.Profile, Streams: cfg.Streams, Readers: cfg.Readers, Level: level,
		Watchers: cfg.Watchers, WatchClients: bound,
		OpTimeout: 3 * time.Second, Seed: cfg.Seed, Clients: clients, NodeIDs: ids, All: all, Objects: objs, Broker: broker, Rec: rec, Log: cfg.Log,
		FalseReports: cfg.FalseReports, HealWait: healWait, UncheckedReads: cfg.UncheckedReads, SettleTimeout: settleTimeout(cfg.NoSettle)})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := wl.Setup(sctx, fmt.Sprintf("%s-%d", cfg.Name, cfg.Seed)); err != nil {
		closeAll()
		return nil, nil, fmt.Errorf("setup (cluster did not serve within 60s; logs in %s): %w", cl.Nodes[0].LogPath, err)
	}
	return wl, closeAll, nil
}

// featureLevel is the cluster's feature level once the leader has raised
// it to what every server applies (a fresh cluster may start lower and be
// raised within its first seconds), or the last level seen when the wait
// ends; 0 if no node answered. The model's rules for object versions and
// data checksums change at history.VersionsLevel.
func featureLevel(ctx context.Context, cl *cluster.Cluster, wait time.Duration) uint32 {
	var last uint32
	deadline := clock.Real.Now().Add(wait)
	for clock.Real.Now().Before(deadline) {
		for i := range cl.Nodes {
			st, err := cl.Status(ctx, i, false)
			if err != nil || st.LeaderId == "" {
				continue
			}
			lowest := ^uint32(0)
			for _, n := range st.Nodes {
				if n.Error == "" {
					lowest = min(lowest, max(n.FeatureLevel, 1))
				}
			}
			last = max(st.ClusterFeatureLevel, 1)
			if last >= lowest {
				return last
			}
			break
		}
		if sleepCtx(ctx, 250*time.Millisecond) != nil {
			break
		}
	}
	return last
}

// drive runs the workload for the time limit while the nemesis injects
// the schedule, then heals everything and lets the workload run on for at
// least the recovery period. It returns when the final heal happened.
func drive(ctx context.Context, cfg RunConfig, cl *cluster.Cluster, rec *history.Recorder, wl *workload.Workload, steps []nemesis.Step) int64 {
	deadline := clock.Real.Now().Add(cfg.TimeLimit)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); wl.Run(wctx) }()
	nem := &nemesis.Runner{Cluster: cl, Recorder: rec, Workload: wl, Objects: wl, Log: cfg.Log, MinOps: cfg.MinOps, MaxWait: 20 * time.Second}
	nctx, ncancel := context.WithDeadline(ctx, deadline)
	if sleepCtx(nctx, warmup) == nil {
		nem.Run(nctx, steps, deadline)
	}
	ncancel()
	healAll(context.WithoutCancel(ctx), cl)
	finalHeal := clock.Real.Now()
	end := deadline
	if finalHeal.Add(recovery).After(end) {
		end = finalHeal.Add(recovery)
	}
	_ = sleepCtx(ctx, end.Sub(clock.Real.Now()))
	cancel()
	<-done
	return finalHeal.UnixNano()
}

// healAll ends every fault: network healed, disks freed and disarmed, processes
// resumed or restarted, clocks reset, the object store back.
func healAll(ctx context.Context, cl *cluster.Cluster) {
	if err := cl.Store.Heal(); err != nil {
		slog.Error("heal: object store", "err", err)
	}
	if err := cl.FreeAll(); err != nil {
		slog.Error("heal: freeing the disks", "err", err)
	}
	cl.HealNetwork()
	for i := range cl.Nodes {
		if fs := cl.FaultFS(i); fs != nil {
			fs.Heal()
		}
	}
	for i := range cl.Nodes {
		switch {
		case !cl.Running(i):
			_ = cl.Start(i, false)
		case !cl.Up(i):
			cl.Resume(i)
		}
	}
	for i := range cl.Nodes {
		_ = cl.SetClockOffset(ctx, i, 0)
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := clock.Real.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

// converge waits until every node reports the same applied index and
// state hash (replicas compared by hash), or until two report
// the same index with different hashes, which no wait can mend.
func converge(ctx context.Context, cl *cluster.Cluster, timeout time.Duration) report.Convergence {
	start := clock.Real.Now()
	var last string
	for clock.Since(clock.Real, start) < timeout {
		for i := range cl.Nodes {
			st, err := cl.Status(ctx, i, true)
			if err != nil {
				last = err.Error()
				continue
			}
			c, why := report.Converged(st)
			if why == "" || report.Diverged(st) {
				c.Waited, c.Detail = clock.Since(clock.Real, start).Seconds(), why
				return c
			}
			last = why
			break
		}
		if sleepCtx(ctx, 500*time.Millisecond) != nil {
			break
		}
	}
	return report.Convergence{Converged: false, Detail: last}
}

// settleTimeout is the workload's SettleTimeout: its default, or never.
func settleTimeout(noSettle bool) time.Duration {
	if noSettle {
		return -1
	}
	return 0
}

// crashes names every server that died of itself: a Go panic (a broken
// invariant of the state machine, which the harness's servers check as
// they apply, is one) or a fatal runtime error in its log. The nemesis
// kills with SIGKILL, which leaves no such line. A panic carrying the
// server's disk-failure stop (diskStop) is the stop the disk-error
// nemesis demands, not a crash: once a write of the raft log or stable
// store failed, the server refuses every later one, and hashicorp/raft
// panics on a refused write of its term.
// diskStop is what raftstore's DiskWriteError says of the node.
const diskStop = "this node stops and does not retry the write"

func crashes(cl *cluster.Cluster) []model.Anomaly {
	var out []model.Anomaly
	for _, n := range cl.Nodes {
		b, err := os.ReadFile(n.LogPath)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, diskStop) {
				// The node's own stop after a failed write of its raft
				// log or stable store (G17): raft panics when the store it
				// latched refuses the next write, as it must.
				continue
			}
			if strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ") {
				out = append(out, model.Anomaly{Check: "crash", Op: -1, Detail: fmt.Sprintf("%s crashed: %s (log %s)", n.ID, line, n.LogPath)})
				break
			}
		}
	}
	return out
}

// check runs every checker and decides validity.
func check(cfg RunConfig, h history.History, conv report.Convergence, finalHeal int64, planned int) report.Result {
	res := report.Result{Name: cfg.Name, Nodes: cfg.Nodes, Nemesis: cfg.Nemesis, Profile: cfg.Profile, Seed: cfg.Seed,
		Bugs: cfg.Bugs, TimeLimit: cfg.TimeLimit.String(), Convergence: conv}
	lin := model.CheckLinearizable(h, cfg.CheckTimeout)
	res.Linearizable = string(lin.Result)
	res.Anomalies = append(res.Anomalies, lin.Anomalies...)
	res.Anomalies = append(res.Anomalies, model.CheckAll(h)...)
	if !conv.Converged {
		res.Anomalies = append(res.Anomalies, model.Anomaly{Check: "converge", Op: -1, Detail: conv.Detail})
	}
	res.Invalid = report.Validity(h, cfg.MinOps, finalHeal)
	res.Invalid = append(res.Invalid, report.DiskFullValidity(h)...)
	diskAnomalies, diskInvalid := report.DiskChecks(h)
	res.Anomalies = append(res.Anomalies, diskAnomalies...)
	res.Invalid = append(res.Invalid, diskInvalid...)
	if lin.Result == "Unknown" {
		res.Invalid = append(res.Invalid, "linearizability check timed out")
	}
	if planned > 0 && len(h.Faults) == 0 {
		// A run that was to test faults and injected none tested nothing.
		res.Invalid = append(res.Invalid, fmt.Sprintf("the nemesis injected none of its %d planned faults: the time limit left no room for the first", planned))
	}
	res.Lin = lin
	res.Finish(h)
	return res
}

// cleanup removes data directories and objects; logs stay.
func (c RunConfig) cleanup(cl *cluster.Cluster) {
	for _, n := range cl.Nodes {
		_ = os.RemoveAll(n.DataDir)
	}
	_ = os.RemoveAll(cl.Store.DataDir())
}

func quarantinedLeft(op history.Op) int {
	if op.Out == nil {
		return -1
	}
	return len(op.Out.Quarantined)
}
