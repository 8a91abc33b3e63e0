package workload

import (
	"errors"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/metad/metad/client"
)

// TestSettledKnowsAnOpenOutcome: settle calls a write again only while
// its outcome is open, and stops at the state machine's answer.
func TestSettledKnowsAnOpenOutcome(t *testing.T) {
	refused := &client.Error{Code: codes.FailedPrecondition, Reason: "APPEND_NOT_AT_END", Definite: true}
	noLeader := &client.Error{Code: codes.Unavailable, Reason: "NO_LEADER", Definite: true}
	broken := &client.Error{Code: codes.Unavailable, Reason: "UNAVAILABLE"}
	for _, c := range []struct {
		name          string
		err           error
		indeterminate bool
		want          bool
	}{
		{"succeeded", nil, true, true},
		{"refused by the state machine after a lost attempt", refused, true, true},
		{"no leader, and no attempt reached one", noLeader, false, true},
		{"no leader after an attempt that may have applied", noLeader, true, false},
		{"a broken connection", broken, true, false},
		{"not a metad error", errors.New("dial: connection refused"), true, false},
	} {
		if got := settled(c.err, &attempts{indeterminate: c.indeterminate}); got != c.want {
			t.Errorf("%s: settled = %v, want %v", c.name, got, c.want)
		}
	}
}
