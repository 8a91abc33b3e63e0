package membership

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// ServerStats is what the leader needs from a server to judge its health.
// It has the fields of raft-autopilot's autopilot.ServerStats; it is
// restated here because importing raft-autopilot would link its mocks, and
// with them testify, into metad.
type ServerStats struct {
	// LastContact is the time since the server last heard from a leader;
	// 0 on the leader itself, negative if it never did.
	LastContact time.Duration
	// LastTerm is the term of the server's last log entry.
	LastTerm uint64
	// LastIndex is the index of the server's last log entry.
	LastIndex uint64
}

// ErrBadStats is wrapped by StatsFromRaft errors.
var ErrBadStats = errors.New("membership: unparsable raft stats")

// StatsSource is the part of *raft.Raft that StatsFromRaft reads.
type StatsSource interface {
	Stats() map[string]string
}

// StatsFromRaft reads this node's autopilot stats from its own raft: how
// long since it heard from a leader, and its last log term and index.
//
// It is what a node answers when the leader's FetchStats asks it over the
// network (cmd/metad wires that RPC), and what tests call directly on the
// other in-process node. A node that never heard from a leader reports
// LastContact -1, which judgeHealth treats as unhealthy, as autopilot does.
func StatsFromRaft(r StatsSource) (ServerStats, error) {
	s := r.Stats()
	var out ServerStats
	var err error
	switch lc := s["last_contact"]; lc {
	case "never":
		out.LastContact = -1
	case "0":
		out.LastContact = 0 // the leader itself
	default:
		if out.LastContact, err = time.ParseDuration(lc); err != nil {
			return ServerStats{}, fmt.Errorf("%w: last_contact %q: %v", ErrBadStats, lc, err)
		}
	}
	if out.LastTerm, err = strconv.ParseUint(s["last_log_term"], 10, 64); err != nil {
		return ServerStats{}, fmt.Errorf("%w: last_log_term %q: %v", ErrBadStats, s["last_log_term"], err)
	}
	if out.LastIndex, err = strconv.ParseUint(s["last_log_index"], 10, 64); err != nil {
		return ServerStats{}, fmt.Errorf("%w: last_log_index %q: %v", ErrBadStats, s["last_log_index"], err)
	}
	return out, nil
}
