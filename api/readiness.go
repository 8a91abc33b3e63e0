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

// ready decides whether this node should take traffic; it
// gathers what readyVerdict needs, asking the leader for its commit index
// only on a follower that is otherwise ready. It returns the reason when
// not ready.
func (s *Server) ready(ctx context.Context) (bool, string) {
	st := s.store.Status()
	in := readyInput{
		member:    s.isMember(st.NodeID),
		leaderID:  st.LeaderID,
		leader:    st.Leader,
		readReady: st.ReadReady,
		slack:     s.cfg.CaughtUpSlack,
	}
	if in.member && in.leaderID != "" && !in.leader {
		ctx, cancel := context.WithTimeout(ctx, max(s.cfg.HealthInterval, 100*time.Millisecond))
		defer cancel()
		ls, err := s.peer.Client().NodeStatus(ctx, st.LeaderID, false)
		in.leaderErr = err
		if err == nil {
			in.leaderCommit = ls.CommitIndex
		}
		in.applied = s.store.AppliedIndex()
	}
	return readyVerdict(in)
}

// OpeningVerdict is the readiness verdict of a node still opening its raft
// state (restoring the latest snapshot), before its Server exists: node
// serves it at /readyz meanwhile.
func OpeningVerdict() (bool, string) { return readyVerdict(readyInput{opening: true}) }

// readyInput is what readiness is decided from.
type readyInput struct {
	// opening: the node is still opening its raft state; nothing else is
	// known yet.
	opening   bool
	member    bool   // in this node's latest configuration (voter or not)
	leaderID  string // the leader this node knows, "" if none
	leader    bool   // this node leads
	readReady bool   // (leader) its term's barrier has applied
	// On a follower: its applied index, and the leader's commit index as
	// the leader answered it (or why it did not).
	applied, leaderCommit uint64
	leaderErr             error
	slack                 uint64 // api.Config.CaughtUpSlack
}

// readyVerdict is the readiness rule:
//
//   - its raft state is open: a node restoring its latest snapshot knows
//     neither its configuration nor its applied index yet;
//   - a member (voter or non-voter) of its latest configuration: a removed
//     server, or a fresh one not added yet, is not;
//   - a leader is known;
//   - the leader's barrier of this term has applied (on the leader), or
//     (on a follower) this node has applied within slack entries of the
//     leader's commit index. Its own commit index is no measure: a
//     restarted follower has it at 0 until the leader next tells it, and
//     would look caught up at applied 0.
func readyVerdict(in readyInput) (bool, string) {
	switch {
	case in.opening:
		return false, "restoring the raft state (latest snapshot) before serving"
	case !in.member:
		// A wiped server is in the leader's configuration, but holds none
		// until the leader's snapshot or log reaches it.
		return false, "not a member of the raft configuration this node holds (yet: a new or wiped server learns it from the leader)"
	case in.leaderID == "":
		return false, "no leader known"
	case in.leader && !in.readReady:
		return false, "leader whose term's barrier has not applied yet"
	case in.leader:
		return true, ""
	case in.leaderErr != nil:
		return false, fmt.Sprintf("leader %s's commit index unavailable: %v", in.leaderID, in.leaderErr)
	case in.applied+in.slack < in.leaderCommit:
		return false, fmt.Sprintf("applied index %d, more than %d behind leader %s's commit index %d",
			in.applied, in.slack, in.leaderID, in.leaderCommit)
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
