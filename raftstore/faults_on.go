//go:build metad_faults

package raftstore

import (
	"fmt"
	"log/slog"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/faults"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

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

// divergedCommand is a planted bug for the fault-injection harness: the
// command as one replica misreads it, a CreateStream with its name changed,
// so that its state leaves the log's (and every other replica's).
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

// dropLastAppend is a planted bug for the fault-injection harness: it
// forgets the last log entry if it is a CommitAppend, as a node that lied
// about fsync would after a crash.
func dropLastAppend(logs raft.LogStore, logger *slog.Logger) {
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
