package node

import (
	"context"
	"fmt"
	"time"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/membership"
)

// removedCheckInterval is how often a node asks a peer whether an operator
// removed it.
const removedCheckInterval = 5 * time.Second

// watchRemoval stops this node, with a message telling the operator what
// to do, once a peer's replicated state holds a tombstone on this node's
// incarnation: an operator removed it (remove-peer), and the leader will
// never add it back. Serving on as if it were a member would only confuse
// clients and balancers; its raft state is the removed server's.
func (n *Server) watchRemoval(ctx context.Context) {
	clock.Every(ctx, serverClock, removedCheckInterval, func() bool {
		if t, removed := n.removedBy(ctx); removed {
			n.serveErr <- fmt.Errorf("this server (node id %s, incarnation %s) was removed from the cluster by an operator (tombstone at index %d%s); "+
				"to rejoin, stop it, delete its data dir %s and start it again with --join: it then joins as a new incarnation; "+
				"or lift the tombstone with `metad raft untombstone %s` and restart it",
				n.cfg.NodeID, n.incarnation, t.Version, tombstoneScope(t.Tombstone), n.cfg.DataDir, n.cfg.NodeID)
			return false
		}
		return true
	})
}

func tombstoneScope(t membership.Tombstone) string {
	if t.Incarnation == "" {
		return ", covering every incarnation of this id"
	}
	return ""
}

// removedTombstone is a tombstone as the removal watch sees it.
type removedTombstone struct {
	membership.Tombstone
	Version uint64
}

// removedBy asks the alive peers in turn for their tombstones and reports
// one naming this node's incarnation.
func (n *Server) removedBy(ctx context.Context) (removedTombstone, bool) {
	for _, m := range n.agent.Members() {
		if m.ID == n.cfg.NodeID || m.Status != membership.StatusAlive {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		tombs, err := n.peers.Tombstones(cctx, m.ID)
		cancel()
		n.peerRefusals.observe(n.log, m.ID, m.Meta.GRPCAddr, err)
		if err != nil {
			continue
		}
		for _, t := range tombs {
			if t.NodeId == n.cfg.NodeID && (t.Incarnation == "" || t.Incarnation == n.incarnation) {
				return removedTombstone{Tombstone: membership.Tombstone{NodeID: t.NodeId, Incarnation: t.Incarnation}, Version: t.Version}, true
			}
		}
		return removedTombstone{}, false // one peer's replicated state is enough
	}
	return removedTombstone{}, false
}
