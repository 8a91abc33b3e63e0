//go:build metad_faults

package raftstore

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/faults"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

// raftstore's one fault seam, as the harness builds it (faults_off.go is
// the production build's, and says what each function does there).

// plantedEncode is the seam of the planted bugs that rewrite a command
// before the leader proposes it (package faults); built only with the tag
// metad_faults (faults_off.go is the production build's: encode itself).
//
// half-object: a stream-set object (CommitObject) is proposed with only
// the first half of its appends (the first ⌈n/2⌉), while the caller is
// answered as if every append committed. Every replica applies the same
// entry, so replicas agree and their state follows their log: only a
// check of G16 (all of an object's appends or none) sees that the other
// streams never got theirs.
func plantedEncode(cmd *fsmpb.Command, encode func(stamp int64) ([]byte, error)) func(stamp int64) ([]byte, error) {
	obj := cmd.GetCommitObject()
	if !faults.Bug("half-object") || obj == nil || len(obj.Appends) < 2 {
		return encode
	}
	return func(stamp int64) ([]byte, error) {
		half := proto.Clone(cmd).(*fsmpb.Command)
		half.StampUnixNano = stamp
		o := half.GetCommitObject()
		o.Appends = o.Appends[:(len(o.Appends)+1)/2]
		data, err := proto.Marshal(half)
		if err != nil {
			return nil, fmt.Errorf("raftstore: encode command: %w", err)
		}
		return data, nil
	}
}

// plantedStamp: the wall clock shifted by the harness's clock offset
// (faults.Now; POST /debug/faults/clock-offset).
func plantedStamp() time.Time { return faults.Now() }

// divergence: under the planted bug diverge-<node id>, this replica
// misreads every CreateStream (divergedCommand).
type divergence struct{ on bool }

func plantedDivergence(nodeID string, logger *slog.Logger) divergence {
	if !faults.Bug("diverge-" + nodeID) {
		return divergence{}
	}
	logger.Warn("planted bug diverge: this replica renames every stream it creates")
	return divergence{on: true}
}

func (d divergence) command(data []byte) []byte {
	if !d.on {
		return data
	}
	return divergedCommand(data)
}

// divergedCommand is the command as a diverging replica misreads it, a
// CreateStream with its name changed, so that its state leaves the log's
// (and every other replica's).
func divergedCommand(data []byte) []byte {
	cmd, err := fsm.DecodeCommand(data)
	if err != nil || cmd.GetCreateStream() == nil {
		return data
	}
	cmd.GetCreateStream().Name += "~"
	out, err := proto.Marshal(cmd)
	if err != nil {
		return data
	}
	return out
}

// plantedOpen: under the planted bug lose-append, the log forgets its
// last entry if it is a CommitAppend, as a node that lied about fsync
// would after a crash.
func plantedOpen(logs raft.LogStore, logger *slog.Logger) {
	if !faults.Bug("lose-append") {
		return
	}
	last, err := logs.LastIndex()
	if err != nil || last == 0 {
		return
	}
	var l raft.Log
	if logs.GetLog(last, &l) != nil || l.Type != raft.LogCommand {
		return
	}
	if cmd, err := fsm.DecodeCommand(l.Data); err == nil && cmd.GetCommitAppend() != nil {
		_ = logs.DeleteRange(last, last)
		logger.Warn("planted bug lose-append: dropped the last log entry", "index", last)
	}
}

// crashPoint holds the goroutine that reaches it forever when
// METAD_FAULTS names "hang-<where>", after logging "crash point <where>
// reached", so that a test can kill -9 the node at a point a crash could
// otherwise hit only by chance:
//
//	state-build     a state store built from a snapshot, before it is swapped in
//	point-persist   a point snapshot whose store is synced, before raft records it
//	state-stream    the state streamed to a follower, half way
func crashPoint(where string, logger *slog.Logger) {
	if !faults.Bug("hang-" + where) {
		return
	}
	logger.Warn("crash point " + where + " reached; holding here until killed")
	select {}
}

// plantedHeartbeats: under the planted bug heartbeat-fast-path, raft runs
// heartbeats off its main goroutine, as hashicorp/raft v1.7.3 does by
// default (hashicorp/raft#695: a resumed leader can write entries under
// the new term).
func plantedHeartbeats(trans *raft.NetworkTransport, serial raft.Transport, logger *slog.Logger) raft.Transport {
	if !faults.Bug("heartbeat-fast-path") {
		return serial
	}
	logger.Warn("planted bug heartbeat-fast-path: heartbeats run concurrently with raft's main loop (hashicorp/raft#695)")
	return trans
}

// plantedVoteGuard: under the planted bug accept-old-incarnation, a server
// without raft state has no vote guard and votes at once with its empty
// log.
func plantedVoteGuard(trans raft.Transport, log *slog.Logger, guard func(raft.Transport, *slog.Logger) (raft.Transport, *voteGuard)) (raft.Transport, *voteGuard) {
	if !faults.Bug("accept-old-incarnation") {
		return guard(trans, log)
	}
	log.Warn("planted bug accept-old-incarnation: no vote guard; this server votes with an empty log")
	return trans, nil
}

// plantedWriteFailed: under the planted bug retry-fsync, a failed write is
// returned to raft, which steps down and writes again over what the
// failed fsync lost, instead of stopping the node.
func plantedWriteFailed(err error, latch func() error) error {
	if faults.Bug("retry-fsync") {
		return err
	}
	return latch()
}
