package raftstore

import (
	"context"
	"fmt"

	"github.com/hashicorp/raft"
)

// LeadershipEvent reports a change of this node's leadership. Leader true
// means this node leads Term and its barrier for Term is applied: its state
// machine reflects every write any earlier leader acknowledged, so
// leader-only work (repair, GC, membership) may start. Leader false means
// its leadership of Term ended; leader-only work must stop.
type LeadershipEvent struct {
	Leader bool
	Term   uint64
}

// leaderTerm is one ready leadership: its term, and a context cancelled
// when it ends.
type leaderTerm struct {
	term   uint64
	ctx    context.Context
	cancel context.CancelFunc
}

// leadership returns the current term and whether this node leads in it.
// The three reads are pinned to one moment: raft sets the term before the
// state when it becomes leader, and the state before the term when it steps
// down, so a Leader state read between two equal term reads was the
// leadership of that term.
func (s *Store) leadership() (term uint64, leader bool) {
	for {
		t1 := s.raft.CurrentTerm()
		st := s.raft.State()
		if t2 := s.raft.CurrentTerm(); t1 == t2 {
			return t1, st == raft.Leader
		}
	}
}

// leadershipLoop is the one goroutine that follows raft's leadership: it
// applies the barrier of each new term, opens the read gate, and tells
// subscribers. Observations come through a non-blocking observer (raft drops
// them rather than wait for us), so a periodic poll reconciles anything
// missed.
func (s *Store) leadershipLoop() {
	defer s.loops.Done()
	obs := make(chan raft.Observation, 16)
	observer := raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.RaftState, raft.LeaderObservation:
			return true
		}
		return false
	})
	s.raft.RegisterObserver(observer)
	defer s.raft.DeregisterObserver(observer)
	tick := wall.NewTimer(s.cfg.LeadershipPollInterval)
	defer tick.Stop()
	for {
		s.reconcileLeadership()
		select {
		case <-obs:
		case <-tick.C():
			tick.Reset(s.cfg.LeadershipPollInterval)
		case <-s.closing:
			s.setLeadership(nil)
			return
		}
	}
}

// seenLeader is the leader this node last saw and in which term; lost
// means none is known right now.
type seenLeader struct {
	id   string
	term uint64
	lost bool
}

// noteLeader logs and counts a change of the leader this node sees: one
// line per new leader (another server, or a new term of the same one), one
// when none is known any more.
func (s *Store) noteLeader() {
	id, addr := s.Leader()
	term := s.raft.CurrentTerm()
	switch {
	case id == "":
		if s.seen.id != "" && !s.seen.lost {
			s.logger.Info("raftstore: no leader known", "last_leader", s.seen.id, "term", term)
			s.seen.lost = true
		}
	case id == s.seen.id && term == s.seen.term:
		s.seen.lost = false // the same leadership, heard from again
	default:
		s.metrics.leaderChanges.Inc()
		s.logger.Info("raftstore: leader elected", "leader", id, "leader_addr", addr, "term", term,
			"self", id == s.cfg.NodeID)
		s.seen = seenLeader{id: id, term: term}
	}
}

// reconcileLeadership brings the store's view of leadership up to raft's.
func (s *Store) reconcileLeadership() {
	s.noteLeader()
	term, leader := s.leadership()
	s.lmu.Lock()
	cur := s.lead
	s.lmu.Unlock()
	if cur != nil && (!leader || term != cur.term) {
		s.setLeadership(nil)
		cur = nil
	}
	if !leader || cur != nil {
		return
	}
	if err := s.applyBarrier(term); err != nil {
		// Retried on the next observation or tick while still leader.
		s.logger.Debug("raftstore: barrier of new term failed", "term", term, "err", err)
		return
	}
	if t, ok := s.leadership(); !ok || t != term {
		return
	}
	s.gateTerm.Store(term)
	s.setLeadership(&leaderTerm{term: term})
}

