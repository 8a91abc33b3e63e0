package peer

import (
	"context"
	"errors"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/api/reasons"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/raftstore"
)

// notLeaderStatus is a leader's NOT_LEADER as it arrives over the wire.
func notLeaderStatus(t *testing.T, hint string) error {
	t.Helper()
	st, err := status.New(codes.Unavailable, "not the leader").WithDetails(&errdetails.ErrorInfo{
		Reason: metadpb.Reason_NOT_LEADER.String(), Metadata: map[string]string{"leader_id": hint}})
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

// chain is a cluster whose leader keeps moving: this node is never the
// leader, and every leader a proposal is forwarded to has just lost it,
// until the forward numbered settlesAt (0: never) succeeds.
type chain struct {
	t         *testing.T
	settlesAt int
	forwards  []string // the leaders forwarded to, in order
}

func (c *chain) local(context.Context) (*fsmpb.Result, error) {
	return nil, &raftstore.NotLeaderError{LeaderID: "n" + string(rune('2'+len(c.forwards)))}
}

func (c *chain) forward(_ context.Context, leaderID string) (*fsmpb.Result, error) {
	c.forwards = append(c.forwards, leaderID)
	if len(c.forwards) == c.settlesAt {
		return &fsmpb.Result{Version: 7}, nil
	}
	return nil, notLeaderStatus(c.t, "elsewhere")
}

// TestForwardingStopsAfterMaxForwards: a proposal on a follower of a
// cluster electing over and over follows at most MaxForwards leaders, then
// fails with ErrTooManyForwards, still the last leader's NOT_LEADER on the
// wire (so the client retries it).
func TestForwardingStopsAfterMaxForwards(t *testing.T) {
	c := &chain{t: t}
	res, err := followLeader(context.Background(), "n1", c.local, c.forward)
	if res != nil || !errors.Is(err, ErrTooManyForwards) {
		t.Fatalf("endless chain: %v, %v; want ErrTooManyForwards", res, err)
	}
	if len(c.forwards) != MaxForwards {
		t.Fatalf("forwarded %d times (%v), want MaxForwards = %d", len(c.forwards), c.forwards, MaxForwards)
	}
	if r := reasons.FromError(err); r != metadpb.Reason_NOT_LEADER {
		t.Fatalf("reason %v, want NOT_LEADER kept", r)
	}
	if st, _ := status.FromError(err); st.Code() != codes.Unavailable {
		t.Fatalf("code %v, want the NOT_LEADER's Unavailable", st.Code())
	}
}

// TestForwardingFollowsAMovedLeader: a leader that moved during a forward
// sends the proposal on to the next one, which commits it.
func TestForwardingFollowsAMovedLeader(t *testing.T) {
	c := &chain{t: t, settlesAt: MaxForwards}
	res, err := followLeader(context.Background(), "n1", c.local, c.forward)
	if err != nil || res.GetVersion() != 7 {
		t.Fatalf("chain settling at forward %d: %v, %v", MaxForwards, res, err)
	}
	if want := []string{"n2", "n3", "n4"}; len(c.forwards) != len(want) || c.forwards[0] != want[0] || c.forwards[2] != want[2] {
		t.Fatalf("forwarded to %v, want %v (each leader the last one named)", c.forwards, want)
	}
}

// TestProposalsThatNeedNoForwardStayHere: a local result, a refusal other
// than NOT_LEADER, a NOT_LEADER naming no leader or this node itself, and
// a forward's failure other than NOT_LEADER are all answered as they are.
func TestProposalsThatNeedNoForwardStayHere(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name     string
		local    error
		forward  error
		forwards int
	}{
		{"leader here", nil, nil, 0},
		{"other failure", raftstore.ErrTimeout, nil, 0},
		{"no leader known", &raftstore.NotLeaderError{}, nil, 0},
		{"stale hint naming this node", &raftstore.NotLeaderError{LeaderID: "n1"}, nil, 0},
		{"forward fails otherwise", &raftstore.NotLeaderError{LeaderID: "n2"}, boom, 1},
	}
	for _, c := range cases {
		forwards := 0
		_, err := followLeader(context.Background(), "n1",
			func(context.Context) (*fsmpb.Result, error) { return &fsmpb.Result{}, c.local },
			func(context.Context, string) (*fsmpb.Result, error) { forwards++; return nil, c.forward })
		want := c.local
		if c.forwards > 0 {
			want = c.forward
		}
		if forwards != c.forwards || !errors.Is(err, want) {
			t.Errorf("%s: %d forwards, err %v; want %d, %v", c.name, forwards, err, c.forwards, want)
		}
	}
}

// TestForwardUnansweredNamesTheLeader: a forward the leader never answers
// (a transport failure: no ErrorInfo) comes back as an UnansweredError
// naming the leader asked, so api says LEADERSHIP_LOST, indeterminate;
// an answer of the leader's own passes through Unanswered unchanged.
func TestForwardUnansweredNamesTheLeader(t *testing.T) {
	cut := status.Error(codes.Unavailable, "connection refused")
	_, err := followLeader(context.Background(), "n1",
		func(context.Context) (*fsmpb.Result, error) {
			return nil, &raftstore.NotLeaderError{LeaderID: "n2", LeaderAddr: "127.0.0.1:9"}
		},
		func(context.Context, string) (*fsmpb.Result, error) { return nil, cut })
	var ue *UnansweredError
	if !errors.As(err, &ue) || ue.LeaderID != "n2" || ue.LeaderAddr != "127.0.0.1:9" || !errors.Is(err, ErrUnanswered) || !errors.Is(err, cut) {
		t.Fatalf("unanswered forward: %v; want an UnansweredError naming n2 at 127.0.0.1:9 around the transport's error", err)
	}
	answered := notLeaderStatus(t, "n3")
	if got := Unanswered(answered, "n2", "a"); got != answered { //nolint:errorlint // identity is the point
		t.Fatalf("Unanswered changed the leader's own answer: %v", got)
	}
	if Unanswered(nil, "n2", "a") != nil {
		t.Fatal("Unanswered(nil) is not nil")
	}
}

// TestForwardCutOffByTheDeadlineIsTheDeadline: a forward the caller's
// deadline cut off is context.DeadlineExceeded (DEADLINE_EXCEEDED in
// api's table), not the leader's silence.
func TestForwardCutOffByTheDeadlineIsTheDeadline(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := followLeader(ctx, "n1",
		func(context.Context) (*fsmpb.Result, error) { return nil, &raftstore.NotLeaderError{LeaderID: "n2"} },
		func(context.Context, string) (*fsmpb.Result, error) {
			return nil, status.Error(codes.Canceled, "context canceled")
		})
	var ue *UnansweredError
	if !errors.Is(err, context.Canceled) || errors.As(err, &ue) {
		t.Fatalf("a forward cut off by the caller: %v; want context.Canceled, not an UnansweredError", err)
	}
}
