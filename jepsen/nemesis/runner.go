package nemesis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/jepsen/cluster"
	"github.com/metad/metad/jepsen/history"
)

// Workload is what the nemesis may ask of the clients.
type Workload interface {
	// Quiesce stops starting operations and waits for those in flight.
	Quiesce(ctx context.Context)
	// Resume lets operations start again.
	Resume()
}

// Runner injects a schedule's faults into a cluster.
type Runner struct {
	Cluster  *cluster.Cluster
	Recorder *history.Recorder
	Workload Workload
	Objects  Objects // for the flapping nemesis (store.go)
	Log      *slog.Logger
	// MinOps is how many successful operations must complete after a heal
	// (or the start) before the next fault; MaxWait bounds that wait.
	MinOps  int
	MaxWait time.Duration
}

// injected is a fault in progress and how to end it.
type injected struct {
	fault history.Fault
	heal  func(ctx context.Context)
	// hold overrides the step's Hold (membership waits for the node); it
	// may add to the fault's record.
	hold func(ctx context.Context, f *history.Fault) error
}

// Run injects steps in order until they are done or the deadline leaves
// no room for the next one, healing each fault before the next.
func (r *Runner) Run(ctx context.Context, steps []Step, deadline time.Time) {
	lastHeal := clock.Real.Now().UnixNano()
	for _, st := range steps {
		if err := r.awaitWork(ctx, lastHeal); err != nil {
			return
		}
		if clock.Real.Now().Add(st.expectedHold() + time.Second).After(deadline) {
			return
		}
		inj := r.inject(ctx, st)
		inj.fault.OpsBefore = r.Recorder.CountOK(lastHeal, inj.fault.Start)
		r.Log.Info("nemesis: fault", "step", st.String(), "targets", inj.fault.Targets, "detail", inj.fault.Detail, "ops_before", inj.fault.OpsBefore)
		var err error
		if inj.hold != nil {
			err = inj.hold(ctx, &inj.fault)
		} else {
			err = sleep(ctx, st.Hold)
		}
		if err != nil && inj.fault.Error == "" {
			inj.fault.Error = err.Error()
		}
		if inj.heal != nil {
			inj.heal(context.WithoutCancel(ctx))
		}
		inj.fault.End = clock.Real.Now().UnixNano()
		r.Recorder.AddFault(inj.fault)
		r.Log.Info("nemesis: healed", "kind", st.Kind, "shape", st.Shape, "err", inj.fault.Error)
		lastHeal = inj.fault.End
		if sleep(ctx, st.Quiet) != nil {
			return
		}
	}
}

