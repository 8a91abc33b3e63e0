package membership

import (
	"fmt"
	"sync"
	"time"
)

// Tombstone says that an operator removed a server (remove-peer): the
// incarnation Incarnation of node NodeID is never re-added by the
// reconcile loop, whatever gossip says. An empty Incarnation (the leader
// did not know it when the server was removed) covers every incarnation
// of the id until an operator lifts the tombstone.
type Tombstone struct {
	NodeID      string
	Incarnation string
}

// Covers reports whether the tombstone names incarnation inc of id. An
// unknown incarnation ("": the server did not answer yet, or runs a
// release that does not report one) is covered: not re-adding is the safe
// side.
func (t Tombstone) Covers(id, inc string) bool {
	return t.NodeID == id && (t.Incarnation == "" || inc == "" || t.Incarnation == inc)
}

// RecentRemovalWindow is the level-1 fallback of tombstones. Until every
// server runs a release that replicates tombstones (feature level 2), the
// leader that carried out a remove-peer remembers it, in memory, for this
// long and does not re-add the removed incarnation meanwhile. A new
// leader, or a restart, forgets it: the level-1 guarantee is weaker, and
// README says so.
const RecentRemovalWindow = 72 * time.Hour

// removals is what the agent knows about removed servers and the
// incarnations it has seen. The loop and the API (NoteRemoved,
// Incarnation) use it from different goroutines.
type removals struct {
	mu sync.Mutex
	// recent maps node id to the operator removals this node carried out
	// as leader (the level-1 fallback).
	recent map[string]recentRemoval
	// incarnations maps node id to the incarnation its gRPC address last
	// answered with (Hooks.FetchStats).
	incarnations map[string]string
}

type recentRemoval struct {
	at          time.Time
	incarnation string
}

func newRemovals() *removals {
	return &removals{recent: make(map[string]recentRemoval), incarnations: make(map[string]string)}
}

// NoteRemoved records that an operator removed incarnation inc ("" if
// unknown) of node id through this node while it led. The reconcile loop
// then does not re-add it for RecentRemovalWindow even without a
// replicated tombstone (feature level 1).
func (a *Agent) NoteRemoved(id, inc string) {
	a.removals.mu.Lock()
	defer a.removals.mu.Unlock()
	a.removals.recent[id] = recentRemoval{at: a.clock.Now(), incarnation: inc}
}

// ForgetRemoved drops the level-1 memory of a removal (an operator lifted
// the tombstone) and reports whether there was one.
func (a *Agent) ForgetRemoved(id string) bool {
	a.removals.mu.Lock()
	defer a.removals.mu.Unlock()
	_, had := a.removals.recent[id]
	delete(a.removals.recent, id)
	return had
}

// Incarnation is the incarnation node id last reported to this node's
// reconcile loop ("" if none: not seen while this node led, or a release
// that does not report one).
func (a *Agent) Incarnation(id string) string {
	a.removals.mu.Lock()
	defer a.removals.mu.Unlock()
	return a.removals.incarnations[id]
}

// LearnIncarnation records the incarnation id reported when asked outside
// the reconcile loop (the Cluster service's Members), so what Members
// lists is what a removal tombstones.
func (a *Agent) LearnIncarnation(id, inc string) { a.learnIncarnation(id, inc) }

func (a *Agent) learnIncarnation(id, inc string) {
	if inc == "" {
		return
	}
	a.removals.mu.Lock()
	defer a.removals.mu.Unlock()
	a.removals.incarnations[id] = inc
}

// removedCheck is the planner's Removed input: the replicated tombstones
// (Hooks.Tombstones, level 2) and this leader's memory of recent
// removals (level 1).
func (a *Agent) removedCheck(now time.Time) func(Member) (string, bool) {
	var tombs []Tombstone
	if a.hooks.Tombstones != nil {
		tombs = a.hooks.Tombstones()
	}
	a.removals.mu.Lock()
	recent := make(map[string]recentRemoval, len(a.removals.recent))
	for id, r := range a.removals.recent {
		if now.Sub(r.at) < RecentRemovalWindow {
			recent[id] = r
		} else {
			delete(a.removals.recent, id)
		}
	}
	incs := make(map[string]string, len(a.removals.incarnations))
	for id, inc := range a.removals.incarnations {
		incs[id] = inc
	}
	a.removals.mu.Unlock()
	return func(m Member) (string, bool) {
		inc := incs[m.ID]
		for _, t := range tombs {
			if t.Covers(m.ID, inc) {
				return fmt.Sprintf("incarnation %q of %s was removed by an operator (tombstone %q); it rejoins only with a wiped data dir (a new incarnation) or once the tombstone is lifted (metad raft untombstone %s)",
					inc, m.ID, t.Incarnation, m.ID), true
			}
		}
		if r, ok := recent[m.ID]; ok && (Tombstone{NodeID: m.ID, Incarnation: r.incarnation}).Covers(m.ID, inc) {
			return fmt.Sprintf("incarnation %q of %s was removed by an operator %v ago (remembered by this leader for %v: feature level 1 keeps no tombstones)",
				inc, m.ID, now.Sub(r.at).Round(time.Second), RecentRemovalWindow), true
		}
		return "", false
	}
}
