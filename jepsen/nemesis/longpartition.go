package nemesis

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/clock"
	"github.com/metad/metad/jepsen/cluster"
	"github.com/metad/metad/jepsen/history"
)

// The long-partition fault: one node (shape one) or the leader (shape
// leader) is cut off from every other for Options.LongHold, far longer
// than an ordinary fault, with the servers on the default removal policy
// (--dead-server-timeout in hours). It must not be removed:
// the configuration is read before the cut, every second of the hold from
// the other side, and once the node has caught up after the heal, and
// model.CheckMembership reports any difference. The fault lasts until the
// node has caught up (longPartitionCatchUp at most, else it failed and the
// run is invalid).

const (
	// longPartitionRejoin budgets the time from the heal until the node
	// has caught up, in the schedule: after a long cut the leader retries
	// the node only every ~10 s (hashicorp/raft's replication backoff
	// tops out at 10ms × 2^10); 12–13 s were measured.
	longPartitionRejoin = 20 * time.Second
	// longPartitionCatchUp bounds that wait.
	longPartitionCatchUp = 45 * time.Second
)

func (r *Runner) longPartition(ctx context.Context, st Step, f history.Fault) injected {
	victim := st.Perm[0]
	if st.Shape == "leader" {
		victim = r.leaderOr(ctx, st, &f)
	}
	observer := without(st.Perm, victim)[0]
	before, err := r.Cluster.Status(ctx, observer, false)
	if err != nil {
		f.Error = fmt.Sprintf("status of %s: %v", r.Cluster.Nodes[observer].ID, err)
		return injected{fault: f}
	}
	f.Config = &history.ConfigSeen{Before: configOf(before)}
	pairs := cutGroups([]int{victim}, without(st.Perm, victim))
	r.Cluster.SetLinks(linksOf(pairs, cluster.Protocols), true)
	f.Targets, f.Start = r.ids([]int{victim}), clock.Real.Now().UnixNano()
	f.Detail = fmt.Sprintf("cut %s off for %s; ", r.Cluster.Nodes[victim].ID, st.Hold)
	hold := func(ctx context.Context, f *history.Fault) error {
		if err := r.watchConfig(ctx, f, without(st.Perm, victim), clock.Real.Now().Add(st.Hold)); err != nil {
			return err
		}
		r.Cluster.HealNetwork()
		return r.awaitRejoined(ctx, f, victim)
	}
	return injected{fault: f, hold: hold, heal: func(context.Context) { r.Cluster.HealNetwork() }}
}

// watchConfig reads the configuration from the majority side about once a
// second until `until`, noting the first one that differs from Before.
func (r *Runner) watchConfig(ctx context.Context, f *history.Fault, majority []int, until time.Time) error {
	for i := 0; clock.Real.Now().Before(until); i++ {
		o := majority[i%len(majority)]
		if st, err := r.Cluster.Status(ctx, o, false); err == nil && f.Config.During == nil {
			if c := configOf(st); !slices.Equal(c, f.Config.Before) {
				f.Config.During, f.Config.At = c, clock.Real.Now().UnixNano()
			}
		}
		if err := sleep(ctx, min(time.Second, until.Sub(clock.Real.Now()))); err != nil {
			return err
		}
	}
	return nil
}

// awaitRejoined waits until a leader reports every server reachable and
// the victim applied up to the commit index the leader had when first
// asked, and records the configuration then.
func (r *Runner) awaitRejoined(ctx context.Context, f *history.Fault, victim int) error {
	id := r.Cluster.Nodes[victim].ID
	deadline := clock.Real.Now().Add(longPartitionCatchUp)
	var target uint64
	why := "no leader"
	var last *metadpb.StatusResponse
	defer func() {
		if f.Config.After == nil && last != nil {
			f.Config.After = configOf(last) // what it ended in, for model.CheckMembership
		}
	}()
	for clock.Real.Now().Before(deadline) {
		if l := r.Cluster.Leader(ctx); l >= 0 {
			if st, err := r.Cluster.Status(ctx, l, false); err == nil {
				last = st
				if lead := nodeOf(st, st.LeaderId); target == 0 && lead != nil {
					target = lead.CommitIndex
				}
				why = "not in the configuration"
				if v := nodeOf(st, id); v != nil && v.State != "UNREACHABLE" && target > 0 && v.AppliedIndex >= target {
					f.Config.After = configOf(st)
					f.Detail += fmt.Sprintf("%s caught up to %d", id, target)
					return nil
				} else if v != nil {
					why = fmt.Sprintf("%s %s applied %d, not yet %d", id, v.State, v.AppliedIndex, target)
				}
			}
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s did not rejoin within %s: %s", id, longPartitionCatchUp, why)
}
