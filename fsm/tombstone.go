package fsm

import (
	"fmt"
	"slices"

	"github.com/metad/metad/fsm/fsmpb"
)

// Tombstone is an operator's removal of a server (remove-peer), kept in the
// replicated state so that every leader, now and after any failover, knows
// not to re-add that incarnation. Feature level 2.
type Tombstone struct {
	NodeID string
	// Incarnation is the removed incarnation; "" covers every incarnation
	// of the id (it was unknown when the server was removed).
	Incarnation string
	// Version is the index of the AddTombstone; AtUnixNano its stamp.
	Version    uint64
	AtUnixNano int64
}

// tombstoneLevel is the feature level that introduced tombstones.
const tombstoneLevel uint32 = 2

// MaxTombstones bounds the tombstone table: removals are operator actions,
// a few per cluster lifetime; far more is a runaway script.
const MaxTombstones = 1024

// Tombstones returns every tombstone, by node id.
func (m *Machine) Tombstones() []Tombstone {
	out := make([]Tombstone, 0, len(m.tombstones))
	for _, t := range m.tombstones {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b Tombstone) int {
		switch {
		case a.NodeID < b.NodeID:
			return -1
		case a.NodeID > b.NodeID:
			return 1
		}
		return 0
	})
	return out
}

// Tombstone returns node id's tombstone, if any.
func (m *Machine) Tombstone(id string) (Tombstone, bool) {
	t, ok := m.tombstones[id]
	return t, ok
}

func (m *Machine) addTombstone(index uint64, stamp int64, c *fsmpb.AddTombstone) *fsmpb.Result {
	if m.Level() < tombstoneLevel {
		return reject(index, fsmpb.RejectCode_INVALID_ARGUMENT, "", "tombstones need feature level %d; the cluster is at %d", tombstoneLevel, m.Level())
	}
	if _, replace := m.tombstones[c.NodeId]; !replace && len(m.tombstones) >= MaxTombstones {
		return reject(index, fsmpb.RejectCode_TOO_LARGE, "node_id", "already %d tombstones; lift some first", MaxTombstones)
	}
	m.touchTombstone(c.NodeId)
	m.tombstones[c.NodeId] = Tombstone{NodeID: c.NodeId, Incarnation: c.Incarnation, Version: index, AtUnixNano: stamp}
	return &fsmpb.Result{Version: index}
}

func (m *Machine) liftTombstone(index uint64, c *fsmpb.LiftTombstone) *fsmpb.Result {
	if m.Level() < tombstoneLevel {
		return reject(index, fsmpb.RejectCode_INVALID_ARGUMENT, "", "tombstones need feature level %d; the cluster is at %d", tombstoneLevel, m.Level())
	}
	m.touchTombstone(c.NodeId)
	delete(m.tombstones, c.NodeId)
	return &fsmpb.Result{Version: index}
}

func validateTombstoneID(field, id string) *fieldError {
	if id == "" || len(id) > MaxNodeIDLen {
		return bad(field, "length %d, want 1..%d", len(id), MaxNodeIDLen)
	}
	return nil
}

// MaxNodeIDLen bounds a node id or incarnation in a tombstone (membership
// allows 64-byte node ids).
const MaxNodeIDLen = 64

func (t Tombstone) record() *fsmpb.SnapshotRecord {
	return &fsmpb.SnapshotRecord{Record: &fsmpb.SnapshotRecord_Tombstone{Tombstone: &fsmpb.TombstoneState{
		NodeId: t.NodeID, Incarnation: t.Incarnation, Version: t.Version, AtUnixNano: t.AtUnixNano,
	}}}
}

func (m *Machine) restoreTombstone(ts *fsmpb.TombstoneState) error {
	if err := validateTombstoneID("node_id", ts.NodeId); err != nil {
		return fmt.Errorf("tombstone: %s", err.msg)
	}
	m.tombstones[ts.NodeId] = Tombstone{NodeID: ts.NodeId, Incarnation: ts.Incarnation, Version: ts.Version, AtUnixNano: ts.AtUnixNano}
	return nil
}

// checkTombstones is the tombstone table's invariant: keyed by node id,
// within bounds, none before the feature level that introduced them.
func (m *Machine) checkTombstones() error {
	if len(m.tombstones) > 0 && m.Level() < tombstoneLevel {
		return fmt.Errorf("%d tombstones at feature level %d", len(m.tombstones), m.Level())
	}
	if len(m.tombstones) > MaxTombstones {
		return fmt.Errorf("%d tombstones, bound %d", len(m.tombstones), MaxTombstones)
	}
	for id, t := range m.tombstones {
		if t.NodeID != id || validateTombstoneID("", id) != nil || len(t.Incarnation) > MaxNodeIDLen || t.Version > m.applied {
			return fmt.Errorf("tombstone keyed %q is %+v (applied %d)", id, t, m.applied)
		}
	}
	return nil
}
