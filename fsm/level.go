package fsm

import (
	"errors"
	"fmt"

	"github.com/metad/metad/checksum"

	"github.com/metad/metad/fsm/fsmpb"
)

// Feature levels let a cluster of mixed releases keep serving through a
// rolling upgrade (G15). A level names a set of command kinds and command
// semantics. Each release applies every level up to its MaxLevel; the
// replicated state holds the cluster's level, which only grows, through
// SetFeatureLevel. A leader proposes SetFeatureLevel only once every voter
// reports it can apply that level, and proposes no command whose
// RequiredLevel is above the state's: so an older replica never meets a
// command it cannot apply. Semantics that change with a level (a new
// refusal, say) are switched on the state's level inside Apply, never on
// the binary's, so every replica — and every replay of an old log —
// decides alike.
//
// The levels:
//
//	1  release 0.1.0: every command kind up to RepairGen0.
//	2  SetFeatureLevel, LiftQuarantine; byte ranges of appends and index
//	   records must lie inside the object's registered size; AddTombstone
//	   and LiftTombstone (tombstone.go: remove-peer's removals, replicated);
//	   SetClusterID (clusterid.go: the cluster's identity).
//	3  the object registry holds versions: (key, identity) entries, each
//	   registered, referenced, pinned and collected on its own, so
//	   registering new bytes under a key no longer replaces the old
//	   version (objects.go); appends and index records keep the data
//	   checksum their writer sent (below level 3 it is ignored, as the
//	   binaries of those levels, which do not know the field, ignore it).
//	4  CommitObject: a stream-set object's appends to many streams, all
//	   or none (streamset.go).
const (
	// BaseLevel is the level of a state that never recorded one.
	BaseLevel uint32 = 1
	// MaxLevel is the highest level this binary applies.
	MaxLevel uint32 = 4
)

// versionsLevel is the level of object versions and data checksums.
const versionsLevel uint32 = 3

// streamSetLevel is the level of CommitObject.
const streamSetLevel uint32 = 4

// dataChecksum is the data checksum a command carries, as the state's
// level lets it be kept.
func (m *Machine) dataChecksum(p *uint32) checksum.Data {
	if m.Level() < versionsLevel {
		return checksum.Data{}
	}
	return checksum.FromPtr(p)
}

// ErrUnsupported is wrapped by ApplyEntry's error for a committed entry
// this binary cannot apply: an undecodable one, an operation it does not
// know, or a level above MaxLevel. The replica must stop, not skip the
// entry and diverge: the operator upgrades its binary, and on restart it
// applies the entry.
var ErrUnsupported = errors.New("fsm: committed entry not supported by this binary")

// Level is the cluster's feature level in this state.
func (m *Machine) Level() uint32 { return max(m.level, BaseLevel) }

// RequiredLevel is the feature level a command needs the state to be at
// before it may be proposed. SetFeatureLevel itself is the exception that
// needs none: it is what raises the state's level, and its guard is the
// leader's asking every server first (peer.Node.RaiseFeatureLevel). New
// command kinds get a case here with the level that introduced them.
func RequiredLevel(cmd *fsmpb.Command) uint32 {
	switch op := cmd.Op.(type) {
	case *fsmpb.Command_LiftQuarantine:
		return 2
	case *fsmpb.Command_AddTombstone, *fsmpb.Command_LiftTombstone:
		return tombstoneLevel
	case *fsmpb.Command_SetClusterId:
		return clusterIDLevel
	case *fsmpb.Command_CommitObject:
		return streamSetLevel
	case *fsmpb.Command_PublishGeneration:
		// A record's checksum covers its data checksum, which a replica
		// below level 3 does not know: it would refuse the record as
		// CHECKSUM_MISMATCH. Refused before proposing, the publisher
		// hears why (FEATURE_LEVEL) and may publish without one.
		for _, r := range op.PublishGeneration.Records {
			if r.DataCrc32C != nil {
				return versionsLevel
			}
		}
	}
	return BaseLevel
}

// supported returns an ErrUnsupported error if this binary cannot apply
// cmd; Validate and the handlers then deal with everything else.
func supported(index uint64, cmd *fsmpb.Command) error {
	if op, ok := cmd.Op.(*fsmpb.Command_SetFeatureLevel); ok && op.SetFeatureLevel.Level > MaxLevel {
		return fmt.Errorf("%w: entry %d raises the feature level to %d; this binary applies up to %d",
			ErrUnsupported, index, op.SetFeatureLevel.Level, MaxLevel)
	}
	return nil
}

// setFeatureLevel raises the level. A level at or below the current one
// changes nothing (a retried or raced proposal), and is not an error.
func (m *Machine) setFeatureLevel(index uint64, c *fsmpb.SetFeatureLevel) *fsmpb.Result {
	if c.Level > m.Level() {
		below := m.Level() < versionsLevel
		m.level = c.Level
		if below && m.Level() >= versionsLevel {
			m.splitVersions(index)
		}
	}
	return &fsmpb.Result{Version: index}
}
