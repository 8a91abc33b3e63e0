package raftstore

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// voteGuard keeps a server that lost its raft state from voting until it
// has caught up: the disk-loss hazard of Raft (G2).
//
// A voter acknowledges entry E, then loses its disk (a wiped data dir, a
// replaced volume) and restarts under the same node id. Its log is empty,
// and hashicorp/raft grants a vote to any candidate whose log is at least
// as long as its own: to every candidate. If E's other copy is on the
// leader that just failed, a candidate lacking E can win with the
// amnesiac's vote, and E, acknowledged to a client, is gone. etcd refuses
// such a member until an operator removes and re-adds it; metad does it
// without the operator: a server that opens with no raft state and is not
// the one bootstrapping a new cluster arms the guard, which
//
//   - answers every RequestVote and pre-vote from others with a refusal,
//     before raft sees it (raft's own term is not touched), unless the
//     candidate's log holds only a bootstrap configuration (a forming
//     cluster, see formingLogIndex);
//   - refuses to send its own (it cannot win an election);
//   - notes the commit index the first leader's AppendEntries carries, and
//     disarms for good once its log reaches it: it then holds every entry
//     committed before it came back, and voting is safe again.
//
// With no leader in reach the guard stays armed: a cluster that needs the
// amnesiac's vote to elect a leader waits for a server that still has the
// data, which is the point. Bootstrap disarms it (a new cluster has nothing
// to lose). A fresh server joining as a non-voter arms it too, harmlessly.
type voteGuard struct {
	*raft.NetworkTransport
	// serial: ignore raft's heartbeat handler (serialHeartbeats).
	serial bool
	log    *slog.Logger
	raft   atomic.Pointer[raft.Raft] // set once raft runs

	armed    atomic.Bool
	target   atomic.Uint64 // first leader commit index seen; 0 = none yet
	consumer chan raft.RPC
	once     sync.Once
}

// formingLogIndex: a candidate whose log ends here holds nothing but a
// bootstrap configuration (index 1), so the cluster it asks to lead is
// forming; the guard lets such requests through. Without this, a server
// of a forming cluster that saw a peer bootstrap first (and so never
// bootstrapped itself: membership's rule) would refuse the votes the
// cluster needs to elect its first leader. The price is a narrow double
// fault: a voter that received nothing since formation, another that lost
// its disk, and the third down.
const formingLogIndex = 1

// errVoteGuard is returned instead of sending a vote request while armed.
var errVoteGuard = errors.New("raftstore: this server lost its raft state and does not vote until it has caught up with a leader")

// guardVotes wraps t in an armed voteGuard if it is raft's TCP transport
// (possibly under serialHeartbeats); other transports (in-memory, tests)
// are returned as they are, with nil.
func guardVotes(t raft.Transport, log *slog.Logger) (raft.Transport, *voteGuard) {
	var g *voteGuard
	switch tt := t.(type) {
	case serialHeartbeats:
		g = &voteGuard{NetworkTransport: tt.NetworkTransport, serial: true}
	case *raft.NetworkTransport:
		g = &voteGuard{NetworkTransport: tt}
	default:
		return t, nil
	}
	g.log = log
	g.consumer = make(chan raft.RPC)
	g.armed.Store(true)
	log.Warn("raftstore: no raft state: this server does not vote until it has caught up with a leader (a new cluster's bootstrap lifts this)")
	return g, g
}

// disarm lifts the guard (bootstrap, or caught up).
func (g *voteGuard) disarm(why string) {
	if g != nil && g.armed.CompareAndSwap(true, false) {
		g.log.Info("raftstore: vote guard lifted: this server votes again", "why", why)
	}
}

// SetHeartbeatHandler: as serialHeartbeats when it wraps one.
func (g *voteGuard) SetHeartbeatHandler(h func(raft.RPC)) {
	if !g.serial {
		g.NetworkTransport.SetHeartbeatHandler(h)
	}
}

// Consumer hands raft every RPC but the vote requests the guard refuses.
func (g *voteGuard) Consumer() <-chan raft.RPC {
	g.once.Do(func() { go g.filter(g.NetworkTransport.Consumer()) })
	return g.consumer
}

func (g *voteGuard) filter(in <-chan raft.RPC) {
	for rpc := range in {
		if g.armed.Load() && g.refuse(rpc) {
			continue
		}
		g.consumer <- rpc
	}
}

// refuse answers rpc itself if the guard withholds it from raft.
func (g *voteGuard) refuse(rpc raft.RPC) bool {
	switch req := rpc.Command.(type) {
	case *raft.RequestVoteRequest:
		if req.LastLogIndex <= formingLogIndex {
			return false
		}
		g.log.Info("raftstore: vote refused: this server has not caught up since it lost its raft state", "term", req.Term)
		rpc.Respond(&raft.RequestVoteResponse{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax}, Term: req.Term, Granted: false}, nil)
		return true
	case *raft.RequestPreVoteRequest:
		if req.LastLogIndex <= formingLogIndex {
			return false
		}
		g.log.Info("raftstore: pre-vote refused: this server has not caught up since it lost its raft state", "term", req.Term)
		rpc.Respond(&raft.RequestPreVoteResponse{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax}, Term: req.Term, Granted: false}, nil)
		return true
	case *raft.AppendEntriesRequest:
		if req.LeaderCommitIndex > 0 {
			g.target.CompareAndSwap(0, req.LeaderCommitIndex)
		}
		g.checkCaughtUp()
	}
	return false
}

func (g *voteGuard) checkCaughtUp() {
	r := g.raft.Load()
	if r == nil {
		return
	}
	if t := g.target.Load(); t > 0 && r.LastIndex() >= t {
		g.disarm("log reached the commit index the leader had when this server came back")
	}
}

// RequestVote refuses to ask for votes while armed.
func (g *voteGuard) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if g.armed.Load() {
		g.checkCaughtUp()
	}
	if g.armed.Load() {
		return errVoteGuard
	}
	return g.NetworkTransport.RequestVote(id, target, args, resp)
}

// RequestPreVote refuses to ask for pre-votes while armed.
func (g *voteGuard) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if g.armed.Load() {
		return errVoteGuard
	}
	return g.NetworkTransport.RequestPreVote(id, target, args, resp)
}

// guardIfAmnesiac arms a vote guard on trans if this server has no raft
// state. The planted bug accept-old-incarnation leaves it off: an
// amnesiac voter then votes at once, as hashicorp/raft does by default.
func guardIfAmnesiac(trans raft.Transport, logs raft.LogStore, stable raft.StableStore, snaps raft.SnapshotStore, log *slog.Logger) (raft.Transport, *voteGuard, error) {
	has, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return nil, nil, fmt.Errorf("raftstore: read state: %w", err)
	}
	if has {
		return trans, nil, nil
	}
	t, g := plantedVoteGuard(trans, log, guardVotes) // the fault seam (faults_off.go): guardVotes
	return t, g, nil
}
