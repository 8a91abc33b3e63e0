package membership

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// reconcile is one leader round: gather the inputs, plan, log the holds
// that are news, and apply the first action. Applying one change per round
// and re-planning from a fresh configuration keeps every safety rule
// checked against the configuration the change is made on (raft accepts
// one uncommitted configuration change at a time).
func (a *Agent) reconcile(ctx context.Context) {
	if !a.loop.leading {
		a.log.Info("raft leader; membership reconcile started")
		a.loop.leading = true
		a.loop.absentSince = make(map[string]time.Time)
		a.loop.health = make(map[string]health)
		a.loop.logged = make(map[string]bool)
		a.loop.failed = make(map[string]string)
	}
	servers, err := a.raft.Configuration()
	if err != nil {
		a.log.Debug("reconcile: cannot read raft configuration", "err", err)
		return
	}
	now := a.clock.Now()
	members := a.table.snapshot()
	a.trackAbsent(servers, members, now)
	a.trackHealth(ctx, servers, members, now)
	acts, holds := plan(planInput{
		Now: now, Leader: a.cfg.NodeID, Servers: servers, Members: members,
		AbsentSince: a.loop.absentSince, Health: a.loop.health,
		DeadServerTimeout: a.cfg.DeadServerTimeout, LeftServerTimeout: a.cfg.LeftServerTimeout,
		ServerStabilizationTime: a.cfg.ServerStabilizationTime,
		MinQuorum:               a.cfg.MinQuorum, BootstrapExpect: a.cfg.BootstrapExpect,
		Removed: a.removedCheck(now), Foreign: a.foreignCheck(),
	})
	a.logHolds(holds, acts)
	if len(acts) == 0 || ctx.Err() != nil {
		return
	}
	if a.apply(ctx, acts[0]) {
		a.nudge() // plan again at once against the new configuration
	}
}

func (a *Agent) trackAbsent(servers []Server, members []Member, now time.Time) {
	present := make(map[string]bool, len(members))
	for _, m := range members {
		present[m.ID] = true
	}
	inConfig := make(map[string]bool, len(servers))
	for _, s := range servers {
		inConfig[s.ID] = true
		if _, seen := a.loop.absentSince[s.ID]; !present[s.ID] && !seen {
			a.loop.absentSince[s.ID] = now
		}
	}
	for id := range a.loop.absentSince {
		if present[id] || !inConfig[id] {
			delete(a.loop.absentSince, id)
		}
	}
}

// trackHealth fetches stats, concurrently, from every alive server of the
// configuration and from every alive newcomer, learns their incarnations
// and cluster ids, and updates the tracked health of non-voters. Health
// gates promotion; removal is decided by gossip status alone; the
// incarnation tells a removed server from a new one, the cluster id a
// newcomer from another cluster's server (identity.go).
func (a *Agent) trackHealth(ctx context.Context, servers []Server, members []Member, now time.Time) {
	leaderStats, err := a.raft.Stats()
	if err != nil {
		a.log.Warn("reconcile: cannot read own raft stats", "err", err)
		return
	}
	targets, nonVoter := a.statsTargets(servers, members)
	type answer struct {
		st  *ServerStats
		err error
	}
	answers := make([]answer, len(targets))
	var wg sync.WaitGroup
	for i, m := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fetchCtx, cancel := context.WithTimeout(ctx, max(a.cfg.ReconcileInterval/2, 50*time.Millisecond))
			defer cancel()
			answers[i].st, answers[i].err = a.hooks.FetchStats(fetchCtx, m)
		}()
	}
	wg.Wait()
	limits := healthLimits{LastContactThreshold: a.cfg.LastContactThreshold, MaxTrailingLogs: a.cfg.MaxTrailingLogs}
	next := make(map[string]health)
	a.loop.probes = make(map[string]string)
	for i, m := range targets {
		st, err := answers[i].st, answers[i].err
		if err == nil && st != nil {
			a.log.Debug("reconcile: stats", "server", m.ID, "incarnation", st.Incarnation, "cluster_id", st.ClusterID)
			a.learnIncarnation(m.ID, st.Incarnation)
			a.loop.probes[m.ID] = st.ClusterID
		} else {
			a.log.Debug("reconcile: stats unavailable", "server", m.ID, "err", err)
		}
		if !nonVoter[m.ID] {
			continue
		}
		healthy, reason := judgeHealth(st, leaderStats.LastTerm, leaderStats.LastIndex, limits)
		if err != nil {
			healthy, reason = false, fmt.Sprintf("stats unavailable: %v", err)
		}
		prev, seen := a.loop.health[m.ID]
		next[m.ID] = trackHealth(prev, seen, healthy, reason, now)
	}
	a.loop.health = next
}

// statsTargets lists the alive members to ask for stats, and which of them
// are non-voters of the configuration.
func (a *Agent) statsTargets(servers []Server, members []Member) ([]Member, map[string]bool) {
	configured := make(map[string]Server, len(servers))
	for _, s := range servers {
		configured[s.ID] = s
	}
	var targets []Member
	nonVoter := make(map[string]bool)
	for _, m := range members {
		if m.Status != StatusAlive || m.ID == a.cfg.NodeID {
			continue
		}
		s, inConfig := configured[m.ID]
		targets = append(targets, m)
		if inConfig && !s.Voter {
			nonVoter[m.ID] = true
		}
	}
	return targets, nonVoter
}

// logHolds logs each hold decision once while it stays in force, and
// forgets failures of actions no longer planned, so that a decision that
// lapses and comes back is logged again.
func (a *Agent) logHolds(holds, acts []decision) {
	current := make(map[string]bool, len(holds))
	for _, h := range holds {
		k := h.Key()
		current[k] = true
		if !a.loop.logged[k] {
			a.log.Info(h.Reason, "decision", h.Kind.String(), "hold", string(h.Hold), "server", h.ID)
			a.decisions.count(h, "")
		}
	}
	a.loop.logged = current
	planned := make(map[string]bool, len(acts))
	for _, d := range acts {
		planned[d.Key()] = true
	}
	for k := range a.loop.failed {
		if !planned[k] {
			delete(a.loop.failed, k)
		}
	}
}

// apply makes one raft configuration change and reports whether it took.
// It waits for the commit until ctx ends (Close).
func (a *Agent) apply(ctx context.Context, d decision) bool {
	var index uint64
	var err error
	switch d.Kind {
	case actAdd:
		index, err = a.raft.AddNonvoter(ctx, d.ID, d.Addr)
	case actPromote:
		index, err = a.raft.AddVoter(ctx, d.ID, d.Addr)
	case actUpdateAddress:
		if d.Voter {
			index, err = a.raft.AddVoter(ctx, d.ID, d.Addr)
		} else {
			index, err = a.raft.AddNonvoter(ctx, d.ID, d.Addr)
		}
	case actRemove:
		index, err = a.raft.RemoveServer(ctx, d.ID)
	default:
		panic(fmt.Sprintf("membership: apply of %v", d.Kind)) // plan returns only these kinds as actions
	}
	if err != nil {
		if k := d.Key(); a.loop.failed[k] != err.Error() {
			a.loop.failed[k] = err.Error()
			a.log.Warn("membership change failed; will re-plan", "decision", d.Kind.String(),
				"server", d.ID, "reason", d.Reason, "err", err)
			a.decisions.count(d, "failed")
		}
		return false
	}
	a.log.Info(d.Reason, "decision", d.Kind.String(), "server", d.ID, "addr", d.Addr, "index", index)
	a.decisions.count(d, "applied")
	return true
}
