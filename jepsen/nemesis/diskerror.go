package nemesis

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/internal/faultfs"
	"github.com/metad/metad/jepsen/history"
)

// The fault-filesystem nemeses: each node's data dir is on its own
// faultfs mount (cluster.Config.FaultFS), which the harness serves.
//
// DiskError fails every fsync (or, drawn one time in three, every write)
// of the chosen nodes' raft log segments ("*.wal") with EIO. A server must
// stop at the first failure, naming the file, and never retry it (a
// failed fsync has dropped the unsynced pages); the fault waits until each
// target has exited, keeps it down for the rest of its hold, disarms the
// filesystem and restarts it. A target whose operation failed and that is
// still running diskErrorExitGrace later kept running after a failed fsync:
// report.DiskChecks reports that as a G17 anomaly. A run none of whose
// disk-error faults bit (an operation failed and the node exited) is
// invalid.
//
// LoseUnsynced kills the chosen nodes with SIGKILL, rolls back every write
// their filesystems hold that was never synced, as a power cut would, and
// restarts them after the hold. A node acknowledges only what it synced,
// and raft-wal drops a torn tail: nothing acknowledged may be lost.
//
// Shapes of both: one (a random node), leader, minority; never a majority,
// so the rest of the cluster goes on.
const (
	DiskError    = "disk-error"
	LoseUnsynced = "lose-unsynced"
)

// The disk-error fault's bounds: how long it waits for an armed fault to
// fail an operation (the targets write their log on every append and
// heartbeat-driven replication), and then for the target to exit.
const (
	diskErrorBite      = 10 * time.Second
	diskErrorExitGrace = 15 * time.Second
)

// walPart names the raft log's segment files for faultfs.Fail.
const walPart = ".wal"

func init() {
	shapes[DiskError] = []string{"one", "leader", "minority"}
	shapes[LoseUnsynced] = []string{"one", "leader", "minority"}
}

// NeedsFaultFS reports whether the kinds need each node's data dir on a
// fault filesystem.
func NeedsFaultFS(kinds []string) bool {
	return slices.ContainsFunc(kinds, func(k string) bool {
		kind, _, _ := strings.Cut(k, ":")
		return kind == DiskError || kind == LoseUnsynced
	})
}

// disk injects the disk faults: disk-full (disk.go), disk-error and
// lose-unsynced.
func (r *Runner) disk(ctx context.Context, st Step, f history.Fault) injected {
	switch st.Kind {
	case DiskError:
		return r.diskError(ctx, st, f)
	case LoseUnsynced:
		return r.loseUnsynced(ctx, st, f)
	}
	return r.diskFull(ctx, st, f)
}

// minorityVictims picks a shape's nodes: one, the leader, or a minority.
func (r *Runner) minorityVictims(ctx context.Context, st Step, f *history.Fault) []int {
	if st.Shape == "leader" {
		return []int{r.leaderOr(ctx, st, f)}
	}
	return minority(st)
}

// minority is the nodes of shape one (a random node) or minority (the
// largest minority, at least one): a prefix of the step's permutation.
func minority(st Step) []int {
	if st.Shape == "minority" {
		return slices.Clone(st.Perm[:max(1, (len(st.Perm)-1)/2)])
	}
	return slices.Clone(st.Perm[:1])
}

// faultFSOf returns the victims' filesystems, or an error naming the
// first node without one.
func (r *Runner) faultFSOf(victims []int) ([]*faultfs.FS, error) {
	var out []*faultfs.FS
	for _, v := range victims {
		fs := r.Cluster.FaultFS(v)
		if fs == nil {
			return nil, fmt.Errorf("%s's data dir is not on a fault filesystem (cluster.Config.FaultFS)", r.Cluster.Nodes[v].ID)
		}
		out = append(out, fs)
	}
	return out, nil
}

