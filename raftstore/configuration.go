package raftstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// This file is the configuration-change half of the store: what membership
// (through node's adapter) and the Cluster API need from raft, in this
// package's types and sentinels, so that no other package imports
// hashicorp/raft.

// Configuration returns the latest raft configuration (possibly not yet
// committed).
//
// It has no index: raft v1.7.3's GetConfiguration always reports index 0,
// so the changes below cannot be made conditional on the configuration
// they were planned from (raft's prevIndex). What keeps a plan from acting
// on a stale configuration is that raft accepts one uncommitted
// configuration change at a time and membership re-plans after each.
func (s *Store) Configuration() ([]Server, error) {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrRaftShutdown) {
			return nil, ErrClosed
		}
		return nil, fmt.Errorf("raftstore: configuration: %w", err)
	}
	var out []Server
	for _, sv := range f.Configuration().Servers {
		out = append(out, Server{ID: string(sv.ID), Address: string(sv.Address), Suffrage: suffrageOf(sv.Suffrage)})
	}
	return out, nil
}

// AddVoter adds server id at address as a voter, or makes a non-voter of
// that id a voter, or moves a voter to a new address. It returns the index of the new configuration entry
// once committed. It works on the leader only; the errors are those of
// RemoveServer.
func (s *Store) AddVoter(ctx context.Context, id, address string) (uint64, error) {
	return s.changeConfiguration(ctx, "add voter "+id, nil, func(timeout time.Duration) raft.IndexFuture {
		return s.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(address), 0, timeout)
	})
}

// AddNonvoter adds server id at address as a non-voter (or moves a
// non-voter to a new address; a voter stays a voter). As AddVoter.
func (s *Store) AddNonvoter(ctx context.Context, id, address string) (uint64, error) {
	return s.changeConfiguration(ctx, "add non-voter "+id, nil, func(timeout time.Duration) raft.IndexFuture {
		return s.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(address), 0, timeout)
	})
}

// RemoveServer removes server id from the configuration and returns the
// index of the new configuration entry once committed. It works on the
// leader only. Errors: ErrNotLeader (with the hint) or ErrNoLeader on a
// non-leader; ErrUnknownServer if id is not configured; ErrLastVoter if id
// is the only voter; ErrConfigurationRefused if raft refuses it for a
// reason of its own; ErrTimeout if raft did not take the change
// within ApplyTimeout — all definite; ErrLeadershipLost, and ErrTimeout or
// ErrClosed while waiting for the commit, are indeterminate.
func (s *Store) RemoveServer(ctx context.Context, id string) (uint64, error) {
	return s.changeConfiguration(ctx, "remove "+id, checkRemoval(id), func(timeout time.Duration) raft.IndexFuture {
		return s.raft.RemoveServer(raft.ServerID(id), 0, timeout)
	})
}

// checkRemoval refuses, before raft sees it, a removal raft would refuse
// with an unclassified error: a server that is not configured, or the last
// voter (raft needs at least one).
func checkRemoval(id string) func([]Server) error {
	return func(servers []Server) error {
		var target *Server
		voters := 0
		for i, sv := range servers {
			if sv.ID == id {
				target = &servers[i]
			}
			if sv.Suffrage == Voter {
				voters++
			}
		}
		switch {
		case target == nil:
			return fmt.Errorf("%w: %q is not in the configuration", ErrUnknownServer, id)
		case target.Suffrage == Voter && voters == 1:
			return fmt.Errorf("%w: %q is the only voter; raft cannot run without one", ErrLastVoter, id)
		}
		return nil
	}
}

// changeConfiguration runs one configuration change on the leader: check
// (if not nil) may refuse it against the latest configuration; start hands
// it to raft with an enqueue timeout (ApplyTimeout, or less if ctx ends
// sooner); the commit is then awaited under ctx.
func (s *Store) changeConfiguration(ctx context.Context, what string, check func([]Server) error, start func(time.Duration) raft.IndexFuture) (uint64, error) {
	if s.isClosing() {
		return 0, ErrClosed
	}
	if _, leader := s.leadership(); !leader {
		return 0, s.notLeaderError()
	}
	if check != nil {
		servers, err := s.Configuration()
		if err != nil {
			return 0, err
		}
		if err := check(servers); err != nil {
			return 0, err
		}
	}
	timeout := s.cfg.ApplyTimeout
	if dl, ok := ctx.Deadline(); ok && dl.Sub(wall.Now()) < timeout {
		timeout = dl.Sub(wall.Now())
	}
	if timeout <= 0 {
		return 0, fmt.Errorf("%w: deadline passed before %s", ErrTimeout, what)
	}
	f := start(timeout)
	done, err := s.await(ctx, f, s.raftDown, nil)
	switch {
	case !done && errors.Is(err, ErrClosed):
		return 0, indeterminate(fmt.Errorf("%w: while waiting for %s", ErrClosed, what))
	case !done:
		return 0, indeterminate(fmt.Errorf("%w: waiting for %s: %w", ErrTimeout, what, err))
	case err != nil:
		return 0, s.classifyChangeError(what, err)
	}
	return f.Index(), nil
}

// classifyChangeError maps an error of raft's configuration-change future
// to this package's sentinels.
func (s *Store) classifyChangeError(what string, err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		return s.notLeaderError()
	case errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w: leadership transfer in progress", ErrNoLeader)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: raft did not accept %s within ApplyTimeout (%v)", ErrTimeout, what, s.cfg.ApplyTimeout)
	case errors.Is(err, raft.ErrLeadershipLost):
		return indeterminate(fmt.Errorf("%w: %s: %w", ErrLeadershipLost, what, err))
	case errors.Is(err, raft.ErrRaftShutdown):
		return indeterminate(fmt.Errorf("%w: %s: %w", ErrClosed, what, err))
	default:
		// raft's own checks (another change still uncommitted, a
		// duplicate address): refused before the entry was appended.
		return fmt.Errorf("%w: %s: %w", ErrConfigurationRefused, what, err)
	}
}

// Progress is how far this node's log has got, as the leader judges a
// non-voter's health (raft-autopilot's ServerStats).
type Progress struct {
	// LastContact is the time since this node last heard from a leader: 0
	// on the leader itself, negative if it never did.
	LastContact time.Duration
	// LastTerm is the term of the last log entry.
	LastTerm uint64
	// LastIndex is the index of the last log entry (or of the snapshot,
	// if that is newer).
	LastIndex uint64
}

// Progress returns this node's log progress. raft publishes the last
// entry's term and the contact time only in its stats map, so they are
// parsed from it; ErrBadStats means raft changed that format.
func (s *Store) Progress() (Progress, error) {
	return progressFromStats(s.raft.Stats(), s.raft.LastIndex())
}

func progressFromStats(stats map[string]string, lastIndex uint64) (Progress, error) {
	out := Progress{LastIndex: lastIndex}
	var err error
	switch lc := stats["last_contact"]; lc {
	case "never":
		out.LastContact = -1
	case "0":
		out.LastContact = 0 // the leader itself
	default:
		if out.LastContact, err = time.ParseDuration(lc); err != nil {
			return Progress{}, fmt.Errorf("%w: last_contact %q: %w", ErrBadStats, lc, err)
		}
	}
	if out.LastTerm, err = strconv.ParseUint(stats["last_log_term"], 10, 64); err != nil {
		return Progress{}, fmt.Errorf("%w: last_log_term %q: %w", ErrBadStats, stats["last_log_term"], err)
	}
	return out, nil
}
