//go:build !metad_faults

package raftstore

import (
	"log/slog"
	"time"

	"github.com/hashicorp/raft"

	"github.com/metad/metad/fsm/fsmpb"
)

// raftstore's one fault seam: the planted bugs and crash points of the
// fault-injection harness (package faults) have their code in
// faults_on.go, built only with -tags metad_faults, and no other file of
// the package names package faults. In the production build each
// function here returns what it is given or does nothing, which the
// compiler inlines away: no proposal, apply or disk write branches on a
// fault.

// plantedEncode is how a proposed command is encoded: encode.
func plantedEncode(_ *fsmpb.Command, encode func(stamp int64) ([]byte, error)) func(stamp int64) ([]byte, error) {
	return encode
}

// plantedStamp is the time the leader stamps a command with: the store's
// clock's.
func plantedStamp() time.Time { return wall.Now() }

// divergence is how this replica reads a committed command: as it is.
type divergence struct{}

// plantedDivergence is this node's divergence: none.
func plantedDivergence(string, *slog.Logger) divergence { return divergence{} }

func (divergence) command(data []byte) []byte { return data }

// plantedOpen acts on the log store as it opens: nothing.
func plantedOpen(raft.LogStore, *slog.Logger) {}

// plantedHeartbeats is the transport raft runs on: serial, whose
// heartbeats wait their turn on raft's main goroutine.
func plantedHeartbeats(_ *raft.NetworkTransport, serial raft.Transport, _ *slog.Logger) raft.Transport {
	return serial
}

// plantedVoteGuard arms the vote guard of a server without raft state:
// guard's.
func plantedVoteGuard(trans raft.Transport, log *slog.Logger, guard func(raft.Transport, *slog.Logger) (raft.Transport, *voteGuard)) (raft.Transport, *voteGuard) {
	return guard(trans, log)
}

// plantedWriteFailed is what a failed write of the raft log or stable
// store returns: latch's error, after latch stopped the node.
func plantedWriteFailed(_ error, latch func() error) error { return latch() }

// crashPoint holds the goroutine that reaches where: never.
func crashPoint(string, *slog.Logger) {}
