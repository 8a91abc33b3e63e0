package backup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/raftstore"
)

// Source is where backups come from: raftstore.Store.
type Source interface {
	// Checkpoint takes a consistent copy of the state.
	Checkpoint(ctx context.Context) (*raftstore.Checkpoint, error)
	// ClusterID is the cluster's id ("" before it has one).
	ClusterID() string
}

// ErrNoClusterID: the state has no cluster id yet (the cluster's first
// leader sets it moments after it forms), so a backup cannot be named.
var ErrNoClusterID = errors.New("backup: the cluster has no id yet")

// Scheduler takes the backups. Run it under a leadership context; it is
// safe to Run again for each term, one Run at a time.
type Scheduler struct {
	cfg    Config
	target Target
	src    Source
	log    *slog.Logger
	clock  clock.Clock
	m      *metrics
}

// Option adjusts a Scheduler.
type Option func(*Scheduler)

// WithClock makes the schedule read time and wait through c (default
// clock.Real): node hands it the server's clock, tests a fake one.
func WithClock(c clock.Clock) Option { return func(s *Scheduler) { s.clock = c } }

// New makes a Scheduler for a valid, enabled cfg. reg receives the
// metrics (nil: unregistered).
func New(cfg Config, target Target, src Source, log *slog.Logger, reg prometheus.Registerer, opts ...Option) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, errors.New("backup: not enabled (backup-interval 0)")
	}
	s := &Scheduler{cfg: cfg, target: target, src: src, log: log, clock: clock.Real, m: newMetrics(reg)}
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Run takes a backup every interval until ctx ends, continuing the
// schedule of the newest backup the target holds of this cluster.
func (s *Scheduler) Run(ctx context.Context) {
	start := s.clock.Now()
	newest := s.newestBackup(ctx)
	if newest != nil {
		s.log.Info("backups: continuing the schedule", "target", s.target.String(), "newest", newest.Name, "interval", s.cfg.Interval)
	} else {
		s.log.Info("backups: starting the schedule", "target", s.target.String(), "interval", s.cfg.Interval)
	}
	for {
		now := s.clock.Now()
		timer := s.clock.NewTimer(Due(newest, start, now, s.cfg.Interval).Sub(now))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		}
		attempt := s.clock.Now()
		e, err := s.Once(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			e = Entry{Time: attempt} // the next attempt one interval on
		}
		newest = &e
	}
}

// newestBackup is the newest of this cluster's backups in the target, nil
// if none (or the target cannot be listed now: the schedule then starts
// afresh).
func (s *Scheduler) newestBackup(ctx context.Context) *Entry {
	names, err := s.target.List(ctx)
	if err != nil {
		s.log.Warn("backups: cannot list the target; starting the schedule afresh", "target", s.target.String(), "err", err)
		return nil
	}
	if all := Newest(names, s.src.ClusterID()); len(all) > 0 {
		return &all[0]
	}
	return nil
}

// Once takes one backup now: checkpoint, write, read back and verify,
// prune. It logs and counts the outcome.
func (s *Scheduler) Once(ctx context.Context) (Entry, error) {
	began := s.clock.Now()
	e, v, pruned, err := s.take(ctx)
	if err != nil && ctx.Err() != nil {
		// Leadership ended (or the node stops) mid-backup: not a failure
		// of the backup; the next leader takes one on its schedule. A
		// half-written one never shows under its name.
		s.log.Info("backup abandoned: no longer leading", "target", s.target.String(), "name", e.Name)
		return e, err
	}
	if err != nil {
		s.m.runs.WithLabelValues("failed").Inc()
		s.log.Error("backup failed", "target", s.target.String(), "name", e.Name, "err", err)
		return e, err
	}
	s.m.runs.WithLabelValues("ok").Inc()
	s.m.lastSuccess.Set(float64(e.Time.UnixNano()) / 1e9)
	s.m.lastIndex.Set(float64(e.Index))
	s.m.lastBytes.Set(float64(v.Bytes))
	s.m.pruned.Add(float64(pruned))
	s.log.Info("backup taken", "target", s.target.String(), "name", e.Name, "index", e.Index, "bytes", v.Bytes,
		"records", v.Records, "sha256", v.SHA256, "pruned", pruned, "took", s.clock.Now().Sub(began).Round(time.Millisecond))
	return e, nil
}

