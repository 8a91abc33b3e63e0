package workload

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/metad/metad/client"
	"github.com/metad/metad/jepsen/history"
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

// TestDiskFullIsADefiniteFailure: a write the leader refused DISK_FULL
// (its disk below the reserve, before proposing) did not happen and
// observed nothing: fail, never a refusal the model would have to explain;
// after an attempt that may have applied it stays open (info), since the
// refusal says nothing of that attempt, and settle calls it again.
func TestDiskFullIsADefiniteFailure(t *testing.T) {
	full := fmt.Errorf("%w (the deadline ended its retry: %w)",
		&client.Error{Code: codes.ResourceExhausted, Reason: "DISK_FULL", Definite: true, Message: "disk full: the filesystem of data dir /d/n1 ..."},
		context.DeadlineExceeded)
	for _, c := range []struct {
		name          string
		indeterminate bool
		want          history.Status
	}{
		{"refused on every attempt", false, history.Fail},
		{"refused after an attempt that may have applied", true, history.Info},
	} {
		var op history.Op
		classify(&op, full, &attempts{indeterminate: c.indeterminate}, true)
		if op.Status != c.want || op.Reason != "DISK_FULL" {
			t.Errorf("%s: status %s reason %q, want %s DISK_FULL", c.name, op.Status, op.Reason, c.want)
		}
		if got := settled(full, &attempts{indeterminate: c.indeterminate}); got != (c.want != history.Info) {
			t.Errorf("%s: settled = %v", c.name, got)
		}
	}
}
