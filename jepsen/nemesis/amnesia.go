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

// The amnesia fault: a voter loses its disk at the worst moment, while it
// holds a committed entry that another voter lacks (issue 16,
// G2). Staged on n nodes with leader L:
//
//  1. cut the lagging group B (n/2 followers) off from everyone;
//  2. wait until writes acknowledged since the cut have committed on L and
//     the others, so L's commit index passes every B's last index;
//  3. kill L, kill follower A, wipe A's data dir and start A again under
//     the same node id and command;
//  4. heal B, and hold with L down: A (empty) and B (lagging) are a
//     majority. An amnesiac A that votes elects a B, which lacks the
//     committed entries: they are lost (G1/G2/G14 see it). raftstore's
//     vote guard keeps A from voting until it has caught up, so the
//     cluster waits for L;
//  5. restart L; the fault lasts until the configuration is healthy again:
//     a leader, every server a voter and reachable, A with a new
//     incarnation and caught up (applied up to the leader's commit index).
//     60 s at most, else the fault failed and the run is invalid.
//
// metad keeps the wiped server in the configuration under its id (the
// guard makes that safe: membership/doc.go, "Incarnations"), so the
// configuration after the fault must equal the one before it
// (model.CheckMembership).

// Budgets of an amnesia fault beside its hold: staging (the cut, the writes
// that must commit without B, kill, wipe, restart; Status calls wait up to
// 2 s for the cut-off node) and recovery (election after L restarts, A
// catching up).
const (
	amnesiaStaging  = 10 * time.Second
	amnesiaRecovery = 12 * time.Second
	// amnesiaHealthy bounds the wait for a healthy configuration.
	amnesiaHealthy = 60 * time.Second
	// amnesiaAcked: acknowledged appends the cut-off nodes must miss.
	amnesiaAcked = 3
)

func (r *Runner) amnesia(ctx context.Context, st Step, f history.Fault) injected {
	n := len(r.Cluster.Nodes)
	leader := r.Cluster.Leader(ctx)
	if leader < 0 {
		f.Error = "no leader to stage the amnesia fault around"
		return injected{fault: f}
	}
	rest := without(st.Perm, leader)
	lagging, wiped := rest[:n/2], rest[n/2]
	before, err := r.Cluster.Status(ctx, leader, false)
	if err != nil {
		f.Error = fmt.Sprintf("status of leader %s: %v", r.Cluster.Nodes[leader].ID, err)
		return injected{fault: f}
	}
	oldInc := incarnationOf(before, r.Cluster.Nodes[wiped].ID)
	f.Config = &history.ConfigSeen{Before: configOf(before)}
	f.Targets = r.ids(append([]int{wiped, leader}, lagging...))

	r.Cluster.SetLinks(linksOf(cutGroups(lagging, without(st.Perm, lagging...)), cluster.Protocols), true)
	cut := clock.Real.Now()
	if err := r.awaitCommittedWithout(ctx, leader, lagging, cut); err != nil {
		f.Error = err.Error()
		return injected{fault: f, heal: func(context.Context) { r.Cluster.HealNetwork() }}
	}
	r.Cluster.Kill(leader)
	r.Cluster.Kill(wiped)
	if err := r.Cluster.Wipe(wiped); err != nil {
		f.Error = err.Error()
	}
	if err := r.Cluster.Start(wiped, false); err != nil {
		f.Error = err.Error()
	}
	r.Cluster.HealNetwork()
	f.Detail = fmt.Sprintf("cut %v off; once %d acknowledged appends committed without them, killed leader %s, wiped %s (incarnation %s) and restarted it under its id; healed; ",
		r.ids(lagging), amnesiaAcked, r.Cluster.Nodes[leader].ID, r.Cluster.Nodes[wiped].ID, oldInc)
	heal := func(context.Context) {
		r.Cluster.HealNetwork()
		_ = r.Cluster.Start(leader, false)
	}
	f.Config.Lagging = r.ids(lagging)
	hold := func(ctx context.Context, f *history.Fault) error {
		if err := r.watchLeaders(ctx, f, lagging, r.Cluster.Nodes[leader].ID, clock.Real.Now().Add(st.Hold)); err != nil {
			return err
		}
		f.Detail += fmt.Sprintf("leaders while the old leader was down: %v; ", f.Config.LeadersWhileDown)
		if err := r.Cluster.Start(leader, false); err != nil {
			return err
		}
		return r.awaitHealthy(ctx, f, wiped, oldInc)
	}
	return injected{fault: f, heal: heal, hold: hold}
}