func (s *Scheduler) take(ctx context.Context) (e Entry, v Verified, pruned int, err error) {
	cp, err := s.src.Checkpoint(ctx)
	if err != nil {
		return e, v, 0, fmt.Errorf("checkpoint: %w", err)
	}
	defer cp.Close()
	if cp.ClusterID == "" {
		return e, v, 0, ErrNoClusterID
	}
	// Named by the schedule's clock (the wall clock but in tests), which
	// Due reads the names back with.
	taken := s.clock.Now()
	e = Entry{Name: Name(cp.ClusterID, taken, cp.Index), ClusterID: cp.ClusterID, Time: taken.UTC().Truncate(time.Millisecond), Index: cp.Index}
	ref, err := s.target.Put(ctx, e.Name, func(w io.Writer) error { return writeFile(w, cp) })
	if err != nil {
		return e, v, 0, fmt.Errorf("write: %w", err)
	}
	if v, err = s.readBack(ctx, e.Name, ref); err != nil {
		if derr := s.target.Delete(ctx, e.Name); derr != nil {
			err = fmt.Errorf("%w (and deleting it: %w)", err, derr)
		}
		return e, v, 0, fmt.Errorf("verify: %w", err)
	}
	if v.Meta.Index != cp.Index {
		return e, v, 0, fmt.Errorf("verify: read back index %d, wrote %d", v.Meta.Index, cp.Index)
	}
	pruned, err = s.prune(ctx, cp.ClusterID)
	if err != nil {
		// The backup is good; only older ones linger until the next round.
		s.log.Warn("backup: pruning failed", "target", s.target.String(), "err", err)
	}
	return e, v, pruned, nil
}

func (s *Scheduler) readBack(ctx context.Context, name, ref string) (Verified, error) {
	path, release, err := s.target.Fetch(ctx, name, ref)
	if err != nil {
		return Verified{}, err
	}
	defer release()
	return VerifyFile(path)
}

func (s *Scheduler) prune(ctx context.Context, clusterID string) (int, error) {
	names, err := s.target.List(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, old := range Prune(names, clusterID, s.cfg.Retain) {
		if err := s.target.Delete(ctx, old); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// writeFile writes cp as a snapshot file, `metad snapshot save`'s format.
func writeFile(w io.Writer, cp *raftstore.Checkpoint) error {
	fw, err := raftstore.NewFileWriter(w, raftstore.FileMeta{NodeID: cp.NodeID, Index: cp.Index, Term: cp.Term,
		TakenAt: cp.TakenAt, Servers: cp.Servers, ClusterID: cp.ClusterID})
	if err != nil {
		return err
	}
	if _, err := cp.WriteTo(fw); err != nil {
		return err
	}
	_, err = fw.Close()
	return err
}

type metrics struct {
	runs                              *prometheus.CounterVec
	lastSuccess, lastIndex, lastBytes prometheus.Gauge
	pruned                            prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_backup_total", Help: "Scheduled backups attempted by this node as leader, by outcome: ok (written and verified) or failed.",
		}, []string{"outcome"}),
		lastSuccess: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "metad_backup_last_success_timestamp_seconds", Help: "When this node's newest verified backup was taken (Unix seconds; 0: none yet).",
		}),
		lastIndex: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "metad_backup_last_index", Help: "Raft index of this node's newest verified backup.",
		}),
		lastBytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "metad_backup_last_size_bytes", Help: "Size of this node's newest verified backup file.",
		}),
		pruned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_backup_pruned_total", Help: "Backups deleted beyond --backup-retain.",
		}),
	}
	m.runs.WithLabelValues("ok")
	m.runs.WithLabelValues("failed")
	if reg != nil {
		reg.MustRegister(m.runs, m.lastSuccess, m.lastIndex, m.lastBytes, m.pruned)
	}
	return m
}
