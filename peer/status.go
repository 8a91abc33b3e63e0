package peer

import (
	"context"
	"sort"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/raftstore"
)

// Statuses asks every server of the configuration for its status, all at
// once, sorted by node id: this node answers for itself, a server that
// cannot be reached is UNREACHABLE with the error, never left out.
func (n *Node) Statuses(ctx context.Context, servers []raftstore.Server, withHash bool) []*metadpb.NodeStatus {
	nodes := make([]*metadpb.NodeStatus, len(servers))
	fanOut(len(servers), func(i int) { nodes[i] = n.nodeStatus(ctx, servers[i], withHash) })
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].NodeId < nodes[j].NodeId })
	return nodes
}

func (n *Node) nodeStatus(ctx context.Context, srv raftstore.Server, withHash bool) *metadpb.NodeStatus {
	voter := srv.Suffrage == raftstore.Voter
	if srv.ID == n.store.ID() {
		return n.LocalStatus(withHash)
	}
	if !withHash {
		// A live peer answers its indexes at once. The state hash it
		// computes over its whole state, seconds at millions of records:
		// bounded by the call's own deadline only (2 s made every peer of
		// a 2M-record cluster UNREACHABLE).
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, n.cfg.StatusTimeout)
		defer cancel()
	}
	st, err := n.client.NodeStatus(ctx, srv.ID, withHash)
	if err != nil {
		return &metadpb.NodeStatus{NodeId: srv.ID, RaftAddr: srv.Address, State: "UNREACHABLE", Voter: voter, Error: err.Error()}
	}
	st.Voter = voter
	return st
}

// LocalStatus is this node's own status (the Peer service's LocalStatus).
func (n *Node) LocalStatus(withHash bool) *metadpb.NodeStatus {
	st := n.store.Status()
	ns := &metadpb.NodeStatus{
		NodeId: st.NodeID, RaftAddr: st.Address, State: st.State, Voter: st.Voter, Term: st.Term,
		LastIndex: st.LastLogIndex, CommitIndex: st.CommitIndex, AppliedIndex: st.AppliedIndex, LeaderId: st.LeaderID,
		FeatureLevel: fsm.MaxLevel, Incarnation: n.incarnation, ClusterId: n.store.ClusterID(),
		RaftLogStore: string(st.LogStore), GrpcAddr: n.client.AddrOf(st.NodeID), Disk: st.Disk,
	}
	if !st.LastContact.IsZero() {
		ns.LastContact = timestamppb.New(st.LastContact)
	}
	if p, err := n.store.Progress(); err == nil {
		ns.LastLogTerm, ns.SinceLastContact = p.LastTerm, durationpb.New(p.LastContact)
	}
	if withHash {
		sum, applied, err := n.store.StateHash()
		if err != nil {
			ns.Error = err.Error()
		} else {
			ns.StateHash, ns.AppliedIndex = sum[:], applied
		}
	}
	return ns
}

// AskIncarnations fills in the incarnation of every alive member this node
// has not learned it of, by asking the member (LocalStatus), all at once,
// within Config.IncarnationTimeout; one that does not say in time is
// listed without it. Only a leader learns incarnations, in its reconcile
// probes; a follower, or a leader before its first probe, knows none.
func (n *Node) AskIncarnations(ctx context.Context, members []*metadpb.Member) {
	ctx, cancel := context.WithTimeout(ctx, n.cfg.IncarnationTimeout)
	defer cancel()
	fanOut(len(members), func(i int) {
		m := members[i] // each goroutine writes its own member
		if m.Incarnation != "" || m.Status != "alive" {
			return
		}
		if st, err := n.client.NodeStatus(ctx, m.NodeId, false); err == nil {
			m.Incarnation = st.Incarnation
			n.removals.LearnIncarnation(m.NodeId, st.Incarnation)
		}
	})
}
