package peer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/raftstore"
)

// The tombstone policy: how an operator's remove-peer sticks, so the
// reconcile loop does not re-add a removed server that is still alive in
// gossip. At feature level 2 a replicated tombstone on the server's
// incarnation; at level 1, where no tombstone can be proposed while a
// 0.1.0 server remains, only the leader's memory (Removals).

// Removals is what the tombstone policy needs from membership: the
// incarnations the leader has seen, and the leader's memory of removals
// that is the level-1 fallback of tombstones (membership.Agent implements
// it).
type Removals interface {
	// Incarnation is the incarnation node id last reported ("" if none).
	Incarnation(id string) string
	// LearnIncarnation records the incarnation id reported when asked
	// (Members), so a removal after it tombstones that incarnation.
	LearnIncarnation(id, inc string)
	// NoteRemoved remembers that incarnation inc of id was removed.
	NoteRemoved(id, inc string)
	// ForgetRemoved drops that memory (the tombstone was lifted) and
	// reports whether there was one.
	ForgetRemoved(id string) bool
}

type noRemovals struct{}

func (noRemovals) Incarnation(string) string       { return "" }
func (noRemovals) LearnIncarnation(string, string) {}
func (noRemovals) NoteRemoved(string, string)      {}
func (noRemovals) ForgetRemoved(string) bool       { return false }

// NoRemovalError is Untombstone finding nothing to lift (no tombstone at
// level 2, no remembered removal at level 1); Message says which.
type NoRemovalError struct{ Message string }

func (e *NoRemovalError) Error() string { return e.Message }

// RejectedError is a tombstone proposal the state machine refused.
type RejectedError struct{ Message string }

func (e *RejectedError) Error() string { return e.Message }

// TombstoneBeforeRemoval makes remove-peer's removal of id stick before
// the server leaves the configuration, so the reconcile loop cannot
// re-add it in between: at feature level 2 a replicated tombstone on the
// server's incarnation (asked of the server, else the last one the leader
// saw, else "" for every incarnation); at level 1 only the leader's memory.
// It returns whether a tombstone was committed, and the incarnation.
func (n *Node) TombstoneBeforeRemoval(ctx context.Context, id string) (tombstoned bool, inc string, err error) {
	inc = n.incarnationOf(ctx, id)
	n.removals.NoteRemoved(id, inc)
	n.log.Info("remove-peer: recording the removal", "server", id, "incarnation", inc)
	level, err := n.ClusterLevel()
	if err != nil || level < 2 {
		return false, inc, err
	}
	res, err := n.store.Propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_AddTombstone{
		AddTombstone: &fsmpb.AddTombstone{NodeId: id, Incarnation: inc}}})
	switch {
	case errors.Is(err, raftstore.ErrFeatureLevel):
		return false, inc, nil // the level was lowered under us: impossible, but memory holds
	case err != nil:
		return false, inc, err
	case res.Rejection != nil:
		return false, inc, fmt.Errorf("tombstone refused: %s", res.Rejection.Message)
	}
	return true, inc, nil
}

// incarnationOf asks node id for its incarnation, briefly (it is often
// dead when removed), and falls back to what the leader last saw.
func (n *Node) incarnationOf(ctx context.Context, id string) string {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.IncarnationTimeout)
	defer cancel()
	st, err := n.client.NodeStatus(ctx, id, false)
	if err == nil && st.Incarnation != "" {
		return st.Incarnation
	}
	seen := n.removals.Incarnation(id)
	n.log.Debug("remove-peer: server did not say its incarnation; using the last one seen", "server", id, "err", err, "seen", seen)
	return seen
}

// Untombstone lifts id's removal (on the leader): its tombstone at level
// 2, the leader's memory of it at level 1. It returns the lift's version
// (0 at level 1), a *NoRemovalError when there is nothing to lift, or a
// *RejectedError.
func (n *Node) Untombstone(ctx context.Context, id string) (uint64, error) {
	level, err := n.ClusterLevel()
	if err != nil {
		return 0, err
	}
	remembered := n.removals.ForgetRemoved(id)
	if level < 2 {
		if !remembered {
			return 0, &NoRemovalError{Message: fmt.Sprintf("no removal of %q remembered (feature level 1 keeps no tombstones)", id)}
		}
		return 0, nil
	}
	found := false
	if err := n.store.Read(ctx, func(m *fsm.Machine) error {
		_, found = m.Tombstone(id)
		return nil
	}); err != nil {
		return 0, err
	}
	if !found {
		return 0, &NoRemovalError{Message: fmt.Sprintf("no tombstone for %q", id)}
	}
	res, err := n.store.Propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_LiftTombstone{
		LiftTombstone: &fsmpb.LiftTombstone{NodeId: id}}})
	if err != nil {
		return 0, err
	}
	if res.Rejection != nil {
		return 0, &RejectedError{Message: res.Rejection.Message}
	}
	return res.Version, nil
}

// Tombstones lists the tombstones of this node's state (local: status and
// members are diagnostics, not linearizable reads).
func (n *Node) Tombstones() []*metadpb.Tombstone {
	var out []*metadpb.Tombstone
	_ = n.store.ReadLocal(func(m *fsm.Machine) error {
		for _, t := range m.Tombstones() {
			out = append(out, &metadpb.Tombstone{NodeId: t.NodeID, Incarnation: t.Incarnation, Version: t.Version,
				RemovedAt: timestamppb.New(time.Unix(0, t.AtUnixNano))})
		}
		return nil
	})
	return out
}