// applyBarrier appends a barrier entry and waits until this node's state
// machine has applied it. It is committed in the current term, so when it
// is applied, every entry before it (everything earlier leaders
// acknowledged) is committed and applied here too.
func (s *Store) applyBarrier(term uint64) error {
	if s.beforeBarrier != nil {
		s.beforeBarrier(term, s.closing)
	}
	f := s.raft.ApplyLog(raft.Log{Extensions: barrierMarker}, s.cfg.ApplyTimeout)
	_, err := s.await(context.Background(), f, s.closing, nil)
	return err
}

// setLeadership replaces the current ready leadership (nil: none) and
// tells subscribers, in order: first the end of the old one, then the new.
func (s *Store) setLeadership(next *leaderTerm) {
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	s.lmu.Lock()
	prev := s.lead
	if prev == nil && next == nil {
		s.lmu.Unlock()
		return
	}
	if next != nil {
		next.ctx, next.cancel = context.WithCancel(context.Background())
	}
	s.lead = next
	close(s.leadSig)
	s.leadSig = make(chan struct{})
	subs := make([]func(LeadershipEvent), 0, len(s.subs))
	for _, fn := range s.subs {
		subs = append(subs, fn)
	}
	s.lmu.Unlock()
	if prev != nil {
		prev.cancel()
		s.logger.Info("raftstore: leadership ended", "term", prev.term)
		for _, fn := range subs {
			fn(LeadershipEvent{Leader: false, Term: prev.term})
		}
	}
	if next != nil {
		s.logger.Info("raftstore: leading, barrier applied", "term", next.term, "applied_index", s.AppliedIndex())
		for _, fn := range subs {
			fn(LeadershipEvent{Leader: true, Term: next.term})
		}
	}
}

// Subscribe calls fn on every leadership change from now on, in order, from
// the store's leadership goroutine; if this node is a ready leader now, fn
// is first called with that. fn must return quickly and must not call
// Subscribe or Close. After cancel returns, fn is called at most once more (an
// event already being delivered). On Close a leader gets a final
// Leader=false event.
func (s *Store) Subscribe(fn func(LeadershipEvent)) (cancel func()) {
	s.emitMu.Lock()
	defer s.emitMu.Unlock()
	s.lmu.Lock()
	id := s.nextSub
	s.nextSub++
	s.subs[id] = fn
	cur := s.lead
	s.lmu.Unlock()
	if cur != nil {
		fn(LeadershipEvent{Leader: true, Term: cur.term})
	}
	return func() {
		s.lmu.Lock()
		delete(s.subs, id)
		s.lmu.Unlock()
	}
}

// AwaitLeadership blocks until this node is a ready leader (see
// LeadershipEvent) and returns a context that is cancelled when that
// leadership ends, with its term. It is the simplest way to run leader-only
// work:
//
//	for {
//		lctx, term, err := store.AwaitLeadership(ctx)
//		if err != nil {
//			return err
//		}
//		runLeaderWork(lctx, term)
//	}
func (s *Store) AwaitLeadership(ctx context.Context) (context.Context, uint64, error) {
	for {
		s.lmu.Lock()
		cur, sig := s.lead, s.leadSig
		s.lmu.Unlock()
		if cur != nil {
			return cur.ctx, cur.term, nil
		}
		select {
		case <-sig:
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("%w: waiting for leadership: %w", ErrTimeout, ctx.Err())
		case <-s.closing:
			return nil, 0, ErrClosed
		}
	}
}

// leaderReady returns nil if this node leads and its barrier for the
// current term is applied, and the term; otherwise the error to give a
// reader.
func (s *Store) leaderReady() (uint64, error) {
	if s.isClosing() {
		return 0, ErrClosed
	}
	term, leader := s.leadership()
	if !leader {
		return 0, s.notLeaderError()
	}
	if s.gateTerm.Load() != term {
		return 0, fmt.Errorf("%w: barrier of term %d not applied yet", ErrNotReady, term)
	}
	return term, nil
}
