//go:build !metad_faults

package raftstore

import (
	"log/slog"

	"github.com/hashicorp/raft"

	"github.com/metad/metad/fsm/fsmpb"
)

// plantedEncode is the seam of the planted bugs that rewrite a command
// before it is proposed (faults_on.go): in the production build, none.
func plantedEncode(_ *fsmpb.Command, encode func(stamp int64) ([]byte, error)) func(stamp int64) ([]byte, error) {
	return encode
}

// divergedCommand is the seam of the planted bug diverge-<node id>
// (faults_on.go): in the production build, the command as it is.
func divergedCommand(data []byte) []byte { return data }

// dropLastAppend is the seam of the planted bug lose-append
// (faults_on.go): in the production build, nothing.
func dropLastAppend(raft.LogStore, *slog.Logger) {}

// crashPoint is the seam of the crash points (faults_on.go): in the
// production build, nothing.
func crashPoint(string, *slog.Logger) {}
