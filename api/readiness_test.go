package api

import (
	"errors"
	"strings"
	"testing"
)

// TestReadyVerdict is the readiness rule as a table. The restarted
// follower is the case readiness once got wrong: its own commit index
// restarts at 0, so comparing its applied index with that said ready at
// applied 0; against the leader's commit index it is not ready until it
// has caught up.
func TestReadyVerdict(t *testing.T) {
	follower := readyInput{member: true, leaderID: "n1", slack: 1000}
	with := func(in readyInput, f func(*readyInput)) readyInput { f(&in); return in }
	for _, tc := range []struct {
		name   string
		in     readyInput
		ready  bool
		reason string
	}{
		{"raft state still opening", readyInput{opening: true}, false, "restoring the raft state"},
		{"opening wins over the rest", with(follower, func(in *readyInput) { in.opening, in.applied, in.leaderCommit = true, 5000, 5000 }), false, "restoring"},
		{"not a member", with(follower, func(in *readyInput) { in.member = false }), false, "not a member"},
		{"no leader known", with(follower, func(in *readyInput) { in.leaderID = "" }), false, "no leader known"},
		{"leader before its barrier", readyInput{member: true, leaderID: "n1", leader: true}, false, "barrier"},
		{"leader after its barrier", readyInput{member: true, leaderID: "n1", leader: true, readReady: true}, true, ""},
		{"restarted follower at applied 0", with(follower, func(in *readyInput) { in.leaderCommit = 5000 }), false, "applied index 0, more than 1000 behind leader n1's commit index 5000"},
		{"follower just outside the slack", with(follower, func(in *readyInput) { in.applied, in.leaderCommit = 3999, 5000 }), false, "behind"},
		{"follower within the slack", with(follower, func(in *readyInput) { in.applied, in.leaderCommit = 4000, 5000 }), true, ""},
		{"follower caught up", with(follower, func(in *readyInput) { in.applied, in.leaderCommit = 5000, 5000 }), true, ""},
		{"leader unreachable", with(follower, func(in *readyInput) { in.applied, in.leaderErr = 5000, errors.New("deadline") }), false, "commit index unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ready, reason := readyVerdict(tc.in)
			if ready != tc.ready || !strings.Contains(reason, tc.reason) || (tc.ready && reason != "") {
				t.Errorf("readyVerdict = %v %q, want %v %q", ready, reason, tc.ready, tc.reason)
			}
		})
	}
}
