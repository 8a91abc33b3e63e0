package node

import (
	"context"
	"sync"
	"time"

	"github.com/metad/metad/clock"
)

// leaderLogSize is how many leader changes the status page lists: enough
// to see a flapping leader, bounded so a long-lived process keeps little.
const leaderLogSize = 10

// leaderChange is one change of the leader this node saw: a new leader
// (another server, or a new term of the same one), or none known (empty
// LeaderID).
type leaderChange struct {
	At       time.Time
	LeaderID string
	Term     uint64
}

// leaderLog keeps the last leaderLogSize leader changes, newest last. It
// is fed by polling (watchLeader), so a leadership shorter than one poll
// may be missed; the metric metad_raft_leader_changes_total, fed by raft's
// observer, counts every one.
type leaderLog struct {
	mu      sync.Mutex
	changes []leaderChange
	seen    bool // an observation was made: the first one is recorded too
}

// observe records (id, term) at time at if it differs from the last
// change recorded: a new leader, a new term of the same leader, or the
// loss of the leader (id empty; its term is not compared).
func (l *leaderLog) observe(id string, term uint64, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen {
		last := l.changes[len(l.changes)-1]
		if last.LeaderID == id && (id == "" || last.Term == term) {
			return
		}
	}
	l.seen = true
	if len(l.changes) == leaderLogSize {
		l.changes = append(l.changes[:0], l.changes[1:]...)
	}
	l.changes = append(l.changes, leaderChange{At: at, LeaderID: id, Term: term})
}

// recent returns the recorded changes, newest first.
func (l *leaderLog) recent() []leaderChange {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]leaderChange, len(l.changes))
	for i, c := range l.changes {
		out[len(out)-1-i] = c
	}
	return out
}

// watchLeader feeds n.leaders from the store's view of the leader every
// health interval until ctx ends.
func (n *Server) watchLeader(ctx context.Context, every time.Duration) {
	clock.Every(ctx, serverClock, every, func() bool {
		id, _ := n.store.Leader()
		n.leaders.observe(id, n.store.Term(), serverClock.Now())
		return true
	})
}
