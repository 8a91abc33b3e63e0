// Package nemesis decides and injects the faults of a Jepsen run.
//
// The schedule is pure: Plan draws, from a seed, every fault's kind, shape,
// node choices, duration and the quiet time after it, so a schedule replays
// exactly from its seed. Only choices that depend on the cluster at the
// moment ("the leader") are resolved when the fault is injected; the rest of
// the choice (which other nodes) is still drawn from the seed. The Runner
// injects and heals the planned faults against a cluster. The membership
// faults have their own files: amnesia.go (a voter wiped at the worst
// moment and restarted under its id) and longpartition.go (a node cut off
// for Options.LongHold); both record the Raft configuration they saw in
// the fault (history.ConfigSeen) for model.CheckMembership.
// The object-store faults (store.go: store-unavailable, flapping) are in
// no matrix; a run names them (nor are the membership faults). The
// disk-full fault (disk.go) fills nodes' own filesystems past the
// servers' disk reserve; the disk-error and lose-unsynced faults
// (diskerror.go) fail the raft log's fsyncs and writes on nodes' fault
// filesystems, or roll back what a killed node never synced; they are in
// the full matrix, not the smoke one.
package nemesis

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Kinds of faults, as --nemesis names them.
const (
	Partition   = "partition"    // per-link partitions in Jepsen's shapes
	Kill        = "kill"         // kill -9 one, the leader, a majority, all; restart
	Pause       = "pause"        // SIGSTOP a random node or a majority; SIGCONT
	LeaderPause = "leader-pause" // SIGSTOP the leader; SIGCONT
	Membership  = "membership"   // remove a node, wipe it, re-add it fresh
	Clock       = "clock"        // shift nodes' command-stamping clocks
	Slow        = "slow"         // delay peer links (gRPC forwarding, raft)
	// Amnesia wipes a voter holding a committed entry another voter lacks
	// and restarts it under its old id (amnesia.go).
	Amnesia = "amnesia"
	// LongPartition cuts one node (or the leader) off for Options.LongHold
	// and checks the configuration is left alone (longpartition.go).
	LongPartition = "long-partition"
)

// AllKinds is every kind, in the order the full matrix runs them. The
// disk-full kind (disk.go) and the fault-filesystem kinds (diskerror.go) need root: the harness refuses it otherwise.
var AllKinds = []string{Partition, Kill, Pause, LeaderPause, Membership, Clock, Slow, DiskFull, DiskError, LoseUnsynced}

// MembershipKinds are run on their own (CI's membership cell), not in the
// matrices: a long partition needs a longer time limit than a matrix cell.
var MembershipKinds = []string{Amnesia, LongPartition}

// shapes lists each kind's variants.
var shapes = map[string][]string{
	Partition:     {"isolate-one", "isolate-leader", "majority-minority", "majorities-ring", "bridge"},
	Kill:          {"one", "leader", "majority", "all", "all-quiet"},
	Pause:         {"one", "majority"},
	LeaderPause:   {"leader"},
	Membership:    {"churn"},
	Clock:         {"one", "all"},
	Slow:          {"grpc", "all"},
	Amnesia:       {"wipe-follower"},
	LongPartition: {"one", "leader"},
}

// ParseKinds checks a comma-separated --nemesis value ("none" is empty).
// A kind may name one of its shapes, "kill:all-quiet", to use only that.
func ParseKinds(s string) ([]string, error) {
	if s == "" || s == "none" {
		return nil, nil
	}
	var out []string
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		kind, shape, _ := strings.Cut(k, ":")
		sh, ok := shapes[kind]
		if !ok {
			return nil, fmt.Errorf("nemesis %q: want one of %s", k, strings.Join(slices.Concat(AllKinds, MembershipKinds, StoreKinds), ", "))
		}
		if shape != "" && !slices.Contains(sh, shape) {
			return nil, fmt.Errorf("nemesis %q: %s has shapes %s", k, kind, strings.Join(sh, ", "))
		}
		out = append(out, k)
	}
	return out, nil
}

// Step is one planned fault.
type Step struct {
	Kind  string
	Shape string
	// Perm is a random permutation of the nodes: the fault's node choices
	// are its prefix (after removing the leader where the shape names it).
	Perm []int
	// Hold is how long the fault lasts; Quiet how long the cluster then
	// runs healed before the next fault may start.
	Hold, Quiet time.Duration
	// Skew is the clock offset (clock faults); Delay the link delay (slow).
	Skew, Delay time.Duration
	// FailWrite: a disk-error fault fails writes, not fsyncs.
	FailWrite bool
	// Quiesce: the workload goes idle just before the fault (kill all), so
	// the last log entry on every node is an acknowledged write.
	Quiesce bool
}

