package peer

import (
	"context"
	"fmt"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

// Rolling upgrades (G15, fsm/level.go): the leader raises the cluster's
// feature level once every server of the Raft configuration reports, in
// LocalStatus, that its binary applies it. A server it cannot ask blocks
// the raise: the level moves only on every server's word, because a
// server that cannot apply a committed entry has to stop.

// serversLevel returns the lowest feature level the servers of the
// configuration apply, or an error naming a server it could not ask.
func (n *Node) serversLevel(ctx context.Context) (uint32, error) {
	servers, err := n.store.Configuration()
	if err != nil {
		return 0, err
	}
	lowest := fsm.MaxLevel
	for _, st := range n.Statuses(ctx, servers, false) {
		if st.Error != "" {
			return 0, fmt.Errorf("server %s: %s", st.NodeId, st.Error)
		}
		lowest = min(lowest, max(st.FeatureLevel, fsm.BaseLevel))
	}
	return lowest, nil
}

// RaiseFeatureLevel proposes SetFeatureLevel if every server applies a
// higher level than the state holds, and returns the state's level after.
// Only the leader's proposal can succeed; it is safe to call repeatedly.
func (n *Node) RaiseFeatureLevel(ctx context.Context) (uint32, error) {
	current, err := n.ClusterLevel()
	if err != nil || current >= fsm.MaxLevel {
		return current, err
	}
	lowest, err := n.serversLevel(ctx)
	if err != nil || lowest <= current {
		return current, err
	}
	res, err := n.Propose(ctx, &fsmpb.Command{Op: &fsmpb.Command_SetFeatureLevel{
		SetFeatureLevel: &fsmpb.SetFeatureLevel{Level: lowest}}})
	if err != nil {
		return current, err
	}
	if res.Rejection != nil {
		return current, rejected(res.Rejection)
	}
	n.log.Info("cluster feature level raised: every server applies it", "from", current, "to", lowest, "version", res.Version)
	return lowest, nil
}

// ClusterLevel is the feature level of this node's applied state.
func (n *Node) ClusterLevel() (uint32, error) {
	var level uint32
	err := n.store.ReadLocal(func(m *fsm.Machine) error {
		level = m.Level()
		return nil
	})
	return level, err
}

// rejected is the error of a proposal of this package's own that the
// state machine refused; node logs it (no client sees it).
func rejected(rej *fsmpb.Rejection) error {
	return fmt.Errorf("refused (%v): %s", rej.Code, rej.Message)
}
