package raftstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/tracing"
)

// Propose replicates cmd through raft and returns the state machine's
// Result. It works on the leader only. It sets cmd.StampUnixNano to this
// leader's wall clock just before handing the command to raft (the only
// time the state machine ever sees), so callers need not set it.
//
// A deterministic refusal is a successful call: the Result carries the
// Rejection and is the same on every replica. Errors are classified (table
// in doc.go): Indeterminate(err) says the command may still take effect;
// otherwise it certainly did not.
func (s *Store) Propose(ctx context.Context, cmd *fsmpb.Command) (*fsmpb.Result, error) {
	return s.propose(ctx, cmd, func(stamp int64) ([]byte, error) {
		cmd.StampUnixNano = stamp
		data, err := proto.Marshal(cmd)
		if err != nil {
			return nil, fmt.Errorf("raftstore: encode command: %w", err)
		}
		return data, nil
	})
}

// ProposeEncoded is Propose for a command encoded elsewhere: a follower's
// forward. The bytes are decoded once, only to refuse (ErrBadCommand,
// definite) what no replica could apply — a committed undecodable entry
// stops every replica — and are then stamped as they are
// (fsm.StampEncoded), without a re-encode.
func (s *Store) ProposeEncoded(ctx context.Context, data []byte) (*fsmpb.Result, error) {
	cmd, err := fsm.DecodeCommand(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadCommand, err)
	}
	return s.propose(ctx, cmd, func(stamp int64) ([]byte, error) { return fsm.StampEncoded(data, stamp), nil })
}

// propose hands the command encode returns, stamped with stamp, to raft
// once the checks that make a refusal definite have passed; cmd is the
// command decoded, for those checks.
func (s *Store) propose(ctx context.Context, cmd *fsmpb.Command, encode func(stamp int64) ([]byte, error)) (*fsmpb.Result, error) {
	if s.isClosing() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%w: before proposing: %w", ErrTimeout, err)
	}
	// Before leadership: a follower whose own disk is low refuses growth
	// instead of forwarding it (it could not store the entry either), so
	// whichever node a client writes to names its full disk.
	if s.cfg.Space != nil && fsm.Grows(cmd) {
		if err := s.cfg.Space.Refuse(); err != nil {
			return nil, fmt.Errorf("%w: %s refused: %w", ErrDiskFull, fsm.OpName(cmd), err)
		}
	}
	term, leader := s.leadership()
	if !leader {
		return nil, s.notLeaderError()
	}
	if err := s.admitLevel(ctx, cmd, term); err != nil {
		return nil, err
	}
	// One span from here to applied, under the caller's (a traced call's)
	// span: the leader's Raft apply of the request.
	ctx, end := tracing.Start(ctx, "raft.propose", tracing.String("metad.command", fsm.OpName(cmd)))
	res, err := s.apply(ctx, cmd, encode)
	end(err)
	return res, err
}

// admitLevel refuses cmd (ErrFeatureLevel, definite) if it needs a higher
// feature level than the state holds. The level only grows, so a command
// admitted here is still admissible when applied (G15: no voter meets a
// command it cannot apply).
//
// A refusal must not rest on a stale level. A new leader's state lags what
// earlier terms committed until its term's barrier is applied: a restarted
// node restores its snapshot and applies the rest of its log only once an
// entry of its own term commits, so for a while it may not yet have applied
// the SetFeatureLevel the cluster acknowledged long ago. So before refusing,
// admitLevel waits for this term's barrier (within ctx; the leadership
// loop's poll bounds each wait), and only the level read after it decides.
func (s *Store) admitLevel(ctx context.Context, cmd *fsmpb.Command, term uint64) error {
	need := fsm.RequiredLevel(cmd)
	for {
		if need <= s.fsm.level.Load() {
			return nil
		}
		s.lmu.Lock()
		sig := s.leadSig
		s.lmu.Unlock()
		if s.gateTerm.Load() == term {
			// The barrier is applied, so the level read from here on is at
			// least the one the cluster had acknowledged before this term.
			if have := s.fsm.level.Load(); need > have {
				return fmt.Errorf("%w: %s needs level %d, the cluster is at %d until every voter runs a release that applies it",
					ErrFeatureLevel, fsm.OpName(cmd), need, have)
			}
			return nil
		}
		if t, leader := s.leadership(); !leader || t != term {
			return s.notLeaderError()
		}
		poll := wall.NewTimer(s.cfg.LeadershipPollInterval)
		select {
		case <-sig:
		case <-poll.C():
		case <-ctx.Done():
			poll.Stop()
			return fmt.Errorf("%w: before proposing, waiting for this term's barrier to learn the feature level: %w", ErrTimeout, ctx.Err())
		case <-s.closing:
			poll.Stop()
			return ErrClosed
		}
		poll.Stop()
	}
}

