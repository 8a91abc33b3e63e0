package api

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"
)

// readiness is the last readiness verdict's reason ("" when ready), for
// /readyz.
type readiness struct {
	reason atomic.Pointer[string]
}

// ready decides whether this node should take traffic (DESIGN.md §9):
//
//   - it is a member (voter or non-voter) of its latest configuration: a
//     removed server, or a fresh one not added yet, is not;
//   - a leader is known;
//   - the leader's barrier of this term has applied (on the leader), or
//     (on a follower) this node has applied within CaughtUpSlack entries
//     of the leader's commit index, which it asks the leader for. Its own
//     commit index is no measure: a restarted follower has it at 0 until
//     the leader next commits, and would look caught up at applied 0.
//
// It returns the reason when not ready.
func (s *Server) ready(ctx context.Context) (bool, string) {
	st := s.store.Status()
	if !s.isMember(st.NodeID) {
		return false, "not a member of the raft configuration"
	}
	if st.LeaderID == "" {
		return false, "no leader known"
	}
	if st.Leader {
		if !st.ReadReady {
			return false, "leader whose term's barrier has not applied yet"
		}
		return true, ""
	}
	ctx, cancel := context.WithTimeout(ctx, max(s.cfg.HealthInterval, 100*time.Millisecond))
	defer cancel()
	ls, err := s.peers.NodeStatus(ctx, st.LeaderID, false)
	if err != nil {
		return false, fmt.Sprintf("leader %s's commit index unavailable: %v", st.LeaderID, err)
	}
	applied := s.store.AppliedIndex()
	if applied+s.cfg.CaughtUpSlack < ls.CommitIndex {
		return false, fmt.Sprintf("applied index %d, more than %d behind leader %s's commit index %d",
			applied, s.cfg.CaughtUpSlack, st.LeaderID, ls.CommitIndex)
	}
	return true, ""
}

func (s *Server) isMember(id string) bool {
	servers, err := s.store.Configuration()
	if err != nil {
		return false
	}
	for _, sv := range servers {
		if sv.ID == id {
			return true
		}
	}
	return false
}

// NotReadyReason says why this node does not report SERVING ("" if it
// does), for /readyz.
func (s *Server) NotReadyReason() string {
	if p := s.readiness.reason.Load(); p != nil {
		return *p
	}
	return "starting"
}
