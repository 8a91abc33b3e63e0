package raftstore

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error this package returns wraps exactly one of
// them (plus, for waits, the context's error), so callers classify with
// errors.Is, never by text. doc.go has the table of which call returns which
// sentinel and whether the failure is definite or indeterminate.
var (
	// ErrNotLeader: this node is not the leader; *NotLeaderError carries the
	// hint. Definite. Retryable at the leader.
	ErrNotLeader = errors.New("raftstore: not the leader")
	// ErrNoLeader: no leader is known (election in progress, or this node is
	// cut off). Definite. Retryable.
	ErrNoLeader = errors.New("raftstore: no leader")
	// ErrNotReady: this node leads, but its term's barrier has not been
	// applied yet, so its commit index may not cover every write the previous
	// leader acknowledged. Reads only. Retryable.
	ErrNotReady = errors.New("raftstore: leader not ready for linearizable reads")
	// ErrLeadershipLost: leadership ended while the request was in flight
	// (Propose: indeterminate), or a quorum did not confirm it (reads).
	// Retryable.
	ErrLeadershipLost = errors.New("raftstore: leadership lost")
	// ErrTimeout: a deadline passed. Definite when raised before the command
	// entered the log, indeterminate after. Retryable.
	ErrTimeout = errors.New("raftstore: timed out")
	// ErrOverloaded: a named bound (MaxPendingProposals, MaxWaitingReads) is
	// full. Definite. Retryable after backing off.
	ErrOverloaded = errors.New("raftstore: overloaded")
	// ErrClosed: the store is closing or closed. Definite when refused before
	// enqueue, indeterminate when the store closed under a waiting Propose.
	// Retryable at another node.
	ErrClosed = errors.New("raftstore: closed")
	// ErrAlreadyBootstrapped: Bootstrap found existing raft state and did
	// nothing. Definite; not an error for a restarting node.
	ErrAlreadyBootstrapped = errors.New("raftstore: already bootstrapped")
	// ErrUnknownServer: a server id is not in the raft configuration.
	// Definite. Not retryable as is.
	ErrUnknownServer = errors.New("raftstore: unknown server")
	// ErrFeatureLevel: the command needs a higher cluster feature level
	// than the state holds (fsm.RequiredLevel): some voter runs a release
	// that could not apply it. Definite. Not retryable until every voter is
	// upgraded.
	ErrFeatureLevel = errors.New("raftstore: command needs a higher cluster feature level")
	// ErrDiskFull: the command grows the state and this leader's data dir
	// is below its disk reserve (Config.Space). Definite; retryable once
	// space is freed, which the node notices by itself.
	ErrDiskFull = errors.New("raftstore: disk full")
	// ErrLastVoter: removing this server would leave no voter, and raft
	// cannot run without one. Definite. Not retryable as is.
	ErrLastVoter = errors.New("raftstore: the last voter cannot be removed")
	// ErrAlreadyLeader: a leadership transfer named the leader itself.
	// Definite. Not retryable as is.
	ErrAlreadyLeader = errors.New("raftstore: the target already leads")
	// ErrConfigurationRefused: raft refused a configuration change for a
	// reason of its own (another change not yet committed, a duplicate
	// address). Definite.
	ErrConfigurationRefused = errors.New("raftstore: configuration change refused")
	// ErrTransferFailed: raft gave up a leadership transfer (the target
	// did not catch up or take over in time, or could not be reached),
	// or abandoned it and this node was elected again. Leadership stayed
	// or came back here: definite. Retryable.
	ErrTransferFailed = errors.New("raftstore: leadership transfer failed")
	// ErrBadCommand: ProposeEncoded was given bytes that do not decode as
	// a command. Definite. Not retryable.
	ErrBadCommand = errors.New("raftstore: undecodable command")
	// ErrBadStats: raft's stats map could not be read (Progress). Means
	// raft changed its format; should not happen.
	ErrBadStats = errors.New("raftstore: unparsable raft stats")
)

// NotLeaderError says this node is not the leader and who is, as far as it
// knows. errors.Is(err, ErrNotLeader) holds for it. LeaderID and LeaderAddr
// are empty when no leader is known (then the store returns ErrNoLeader
// instead, so a NotLeaderError from this package always carries a hint).
type NotLeaderError struct {
	LeaderID   string
	LeaderAddr string
}

func (e *NotLeaderError) Error() string {
	return fmt.Sprintf("raftstore: not the leader (leader is %q at %q)", e.LeaderID, e.LeaderAddr)
}

// Is makes errors.Is(err, ErrNotLeader) true.
func (e *NotLeaderError) Is(target error) bool { return target == ErrNotLeader }

// indeterminateError marks a failure after which the command may or may
// not take effect: it entered the log before the caller stopped waiting.
type indeterminateError struct{ err error }

func (e *indeterminateError) Error() string { return e.err.Error() + " (outcome unknown)" }
func (e *indeterminateError) Unwrap() error { return e.err }

// indeterminate wraps err as indeterminate.
func indeterminate(err error) error { return &indeterminateError{err: err} }

// Indeterminate reports whether a Propose error leaves the outcome unknown:
// the command reached the log and may still commit. The caller must not
// assume it failed; retrying with the same request id is safe (the state
// machine deduplicates by request id). Every other Propose error is
// definite: the command did not and will not take effect.
func Indeterminate(err error) bool {
	var ie *indeterminateError
	return errors.As(err, &ie)
}

// Retryable reports whether the same request may succeed if sent again,
// here or at another node, after a short wait. Reads are always safe to
// retry; a Propose that failed Indeterminate is safe to retry only with the
// same request id.
func Retryable(err error) bool {
	for _, s := range []error{ErrNotLeader, ErrNoLeader, ErrNotReady, ErrLeadershipLost,
		ErrTimeout, ErrOverloaded, ErrClosed, ErrDiskFull} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}
