package fsm

import "github.com/metad/metad/fsm/fsmpb"

// Grows reports whether cmd is one of the commands that grow the state
// with a client's data: a new stream, an append, a stream-set object, a
// published generation, an object registration. A node whose disk is
// below its reserve refuses these (package diskspace) and still applies
// the rest — pins and their releases, failure reports and repairs, trims,
// deletions, levels, tombstones — which reads and an operator freeing
// space need, and which stay small.
func Grows(cmd *fsmpb.Command) bool {
	switch cmd.GetOp().(type) {
	case *fsmpb.Command_CreateStream, *fsmpb.Command_CommitAppend, *fsmpb.Command_CommitObject,
		*fsmpb.Command_PublishGeneration, *fsmpb.Command_RegisterObject:
		return true
	}
	return false
}