// awaitWork waits until MinOps operations succeeded since `since`, at most
// MaxWait. Falling short is recorded by the fault's OpsBefore.
func (r *Runner) awaitWork(ctx context.Context, since int64) error {
	end := clock.Real.Now().Add(r.MaxWait)
	for r.Recorder.CountOK(since, clock.Real.Now().UnixNano()) < r.MinOps && clock.Real.Now().Before(end) {
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	return ctx.Err()
}

func sleep(ctx context.Context, d time.Duration) error {
	t := clock.Real.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

func (r *Runner) ids(nodes []int) []string {
	var out []string
	for _, i := range nodes {
		out = append(out, r.Cluster.Nodes[i].ID)
	}
	return out
}

// leaderOr returns the leader, or the permutation's first node (noting it).
func (r *Runner) leaderOr(ctx context.Context, st Step, f *history.Fault) int {
	l := r.Cluster.Leader(ctx)
	if l < 0 {
		f.Detail += "no leader known; "
		return st.Perm[0]
	}
	return l
}

func (r *Runner) inject(ctx context.Context, st Step) injected {
	f := history.Fault{Kind: st.Kind, Shape: st.Shape, Start: clock.Real.Now().UnixNano()}
	n := len(r.Cluster.Nodes)
	switch st.Kind {
	case Partition:
		leader := -1
		if st.Shape == "isolate-leader" {
			leader = r.leaderOr(ctx, st, &f)
		}
		pairs := PartitionPairs(st.Shape, n, st.Perm, leader)
		links := linksOf(pairs, cluster.Protocols)
		r.Cluster.SetLinks(links, true)
		f.Detail += fmt.Sprintf("cut %v", pairs)
		f.Targets = r.ids(st.Perm)
		f.Start = clock.Real.Now().UnixNano()
		return injected{fault: f, heal: func(context.Context) { r.Cluster.HealNetwork() }}
	case Kill:
		return r.kill(ctx, st, f)
	case Pause, LeaderPause:
		victims := st.Perm[:1]
		switch {
		case st.Shape == "majority":
			victims = st.Perm[:n/2+1]
		case st.Kind == LeaderPause:
			victims = []int{r.leaderOr(ctx, st, &f)}
		}
		for _, v := range victims {
			r.Cluster.Pause(v)
		}
		f.Targets, f.Start = r.ids(victims), clock.Real.Now().UnixNano()
		return injected{fault: f, heal: func(context.Context) {
			for _, v := range victims {
				r.Cluster.Resume(v)
			}
		}}
	case Membership:
		return r.churn(ctx, st, f)
	case Amnesia:
		return r.amnesia(ctx, st, f)
	case LongPartition:
		return r.longPartition(ctx, st, f)
	case StoreUnavailable, Flapping, Corrupt:
		return r.storeFault(ctx, st, f)
	case Clock:
		return r.skew(ctx, st, f)
	case DiskFull, DiskError, LoseUnsynced:
		return r.disk(ctx, st, f)
	case Slow:
		protos := []string{cluster.GRPC}
		if st.Shape == "all" {
			protos = cluster.Protocols
		}
		var pairs []Pair
		for a := range n {
			for b := range n {
				if a != b {
					pairs = append(pairs, Pair{a, b})
				}
			}
		}
		r.Cluster.SetDelay(linksOf(pairs, protos), st.Delay)
		f.Detail = fmt.Sprintf("delay %s on %v", st.Delay, protos)
		return injected{fault: f, heal: func(context.Context) { r.Cluster.HealNetwork() }}
	}
	f.Error = "unknown nemesis " + st.Kind
	return injected{fault: f}
}

func linksOf(pairs []Pair, protos []string) []cluster.Link {
	var out []cluster.Link
	for _, p := range pairs {
		for _, proto := range protos {
			out = append(out, cluster.Link{From: p.From, To: p.To, Proto: proto})
		}
	}
	return out
}

func (r *Runner) kill(ctx context.Context, st Step, f history.Fault) injected {
	n := len(r.Cluster.Nodes)
	var victims []int
	switch st.Shape {
	case "one":
		victims = st.Perm[:1]
	case "leader":
		victims = []int{r.leaderOr(ctx, st, &f)}
	case "majority":
		victims = st.Perm[:n/2+1]
	case "all", "all-quiet":
		victims = slices.Clone(st.Perm)
	}
	if st.Quiesce {
		r.Workload.Quiesce(ctx)
		f.Detail += "workload quiesced first; "
	}
	f.Start = clock.Real.Now().UnixNano()
	for _, v := range victims {
		r.Cluster.Kill(v)
	}
	if st.Quiesce {
		r.Workload.Resume()
	}
	f.Targets = r.ids(victims)
	return injected{fault: f, heal: func(context.Context) {
		var errs []error
		for _, v := range victims {
			errs = append(errs, r.Cluster.Start(v, false))
		}
		if err := errors.Join(errs...); err != nil {
			r.Log.Error("nemesis: restart failed", "err", err)
		}
	}}
}

// churn removes a node from the Raft configuration, wipes it and starts it
// fresh with --join only: the leader must add it back and promote it. The
// fault lasts until the node is a voter again.
func (r *Runner) churn(ctx context.Context, st Step, f history.Fault) injected {
	victim := st.Perm[0]
	id := r.Cluster.Nodes[victim].ID
	via := st.Perm[1]
	f.Targets = []string{id}
	if err := r.Cluster.RemovePeer(ctx, via, id); err != nil {
		f.Error = fmt.Sprintf("remove-peer %s: %v", id, err)
		return injected{fault: f}
	}
	r.Cluster.Kill(victim)
	if err := r.Cluster.Wipe(victim); err != nil {
		f.Error = err.Error()
	}
	if err := r.Cluster.Start(victim, true); err != nil {
		f.Error = err.Error()
	}
	hold := func(ctx context.Context, _ *history.Fault) error {
		deadline := clock.Real.Now().Add(60 * time.Second)
		for clock.Real.Now().Before(deadline) {
			if voters, _, err := r.Cluster.Voters(ctx, via); err == nil && slices.Contains(voters, id) {
				return nil
			}
			if err := sleep(ctx, 250*time.Millisecond); err != nil {
				return err
			}
		}
		return fmt.Errorf("%s not a voter again within 60s", id)
	}
	return injected{fault: f, hold: hold}
}

func (r *Runner) skew(ctx context.Context, st Step, f history.Fault) injected {
	victims := st.Perm[:1]
	if st.Shape == "all" {
		victims = st.Perm
	}
	for _, v := range victims {
		if err := r.Cluster.SetClockOffset(ctx, v, st.Skew); err != nil {
			f.Error = err.Error()
		}
	}
	f.Targets, f.Detail = r.ids(victims), "offset "+st.Skew.String()
	f.MaxSkew = int64(st.Skew)
	if f.MaxSkew < 0 {
		f.MaxSkew = -f.MaxSkew
	}
	return injected{fault: f, heal: func(ctx context.Context) {
		for i := range r.Cluster.Nodes {
			if r.Cluster.Up(i) {
				_ = r.Cluster.SetClockOffset(ctx, i, 0)
			}
		}
	}}
}
