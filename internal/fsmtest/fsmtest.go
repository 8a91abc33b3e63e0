// Package fsmtest gives tests of the leader-only loops (repair, gc) a Raft
// stand-in: one fsm.Machine behind a mutex, so reads are trivially
// linearizable and proposals apply in order with increasing indexes and
// stamps. It is for tests only.
package fsmtest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

// Store is one machine with Raft's read and propose shape.
type Store struct {
	mu    sync.Mutex
	m     *fsm.Machine
	index uint64
	now   time.Time
	// BeforePropose, if set, runs once before the next proposal, to let a
	// test change the state between a loop's planning and its commit.
	BeforePropose func()
}

// New returns a store over an empty machine with invariant checks on.
func New() *Store {
	return &Store{m: fsm.New(fsm.WithInvariantChecks()), now: time.Unix(1_700_000_000, 0)}
}

// Read runs fn on the machine.
func (s *Store) Read(ctx context.Context, fn func(*fsm.Machine)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s.m)
	return nil
}

// Propose applies cmd at the next index.
func (s *Store) Propose(ctx context.Context, cmd *fsmpb.Command) (*fsmpb.Result, error) {
	if f := s.BeforePropose; f != nil {
		s.BeforePropose = nil
		f()
	}
	return s.Apply(cmd), nil
}

// Apply applies cmd, stamping it one millisecond after the previous one.
func (s *Store) Apply(cmd *fsmpb.Command) *fsmpb.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.index++
	s.now = s.now.Add(time.Millisecond)
	cmd.StampUnixNano = s.now.UnixNano()
	return s.m.Apply(s.index, cmd)
}

// Advance moves machine time forward by d (through a harmless command).
func (s *Store) Advance(d time.Duration) {
	s.mu.Lock()
	s.now = s.now.Add(d)
	s.mu.Unlock()
	s.Apply(&fsmpb.Command{Op: &fsmpb.Command_CreateStream{CreateStream: &fsmpb.CreateStream{Name: "fsmtest-clock"}}})
}

// Must applies cmd and fails the test if it is refused.
func (s *Store) Must(t testing.TB, cmd *fsmpb.Command) *fsmpb.Result {
	t.Helper()
	r := s.Apply(cmd)
	if r.Rejection != nil {
		t.Fatalf("%T refused: %v", cmd.Op, r.Rejection)
	}
	return r
}

// Machine returns the machine; callers must not use it concurrently with
// Apply.
func (s *Store) Machine() *fsm.Machine { return s.m }