// apply is propose on a leader, past the checks of the command itself.
func (s *Store) apply(ctx context.Context, cmd *fsmpb.Command, encode func(stamp int64) ([]byte, error)) (*fsmpb.Result, error) {
	select {
	case s.proposals <- struct{}{}:
	default:
		return nil, fmt.Errorf("%w: %d proposals already pending (MaxPendingProposals)", ErrOverloaded, cap(s.proposals))
	}
	release := func() { <-s.proposals }
	timeout := s.cfg.ApplyTimeout
	if dl, ok := ctx.Deadline(); ok && dl.Sub(wall.Now()) < timeout {
		timeout = dl.Sub(wall.Now())
	}
	if timeout <= 0 {
		release()
		return nil, fmt.Errorf("%w: deadline passed before proposing", ErrTimeout)
	}
	data, err := plantedEncode(cmd, encode)(plantedStamp().UnixNano()) // the fault seam (faults_off.go): encode, at wall.Now
	if err != nil {
		release()
		return nil, err
	}
	start := wall.Now()
	f := s.raft.Apply(data, timeout)
	// The token goes back when raft resolves f, even if we stop waiting.
	done, err := s.await(ctx, f, s.raftDown, func() {
		s.metrics.applySeconds.Observe(clock.Since(wall, start).Seconds())
		release()
	})
	if !done {
		// The command may already be in the log: we only stopped waiting.
		if errors.Is(err, ErrClosed) {
			return nil, indeterminate(fmt.Errorf("%w: while waiting for commit", ErrClosed))
		}
		return nil, indeterminate(fmt.Errorf("%w: waiting for commit: %w", ErrTimeout, err))
	}
	if err != nil {
		return nil, s.classifyApplyError(err)
	}
	if err, ok := f.Response().(error); ok {
		// Committed, but this binary cannot apply it (fsm.ErrUnsupported):
		// the node is stopping, and a newer binary will apply it.
		return nil, indeterminate(err)
	}
	res, ok := f.Response().(*fsmpb.Result)
	if !ok || res == nil {
		panic(fmt.Sprintf("raftstore: committed command answered %T, not *fsmpb.Result", f.Response()))
	}
	return res, nil
}

// classifyApplyError maps an error of raft's apply future to this package's
// sentinels, deciding definite or indeterminate from where raft fails it.
func (s *Store) classifyApplyError(err error) error {
	if failed := s.disk.failure.err(); failed != nil {
		// The log write failed (durable.go): the node is stopping. raft's
		// log cache quotes the error, so it is taken from the latch.
		return indeterminate(fmt.Errorf("%w: %w", ErrClosed, failed))
	}
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		// Refused by a follower or candidate loop, or by a leader already
		// stepping down, before the command was given an index.
		return s.notLeaderError()
	case errors.Is(err, raft.ErrLeadershipTransferInProgress):
		// Refused before dispatch while leadership moves away.
		return fmt.Errorf("%w: leadership transfer in progress", ErrNoLeader)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		// Never entered raft's apply queue.
		return fmt.Errorf("%w: raft did not accept the command within ApplyTimeout (%v)", ErrTimeout, s.cfg.ApplyTimeout)
	case errors.Is(err, raft.ErrLeadershipLost):
		// In the log, not known to be committed: a later leader may
		// commit it or not.
		return indeterminate(fmt.Errorf("%w: %w", ErrLeadershipLost, err))
	case errors.Is(err, raft.ErrRaftShutdown):
		// Either before enqueue or while waiting: raft does not say which.
		return indeterminate(fmt.Errorf("%w: %w", ErrClosed, err))
	default:
		return indeterminate(fmt.Errorf("raftstore: propose: %w", err))
	}
}