func (s Step) String() string {
	extra := ""
	switch {
	case s.Kind == Clock:
		extra = " skew=" + s.Skew.String()
	case s.Kind == Slow:
		extra = " delay=" + s.Delay.String()
	case s.Quiesce:
		extra = " quiesce"
	case s.FailWrite:
		extra = " write"
	}
	return fmt.Sprintf("%s:%s perm=%v hold=%s quiet=%s%s", s.Kind, s.Shape, s.Perm, s.Hold, s.Quiet, extra)
}

// Options are the schedule's settings beyond the seed.
type Options struct {
	// LongHold is how long a long-partition fault holds (default 30s).
	LongHold time.Duration
}

// Plan draws a schedule of faults filling `budget` (the run's time limit
// minus its warm-up and final recovery). Kinds are used in turn, shapes
// drawn at random.
func Plan(seed int64, kinds []string, nodes int, budget time.Duration) []Step {
	return PlanWith(seed, kinds, nodes, budget, Options{})
}

// PlanWith is Plan with options.
func PlanWith(seed int64, kinds []string, nodes int, budget time.Duration, o Options) []Step {
	if o.LongHold <= 0 {
		o.LongHold = 30 * time.Second
	}
	if len(kinds) == 0 || budget <= 0 {
		return nil
	}
	r := rand.New(rand.NewPCG(uint64(seed), 0x6a65707365))
	var out []Step
	var used time.Duration
	filled := false
	for i := 0; used < budget; i++ {
		kind, shape, _ := strings.Cut(kinds[i%len(kinds)], ":")
		sh := shapes[kind]
		if shape == "" {
			shape = sh[r.IntN(len(sh))]
			if kind == DiskFull && !filled {
				// The first disk-full fault fills the leader's disk, so
				// every run sees writes refused (a follower's full disk
				// refuses nothing); the draw is made all the same, so the
				// rest of the schedule does not depend on it.
				shape = "leader"
			}
		}
		filled = filled || kind == DiskFull
		st := Step{Kind: kind, Shape: shape, Perm: r.Perm(nodes),
			Hold: between(r, 3*time.Second, 7*time.Second), Quiet: between(r, 3*time.Second, 5*time.Second)}
		switch kind {
		case Membership:
			st.Hold = 0 // lasts until the node is a voter again
		case Clock:
			st.Skew = between(r, time.Second, 45*time.Second)
			if r.IntN(2) == 0 {
				st.Skew = -st.Skew
			}
		case Slow:
			st.Delay = between(r, 20*time.Millisecond, 80*time.Millisecond)
		case Kill:
			// all-quiet: the workload goes idle first, so every node's last
			// log entry is an acknowledged write when the power goes.
			st.Quiesce = st.Shape == "all-quiet"
		case DiskError:
			st.FailWrite = r.IntN(3) == 0
		case Amnesia:
			// How long the cluster runs without the old leader once the
			// wiped node and the lagging one meet: long enough for several
			// election rounds.
			st.Hold = between(r, 5*time.Second, 8*time.Second)
		case LongPartition:
			st.Hold = o.LongHold
		}
		out = append(out, st)
		used += st.expectedHold() + st.Quiet
	}
	return out
}

// quiesceAllowance is how long quiescing the workload may take: it waits
// for the operations in flight, each bounded by the workload's OpTimeout
// (3s by default).
const quiesceAllowance = 5 * time.Second

// expectedHold is how long the fault is planned to last, from the moment
// it is started. A membership change lasts until the node is a voter
// again: about the leader's stabilization time (10s) plus catching up. A
// fault that quiesces the workload first needs that time too, or its hold
// can run into the time limit and the fault is cut short.
func (s Step) expectedHold() time.Duration {
	switch {
	case s.Kind == Membership:
		return 15 * time.Second
	case s.Kind == Amnesia:
		return amnesiaStaging + s.Hold + amnesiaRecovery
	case s.Kind == LongPartition:
		return s.Hold + longPartitionRejoin
	case s.Quiesce:
		return quiesceAllowance + s.Hold
	case s.Kind == StoreUnavailable && s.Shape == "kill":
		return s.Hold + storeRestartAllowance
	case s.Kind == Corrupt:
		return s.Hold + corruptTargetWait
	case s.Kind == DiskError:
		// The hold includes the wait for the failure and the exit; a
		// node that takes longer is itself the finding.
		return s.Hold + time.Second
	}
	return s.Hold
}

func between(r *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.Int64N(int64(hi-lo)+1))
}

// without returns perm minus the nodes xs, in perm's order.
func without(perm []int, xs ...int) []int {
	return slices.DeleteFunc(slices.Clone(perm), func(x int) bool { return slices.Contains(xs, x) })
}
