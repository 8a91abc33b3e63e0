package peer

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/api/reasons"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/raftstore"
)

// MaxForwards bounds how many leaders one proposal follows: a leader that
// moved while a forward was under way answers NOT_LEADER with the new
// one, which is tried next, up to this many forwards in all. A cluster
// electing over and over then answers NOT_LEADER (ErrTooManyForwards
// says so in the message), which the client retries. Each forward lands
// on the leader's Peer.Propose, which never forwards again, so a stale
// hint cannot loop.
const MaxForwards = 3

// ErrTooManyForwards wraps the last NOT_LEADER of a proposal that followed
// MaxForwards moving leaders; the status (code, reason, leader hint) is
// the last leader's.
var ErrTooManyForwards = fmt.Errorf("peer: the leader moved %d times while the proposal was forwarded", MaxForwards)

// Propose proposes cmd here if this node leads, else on the leader,
// following a moving leader up to MaxForwards times. The command is
// encoded once, at the first forward, and the leader stamps those bytes
// as they are (raftstore.ProposeEncoded). api's writes and readpath's pin
// and failure reports propose through it.
func (n *Node) Propose(ctx context.Context, cmd *fsmpb.Command) (*fsmpb.Result, error) {
	var encoded []byte
	forward := func(ctx context.Context, leaderID string) (*fsmpb.Result, error) {
		if encoded == nil {
			var err error
			if encoded, err = proto.Marshal(cmd); err != nil {
				return nil, err
			}
		}
		return n.client.Forward(ctx, leaderID, encoded)
	}
	local := func(ctx context.Context) (*fsmpb.Result, error) { return n.store.Propose(ctx, cmd) }
	return followLeader(ctx, n.store.ID(), local, forward)
}

// followLeader is Propose's loop, apart from the store and the network:
// propose locally; on NOT_LEADER naming another node, forward there; on
// that leader's NOT_LEADER, start again, at most MaxForwards forwards.
func followLeader(ctx context.Context, self string,
	local func(context.Context) (*fsmpb.Result, error),
	forward func(ctx context.Context, leaderID string) (*fsmpb.Result, error),
) (*fsmpb.Result, error) {
	var err error
	for range MaxForwards {
		var res *fsmpb.Result
		res, err = local(ctx)
		var nle *raftstore.NotLeaderError
		if !errors.As(err, &nle) || nle.LeaderID == "" || nle.LeaderID == self {
			return res, err
		}
		res, err = forward(ctx, nle.LeaderID)
		if err != nil && reasons.FromError(err) == metadpb.Reason_REASON_UNSPECIFIED {
			// The leader did not answer (unreachable, the call cut
			// off): the command may have reached its log.
			return nil, unanswered(ctx, err, nle.LeaderID, nle.LeaderAddr)
		}
		if reasons.FromError(err) != metadpb.Reason_NOT_LEADER {
			return res, err
		}
	}
	return nil, fmt.Errorf("%w: %w", ErrTooManyForwards, err)
}

// UnansweredError is a call to the leader that got no answer of metad's
// own (no ErrorInfo reason): the leader could not be reached, or the
// connection broke or the deadline passed under the call. Whether a
// forwarded command took effect is unknown. api's table maps it to
// LEADERSHIP_LOST, indeterminate, naming the leader that was asked.
type UnansweredError struct {
	// Err is the transport's failure.
	Err error
	// LeaderID and LeaderAddr name the leader the call went to.
	LeaderID   string
	LeaderAddr string
}

func (e *UnansweredError) Error() string {
	return fmt.Sprintf("peer: no answer from the leader %q at %q (the call may have taken effect): %v", e.LeaderID, e.LeaderAddr, e.Err)
}

func (e *UnansweredError) Unwrap() error { return e.Err }

// ErrUnanswered is what errors.Is finds in every UnansweredError.
var ErrUnanswered = errors.New("peer: the leader did not answer")

// Is makes errors.Is(err, ErrUnanswered) true.
func (e *UnansweredError) Is(target error) bool { return target == ErrUnanswered }

// unanswered is Unanswered, unless the call ran out of time or was
// cancelled: that is the caller's deadline (DEADLINE_EXCEEDED, also
// indeterminate), not the leader's silence.
//
// The deadline travels with the call, so the leader may give up on it a
// moment before this node's own timer fires: a bare DEADLINE_EXCEEDED or
// CANCELLED status is the same cut-off, seen from the other side.
func unanswered(ctx context.Context, err error, id, addr string) error {
	if reasons.FromError(err) != metadpb.Reason_REASON_UNSPECIFIED {
		return err
	}
	cause := ctx.Err()
	switch status.Code(err) {
	case codes.DeadlineExceeded:
		cause = context.DeadlineExceeded
	case codes.Canceled:
		cause = context.Canceled
	}
	if cause != nil {
		return fmt.Errorf("%w: waiting for the leader %q: %w", cause, id, err)
	}
	return Unanswered(err, id, addr)
}

// UnansweredCall is Unanswered for a call made with ctx: a call cut off
// by ctx's deadline or cancellation is that (context.DeadlineExceeded or
// context.Canceled wrapped), not an UnansweredError.
func UnansweredCall(ctx context.Context, err error, id, addr string) error {
	if err == nil {
		return nil
	}
	return unanswered(ctx, err, id, addr)
}

// Unanswered wraps a failed call to the leader (id, addr) as an
// UnansweredError unless the leader answered it with a reason of metad's
// own, which is returned as it is; nil stays nil.
func Unanswered(err error, id, addr string) error {
	if err == nil || reasons.FromError(err) != metadpb.Reason_REASON_UNSPECIFIED {
		return err
	}
	return &UnansweredError{Err: err, LeaderID: id, LeaderAddr: addr}
}
