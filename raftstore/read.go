package raftstore

import (
	"context"
	"fmt"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/tracing"
)

// Read runs fn on the local state machine, under its read lock, once that
// state is at least as new as every write acknowledged before Read was
// called: linearizable (G1), on any node.
//
// The read index comes from this node's ReadIndex if it leads, otherwise
// from the leader's through Peers; then Read waits (ctx-bounded) until the
// local machine has applied it. Every error is retryable (Retryable); fn's
// own error is returned as is. fn must not block, keep the *fsm.Machine, or
// call back into the Store.
func (s *Store) Read(ctx context.Context, fn func(*fsm.Machine) error) (err error) {
	ctx, end := tracing.Start(ctx, "raft.read")
	defer func() { end(err) }()
	start := wall.Now()
	index, err := s.readIndexAnywhere(ctx)
	if err != nil {
		return err
	}
	if err := s.fsm.waitApplied(ctx, index, s.closing); err != nil {
		return err
	}
	if err := s.fsm.read(fn); err != nil {
		return err
	}
	s.metrics.readSeconds.Observe(clock.Since(wall, start).Seconds())
	return nil
}

// ReadLocal runs fn on the local state as it is, with no coordination: it
// may be arbitrarily stale (a partitioned node serves its old state). For
// status and debugging only; never for answers that promise G1.
func (s *Store) ReadLocal(fn func(*fsm.Machine) error) error {
	return s.fsm.read(fn)
}

func (s *Store) readIndexAnywhere(ctx context.Context) (uint64, error) {
	if s.isClosing() {
		return 0, ErrClosed
	}
	if _, leader := s.leadership(); leader {
		return s.ReadIndex(ctx)
	}
	id, _ := s.Leader()
	switch id {
	case "":
		return 0, fmt.Errorf("%w: this node (%s) knows of none", ErrNoLeader, s.cfg.NodeID)
	case s.cfg.NodeID:
		return s.ReadIndex(ctx)
	}
	index, err := s.peers.ReadIndex(ctx, id)
	switch {
	case err == nil:
		return index, nil
	case Retryable(err):
		return 0, fmt.Errorf("raftstore: read index from leader %s: %w", id, err)
	case ctx.Err() != nil:
		return 0, fmt.Errorf("%w: read index from leader %s: %w", ErrTimeout, id, err)
	default:
		// A transport failure: for the caller, the leader is unreachable.
		return 0, fmt.Errorf("%w: leader %s unreachable: %w", ErrNoLeader, id, err)
	}
}

// ReadIndex returns a linearizable read index: a log index covering every
// write acknowledged before the call. It works on the leader only (followers
// reach it through Peers.ReadIndex). It refuses with ErrNotReady until the
// barrier of the current term is applied, then joins the next leadership
// confirmation round; the rounds are batched (see readLoop). The caller
// must wait until its state machine has applied the index before reading.
func (s *Store) ReadIndex(ctx context.Context) (uint64, error) {
	if _, err := s.leaderReady(); err != nil {
		return 0, err
	}
	req := &readRequest{ctx: ctx, reply: make(chan readReply, 1)}
	select {
	case s.reads <- req:
	default:
		return 0, fmt.Errorf("%w: %d reads already wait for a confirmation round (MaxWaitingReads)",
			ErrOverloaded, cap(s.reads))
	}
	select {
	case r := <-req.reply:
		return r.index, r.err
	case <-ctx.Done():
		return 0, fmt.Errorf("%w: waiting for leadership confirmation: %w", ErrTimeout, ctx.Err())
	case <-s.closing:
		return 0, ErrClosed
	}
}

// ConfirmLeadership is the follower's half of a confirmation round: it
// answers yes iff, at one moment during the call, this node follows
// leaderID in exactly term. A yes means this node had not yet moved to a
// later term when it answered, so no later leader can have been elected
// with this node's vote before that moment.
func (s *Store) ConfirmLeadership(term uint64, leaderID string) bool {
	t1 := s.raft.CurrentTerm()
	st := s.raft.State()
	_, id := s.raft.LeaderWithID()
	t2 := s.raft.CurrentTerm()
	return t1 == term && t2 == term && st == raft.Follower && string(id) == leaderID
}

// ReadIndexStats counts leadership-confirmation rounds and the reads they
// served since Open; Reads/Rounds is the batching factor.
type ReadIndexStats struct {
	Rounds uint64
	Reads  uint64
}

// ReadIndexStats returns the counters of this node's confirmation rounds.
func (s *Store) ReadIndexStats() ReadIndexStats {
	return ReadIndexStats{Rounds: s.readRounds.Load(), Reads: s.readsServed.Load()}
}

