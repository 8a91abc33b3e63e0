package membership

import (
	"context"
	"fmt"
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
	now := time.Now()
	members := a.table.snapshot()
	a.trackAbsent(servers, members, now)
	a.trackHealth(ctx, servers, members, now)
	acts, holds := plan(planInput{
		Now: now, Leader: a.cfg.NodeID, Servers: servers, Members: members,
		AbsentSince: a.loop.absentSince, Health: a.loop.health,
		DeadServerTimeout: a.cfg.DeadServerTimeout, ServerStabilizationTime: a.cfg.ServerStabilizationTime,
		MinQuorum: a.cfg.MinQuorum,
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

// trackHealth fetches stats for every alive non-voter and updates its
// tracked health. Only non-voters need it: health gates promotion, and
// removal is decided by gossip status alone.
func (a *Agent) trackHealth(ctx context.Context, servers []Server, members []Member, now time.Time) {
	byID := make(map[string]Member, len(members))
	for _, m := range members {
		byID[m.ID] = m
	}
	leaderStats, err := a.raft.Stats()
	if err != nil {
		a.log.Warn("reconcile: cannot read own raft stats", "err", err)
		return
	}
	limits := healthLimits{LastContactThreshold: a.cfg.LastContactThreshold, MaxTrailingLogs: a.cfg.MaxTrailingLogs}
	next := make(map[string]health)
	for _, s := range servers {
		m, ok := byID[s.ID]
		if s.Voter || !ok || m.Status != StatusAlive {
			continue
		}
		fetchCtx, cancel := context.WithTimeout(ctx, max(a.cfg.ReconcileInterval/2, 50*time.Millisecond))
		st, err := a.hooks.FetchStats(fetchCtx, m)
		cancel()
		healthy, reason := judgeHealth(st, leaderStats.LastTerm, leaderStats.LastIndex, limits)
		if err != nil {
			healthy, reason = false, fmt.Sprintf("stats unavailable: %v", err)
		}
		prev, seen := a.loop.health[s.ID]
		next[s.ID] = trackHealth(prev, seen, healthy, reason, now)
	}
	a.loop.health = next
}

// logHolds logs each hold decision once while it stays in force, and
// forgets failures of actions no longer planned, so that a decision that
// lapses and comes back is logged again.
func (a *Agent) logHolds(holds, acts []decision) {
	current := make(map[string]bool, len(holds))
	for _, h := range holds {
		k := h.key()
		current[k] = true
		if !a.loop.logged[k] {
			a.log.Info(h.Reason, "decision", h.Kind.String(), "hold", string(h.Hold), "server", h.ID)
		}
	}
	a.loop.logged = current
	planned := make(map[string]bool, len(acts))
	for _, d := range acts {
		planned[d.key()] = true
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
		if k := d.key(); a.loop.failed[k] != err.Error() {
			a.loop.failed[k] = err.Error()
			a.log.Warn("membership change failed; will re-plan", "decision", d.Kind.String(),
				"server", d.ID, "reason", d.Reason, "err", err)
		}
		return false
	}
	a.log.Info(d.Reason, "decision", d.Kind.String(), "server", d.ID, "addr", d.Addr, "index", index)
	return true
}
