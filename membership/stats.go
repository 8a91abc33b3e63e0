package membership

import "time"

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
	// Incarnation is the server's incarnation id (its data dir's), ""
	// from a release that does not report one.
	Incarnation string
	// ClusterID is the id of the cluster the server belongs to, "" if it
	// knows none (a new server, a cluster below feature level 2, or a
	// release before cluster ids).
	ClusterID string
}