// awaitCommittedWithout waits until amnesiaAcked appends invoked after cut
// were acknowledged and the leader's commit index passed the last index
// of every cut-off node: entries the rest hold and they lack.
func (r *Runner) awaitCommittedWithout(ctx context.Context, leader int, lagging []int, cut time.Time) error {
	var behind uint64
	for _, b := range lagging {
		st, err := r.Cluster.Status(ctx, b, false)
		if err != nil {
			return fmt.Errorf("status of cut-off %s: %w", r.Cluster.Nodes[b].ID, err)
		}
		if self := nodeOf(st, r.Cluster.Nodes[b].ID); self != nil {
			behind = max(behind, self.LastIndex)
		}
	}
	deadline := clock.Real.Now().Add(amnesiaStaging)
	for clock.Real.Now().Before(deadline) {
		st, err := r.Cluster.Status(ctx, leader, false)
		if self := nodeOf(st, r.Cluster.Nodes[leader].ID); err == nil && self != nil &&
			self.CommitIndex > behind && r.ackedAppendsSince(cut) >= amnesiaAcked {
			return nil
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("no %d appends committed without %v within %s", amnesiaAcked, r.ids(lagging), amnesiaStaging)
}

func (r *Runner) ackedAppendsSince(t time.Time) int {
	n := 0
	for _, op := range r.Recorder.History().Ops {
		if op.Kind == history.KindAppend && op.Status == history.OK && op.Call >= t.UnixNano() {
			n++
		}
	}
	return n
}

// watchLeaders asks the lagging nodes who leads, in turn, until `until`,
// and records every leader named but the old one, which is down (a node
// may still name it). Only the amnesiac's vote can elect a lagging node
// while the old leader is down: every other voter holds the entries it
// lacks and refuses it.
func (r *Runner) watchLeaders(ctx context.Context, f *history.Fault, lagging []int, old string, until time.Time) error {
	for i := 0; clock.Real.Now().Before(until); i++ {
		st, err := r.Cluster.Status(ctx, lagging[i%len(lagging)], false)
		if err == nil && st.LeaderId != "" && st.LeaderId != old && !slices.Contains(f.Config.LeadersWhileDown, st.LeaderId) {
			f.Config.LeadersWhileDown = append(f.Config.LeadersWhileDown, st.LeaderId)
		}
		if err := sleep(ctx, min(500*time.Millisecond, until.Sub(clock.Real.Now()))); err != nil {
			return err
		}
	}
	return nil
}

// awaitHealthy waits until a leader reports every server a reachable
// voter and the wiped one with a new incarnation, caught up with the
// commit index the leader had when first asked. It records the
// configuration it ends with.
func (r *Runner) awaitHealthy(ctx context.Context, f *history.Fault, wiped int, oldInc string) error {
	id := r.Cluster.Nodes[wiped].ID
	deadline := clock.Real.Now().Add(amnesiaHealthy)
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
			st, err := r.Cluster.Status(ctx, l, false)
			if err == nil {
				last = st
				if lead := nodeOf(st, st.LeaderId); target == 0 && lead != nil {
					target = lead.CommitIndex
				}
				if why = unhealthy(st, id, oldInc, target); why == "" {
					f.Config.After = configOf(st)
					f.Detail += fmt.Sprintf("%s back as incarnation %s, caught up to %d", id, incarnationOf(st, id), target)
					return nil
				}
			}
		}
		if err := sleep(ctx, 250*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("configuration not healthy within %s: %s", amnesiaHealthy, why)
}

// unhealthy says what is still wrong, or "".
func unhealthy(st *metadpb.StatusResponse, id, oldInc string, target uint64) string {
	for _, n := range st.Nodes {
		switch {
		case !n.Voter:
			return n.NodeId + " is not a voter"
		case n.State == "UNREACHABLE" || n.Error != "":
			return n.NodeId + " unreachable: " + n.Error
		}
	}
	w := nodeOf(st, id)
	switch {
	case w == nil:
		return id + " not in the configuration"
	case w.Incarnation == "" || w.Incarnation == oldInc:
		return fmt.Sprintf("%s still shows incarnation %q", id, w.Incarnation)
	case target == 0 || w.AppliedIndex < target:
		return fmt.Sprintf("%s applied %d, not yet %d", id, w.AppliedIndex, target)
	}
	return ""
}

func nodeOf(st *metadpb.StatusResponse, id string) *metadpb.NodeStatus {
	if st == nil {
		return nil
	}
	for _, n := range st.Nodes {
		if n.NodeId == id {
			return n
		}
	}
	return nil
}

func incarnationOf(st *metadpb.StatusResponse, id string) string {
	if n := nodeOf(st, id); n != nil {
		return n.Incarnation
	}
	return ""
}

// configOf is a status answer's Raft configuration: sorted "id:voter" or
// "id:nonvoter".
func configOf(st *metadpb.StatusResponse) []string {
	var out []string
	for _, n := range st.Nodes {
		s := n.NodeId + ":nonvoter"
		if n.Voter {
			s = n.NodeId + ":voter"
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}
