package membership

import (
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/memberlist"
	"github.com/prometheus/client_golang/prometheus"
)

// Cluster identity in gossip and in the reconcile loop (README "Cluster identity").
//
// Why not memberlist's Label: memberlist drops every packet and stream
// whose label differs from its own, before any delegate sees it. A fresh
// node started with --join does not know the cluster id before it has
// talked to the cluster, so with the label set to the id a new node could
// never join; and release 0.1.0 sends no label, so a labelled node and a
// 0.1.0 node could not gossip during a rolling upgrade. A label fixed
// by the operator instead of the id (the same string on every node, like
// the gossip key) would work, but it is a second shared secret to
// distribute and tells nothing the gossip key does not.
//
// Instead a node that knows its cluster id advertises it in its metadata
// (version 2, meta.go), and memberlist's Merge and Alive delegates refuse
// a node whose metadata names another id: a push/pull (a join) with any
// such node is refused as a whole, and its alive messages are ignored, so
// two clusters' gossip never merges. A node that knows no id (a new one,
// or a cluster below feature level 2) is not refused by gossip; the
// reconcile loop asks it (FetchStats) for its cluster id before adding it.

// errForeignCluster is what the delegates return for a refused node.
var errForeignCluster = errors.New("membership: node of another cluster")

// clusterID is this node's cluster id: its raft state's, or until that
// has one the data dir's (Config.ClusterID).
func (a *Agent) clusterID() string {
	if a.hooks.ClusterID != nil {
		if id := a.hooks.ClusterID(); id != "" {
			return id
		}
	}
	return a.cfg.ClusterID
}

// foreignLog logs a refusal once per (where, node, its cluster id) and
// counts every refusal.
type foreignLog struct {
	mu     sync.Mutex
	logged map[string]bool
	total  *prometheus.CounterVec
}

func newForeignLog() *foreignLog {
	return &foreignLog{logged: map[string]bool{}, total: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "metad_membership_foreign_refusals_total",
		Help: "Nodes of another cluster refused, by where the refusal happened (gossip, reconcile).",
	}, []string{"where"})}
}

// first counts a refusal and reports whether it is the first of its kind.
func (f *foreignLog) first(where, node, theirs string) bool {
	f.total.WithLabelValues(where).Inc()
	key := where + "/" + node + "/" + theirs
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.logged[key] {
		return false
	}
	f.logged[key] = true
	return true
}

// gossipGuard is memberlist's MergeDelegate and AliveDelegate. It runs on
// memberlist's goroutines, some with its node lock held: it decodes, compares
// and logs, nothing more.
type gossipGuard struct{ a *Agent }

var (
	_ memberlist.MergeDelegate = gossipGuard{}
	_ memberlist.AliveDelegate = gossipGuard{}
)

func (g gossipGuard) NotifyMerge(peers []*memberlist.Node) error {
	for _, p := range peers {
		if err := g.check(p, "merge"); err != nil {
			return err
		}
	}
	return nil
}

func (g gossipGuard) NotifyAlive(peer *memberlist.Node) error { return g.check(peer, "alive") }

// check refuses a node whose metadata names another cluster. Metadata that
// does not decode is left to the table, which ignores such nodes.
func (g gossipGuard) check(n *memberlist.Node, what string) error {
	if n.Name == g.a.cfg.NodeID {
		return nil
	}
	meta, err := DecodeMeta(n.Meta)
	own := g.a.clusterID()
	if err != nil || meta.ClusterID == "" || own == "" || meta.ClusterID == own {
		return nil
	}
	if g.a.foreign.first("gossip", n.Name, meta.ClusterID) {
		g.a.log.Warn(fmt.Sprintf("refusing gossip with node %s of another cluster: this node's cluster id is %s, its is %s", n.Name, own, meta.ClusterID),
			"peer", n.Name, "gossip", n.Address(), "cluster_id", own, "peer_cluster_id", meta.ClusterID, "message", what)
	}
	return fmt.Errorf("%w: %s belongs to cluster %s, this node to %s", errForeignCluster, n.Name, meta.ClusterID, own)
}

// refreshClusterID advertises the cluster id once this node's state has
// one (the state reaches it only at feature level 2, so no 0.1.0 node,
// which cannot read version-2 metadata, is a member any more).
func (a *Agent) refreshClusterID() {
	id := a.clusterID()
	if id == "" || id == a.meta.current().ClusterID {
		return
	}
	if err := a.meta.update(func(m *Meta) { m.ClusterID = id }); err != nil {
		a.log.Error("cannot advertise the cluster id", "cluster_id", id, "err", err)
		return
	}
	a.log.Info("advertising the cluster id in gossip", "cluster_id", id)
	if a.left.Load() {
		return
	}
	if err := a.ml.UpdateNode(metaUpdateTimeout); err != nil {
		a.log.Debug("metadata broadcast still pending", "err", err)
	}
}

// foreignCheck is the planner's Foreign input: a member that names another
// cluster, in gossip or in its answer to FetchStats, is never added; and
// while this node knows its cluster id, a newcomer is added only once it
// has answered (so its id is known).
func (a *Agent) foreignCheck() func(Member) (string, holdClass) {
	own := a.clusterID()
	probes := a.loop.probes
	return func(m Member) (string, holdClass) {
		theirs, answered := probes[m.ID]
		if m.Meta.ClusterID != "" {
			theirs = m.Meta.ClusterID
		}
		switch {
		case theirs != "" && theirs != own:
			if a.foreign.first("reconcile", m.ID, theirs) {
				a.log.Warn(fmt.Sprintf("refusing to add %s: it belongs to another cluster (its cluster id is %s, this cluster's is %q)", m.ID, theirs, own),
					"server", m.ID, "cluster_id", own, "server_cluster_id", theirs)
			}
			return fmt.Sprintf("%s belongs to another cluster: its cluster id is %s, this cluster's is %q", m.ID, theirs, own), holdForeign
		case own != "" && !answered && theirs == "":
			return fmt.Sprintf("%s has not answered for its cluster id yet (this cluster's is %s); it is added once it does", m.ID, own), holdUnprobed
		}
		return "", holdNone
	}
}

// setGossipKeys makes keys memberlist's keyring: new keys are installed,
// the first becomes primary, keys no longer listed are removed.
func setGossipKeys(kr *memberlist.Keyring, keys [][]byte) error {
	if len(keys) == 0 {
		return errors.New("no gossip key: encryption cannot be switched off while running")
	}
	for _, k := range keys {
		if err := kr.AddKey(k); err != nil {
			return err
		}
	}
	if err := kr.UseKey(keys[0]); err != nil {
		return err
	}
	keep := make(map[string]bool, len(keys))
	for _, k := range keys {
		keep[string(k)] = true
	}
	for _, k := range kr.GetKeys() {
		if !keep[string(k)] {
			if err := kr.RemoveKey(k); err != nil {
				return err
			}
		}
	}
	return nil
}

// SetGossipKeys rotates the gossip keyring to keys (first = primary): to
// rotate, give every node [old, new], then [new, old], then [new]. It
// fails on an agent started without keys: encryption is switched on (or
// off) by a restart of every node.
func (a *Agent) SetGossipKeys(keys [][]byte) error {
	if err := ValidateGossipKeys(keys); err != nil {
		return fmt.Errorf("%w: GossipKeys: %w", ErrInvalidConfig, err)
	}
	if a.keyring == nil {
		return errors.New("membership: gossip was started without encryption; restart every node with the key file")
	}
	return setGossipKeys(a.keyring, keys)
}