func (r *Runner) diskError(ctx context.Context, st Step, f history.Fault) injected {
	victims := r.minorityVictims(ctx, st, &f)
	f.Targets = r.ids(victims)
	fss, err := r.faultFSOf(victims)
	if err != nil {
		f.Error = err.Error()
		return injected{fault: f}
	}
	op := faultfs.Fsync
	if st.FailWrite {
		op = faultfs.Write
	}
	seen := &history.DiskSeen{Op: op.String()}
	f.Disk = seen
	base := make([]int, len(fss))
	for i, fs := range fss {
		base[i] = fs.Injected(op)
	}
	f.Start = clock.Real.Now().UnixNano()
	for _, fs := range fss {
		fs.Fail(op, walPart)
	}
	f.Detail += fmt.Sprintf("EIO on every %s of %s*", op, walPart)
	heal := func(context.Context) {
		var started []string
		for i, v := range victims {
			fss[i].Heal()
			if !r.Cluster.Running(v) {
				if err := r.Cluster.Start(v, false); err != nil {
					r.Log.Error("nemesis: restart after a disk error failed", "node", r.Cluster.Nodes[v].ID, "err", err)
					continue
				}
				started = append(started, r.Cluster.Nodes[v].ID)
			}
		}
		r.Log.Info("nemesis: disk error healed", "restarted", started)
	}
	hold := func(ctx context.Context, f *history.Fault) error {
		start := clock.Real.Now()
		err := r.awaitStops(ctx, victims, fss, op, base, f)
		for i, fs := range fss {
			seen.Injected += fs.Injected(op) - base[i]
		}
		if err == nil {
			// The stopped nodes stay down for the rest of the hold.
			err = sleep(ctx, st.Hold-clock.Since(clock.Real, start))
		}
		if err != nil && ctx.Err() != nil {
			// The run's time limit came first: the fault ends with what
			// it saw (a fault that saw nothing did not bite).
			f.Detail += "; cut short by the end of the run"
			return nil
		}
		return err
	}
	return injected{fault: f, heal: heal, hold: hold}
}

func (r *Runner) loseUnsynced(ctx context.Context, st Step, f history.Fault) injected {
	victims := r.minorityVictims(ctx, st, &f)
	f.Targets = r.ids(victims)
	fss, err := r.faultFSOf(victims)
	if err != nil {
		f.Error = err.Error()
		return injected{fault: f}
	}
	seen := &history.DiskSeen{}
	f.Disk = seen
	f.Start = clock.Real.Now().UnixNano()
	var lost []string
	for i, v := range victims {
		r.Cluster.Kill(v)
		files, bytes := fss[i].Unsynced()
		if err := fss[i].LoseUnsynced(); err != nil {
			f.Error = err.Error()
		}
		seen.RolledBackFiles += files
		seen.RolledBackBytes += bytes
		lost = append(lost, fmt.Sprintf("%s %d files, %d bytes", r.Cluster.Nodes[v].ID, files, bytes))
	}
	f.Detail += "killed, unsynced writes rolled back: " + strings.Join(lost, "; ")
	return injected{fault: f, heal: func(context.Context) {
		for _, v := range victims {
			if err := r.Cluster.Start(v, false); err != nil {
				r.Log.Error("nemesis: restart after lose-unsynced failed", "node", r.Cluster.Nodes[v].ID, "err", err)
			}
		}
	}}
}

// awaitStops waits until every victim has stopped itself after a failed op
// (recorded in f.Disk.Exited), kept running diskErrorExitGrace after its
// first failure (f.Disk.KeptRunning), or saw no failure within
// diskErrorBite (noted in the detail). base is each filesystem's count of
// failed ops before the fault.
func (r *Runner) awaitStops(ctx context.Context, victims []int, fss []*faultfs.FS, op faultfs.Op, base []int, f *history.Fault) error {
	seen := f.Disk
	start := clock.Real.Now()
	pending := slices.Clone(victims)
	bitAt := map[int]time.Time{}
	for {
		now := clock.Real.Now()
		pending = slices.DeleteFunc(pending, func(v int) bool {
			i := slices.Index(victims, v)
			id := r.Cluster.Nodes[v].ID
			failed := fss[i].Injected(op) > base[i]
			if failed && bitAt[v].IsZero() {
				bitAt[v] = now
			}
			switch {
			case r.Cluster.Exited(v) && failed:
				seen.Exited = append(seen.Exited, fmt.Sprintf("%s (exit %d)", id, r.Cluster.ExitCode(v)))
			case !r.Cluster.Running(v):
				f.Detail += fmt.Sprintf("; %s stopped with no %s failed", id, op)
			case failed && now.Sub(bitAt[v]) > diskErrorExitGrace:
				seen.KeptRunning = append(seen.KeptRunning, fmt.Sprintf("%s (%d %ss failed, still running %s after the first)",
					id, fss[i].Injected(op)-base[i], op, diskErrorExitGrace))
			case !failed && now.Sub(start) > diskErrorBite:
				f.Detail += fmt.Sprintf("; no %s of %s failed within %s", op, id, diskErrorBite)
			default:
				return false
			}
			return true
		})
		if len(pending) == 0 {
			return nil
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}