type readRequest struct {
	ctx   context.Context
	reply chan readReply // buffered 1: readLoop never blocks on a reader
}

type readReply struct {
	index uint64
	err   error
}

// readLoop runs confirmation rounds one at a time. A round takes every read
// queued when it starts (up to MaxReadsPerRound), so a read that arrives
// while a round is in flight waits for the next one: a round's replies can
// only vouch for reads that began before its requests were sent.
func (s *Store) readLoop() {
	defer s.loops.Done()
	batch := make([]*readRequest, 0, s.cfg.MaxReadsPerRound)
	for {
		select {
		case req := <-s.reads:
			batch = append(batch[:0], req)
		case <-s.closing:
			return
		}
		batch = s.collectReads(batch)
		if len(batch) == 0 {
			continue
		}
		index, err := s.confirmRound()
		// Counted before the replies go out, so a caller that has its
		// answer sees its read in ReadIndexStats.
		s.metrics.readBatch.Observe(float64(len(batch)))
		if err != nil {
			s.metrics.readRounds.WithLabelValues("failed").Inc()
		} else {
			s.metrics.readRounds.WithLabelValues("confirmed").Inc()
		}
		s.readRounds.Add(1)
		s.readsServed.Add(uint64(len(batch)))
		for _, req := range batch {
			req.reply <- readReply{index: index, err: err}
		}
	}
}

// collectReads adds every read already queued, up to MaxReadsPerRound, and
// drops those whose caller has given up.
func (s *Store) collectReads(batch []*readRequest) []*readRequest {
fill:
	for len(batch) < s.cfg.MaxReadsPerRound {
		select {
		case req := <-s.reads:
			batch = append(batch, req)
		default:
			break fill
		}
	}
	live := batch[:0]
	for _, req := range batch {
		if req.ctx.Err() == nil {
			live = append(live, req)
		}
	}
	return live
}

// confirmRound is one round of the ReadIndex protocol:
//
//  1. this node leads term T and T's barrier is applied (the gate);
//  2. index := commit index, read after every read of the batch began;
//  3. ask every other voter of the latest configuration whether it is in
//     term T following this node, with requests sent now, so no reply can
//     predate the reads; a quorum of yes (self included) confirms that no
//     other leader had been elected when those replies were sent, so index
//     covers every write acknowledged before the reads began;
//  4. check again that this node still leads T.
//
// raft.VerifyLeader is not used: it counts replies to heartbeats sent
// before the read began (see doc.go, "Why not VerifyLeader").
func (s *Store) confirmRound() (uint64, error) {
	term, err := s.leaderReady()
	if err != nil {
		return 0, err
	}
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return 0, fmt.Errorf("%w: configuration: %w", ErrLeadershipLost, err)
	}
	var voters []raft.Server
	self := false
	for _, sv := range f.Configuration().Servers {
		if sv.Suffrage == raft.Voter {
			voters = append(voters, sv)
			self = self || string(sv.ID) == s.cfg.NodeID
		}
	}
	if !self {
		return 0, fmt.Errorf("%w: not a voter in the latest configuration", ErrLeadershipLost)
	}
	index := s.raft.CommitIndex()
	need := len(voters)/2 + 1
	if yes := s.confirmWithVoters(term, voters, need); yes < need {
		return 0, fmt.Errorf("%w: term %d confirmed by %d of %d voters, %d needed",
			ErrLeadershipLost, term, yes, len(voters), need)
	}
	if t, leader := s.leadership(); !leader || t != term {
		return 0, fmt.Errorf("%w: term %d ended during confirmation", ErrLeadershipLost, term)
	}
	return index, nil
}

// confirmWithVoters asks the other voters in parallel and returns the
// number of yes answers, self included. It stops early once the quorum is
// reached or can no longer be, and always joins the goroutines it started.
func (s *Store) confirmWithVoters(term uint64, voters []raft.Server, need int) int {
	yes := 1 // self
	if yes >= need {
		return yes
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ReadRoundTimeout)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	replies := make(chan bool, len(voters))
	pending := 0
	for _, v := range voters {
		if string(v.ID) == s.cfg.NodeID {
			continue
		}
		pending++
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			ok, err := s.peers.ConfirmLeadership(ctx, id, term, s.cfg.NodeID)
			if err != nil {
				s.logger.Debug("raftstore: leadership confirmation failed", "peer", id, "term", term, "err", err)
			}
			replies <- ok && err == nil
		}(string(v.ID))
	}
	for ; pending > 0 && yes < need && yes+pending >= need; pending-- {
		select {
		case ok := <-replies:
			if ok {
				yes++
			}
		case <-ctx.Done():
			return yes
		case <-s.closing:
			return yes
		}
	}
	return yes
}
