package api

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/raftstore"
	"github.com/metad/metad/repair"
)

// PeerClient reaches other nodes' Peer services by node id. It implements
// raftstore.Peers (leadership confirmation and read index over gRPC) and
// carries forwarded proposals and repair requests to the leader.
type PeerClient struct {
	// dial maps a gRPC address to the address actually dialled (the
	// identity by default; the Jepsen harness routes through proxies).
	dial func(addr string) string

	// creds are how this node proves it is a peer: its TLS certificate, or
	// the peer secret without TLS (SetCredentials).
	creds []grpc.DialOption

	// clusterID returns this node's cluster id for the calls' metadata
	// (clusterid.go); nil until SetClusterID.
	clusterID atomic.Pointer[func() string]

	// mu guards dir and conns.
	mu    sync.Mutex
	dir   Directory
	conns map[string]*grpc.ClientConn // by dialled address
}

// SetCredentials sets the dial options that carry this node's peer
// identity; call it before the first call. Without it, calls go in clear
// text with no identity, and other nodes refuse them.
func (p *PeerClient) SetCredentials(opts ...grpc.DialOption) {
	p.mu.Lock()
	p.creds = opts
	p.mu.Unlock()
}

// NewPeerClient returns a client; SetDirectory must be called before use
// (the directory is built after the Raft store that needs this client).
func NewPeerClient(dial func(addr string) string) *PeerClient {
	if dial == nil {
		dial = func(a string) string { return a }
	}
	return &PeerClient{dial: dial, conns: map[string]*grpc.ClientConn{}}
}

// SetDirectory sets how node ids map to addresses.
func (p *PeerClient) SetDirectory(d Directory) {
	p.mu.Lock()
	p.dir = d
	p.mu.Unlock()
}

var errUnknownPeer = errors.New("peer address unknown")

// peerReconnect bounds the wait between attempts to reach a peer that went
// away. gRPC's default backs off up to 120 s: a peer down for two minutes
// (a long restart, a removed server wiped and started again) then stayed
// unreachable to this node for up to two more after it was back, so the
// leader could neither probe a new incarnation nor forward to it.
var peerReconnect = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
	MinConnectTimeout: 5 * time.Second,
}

// conn returns a (cached) connection to node id.
func (p *PeerClient) conn(id string) (metadpb.PeerClient, *grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dir == nil {
		return nil, nil, errUnknownPeer
	}
	addr, ok := p.dir.GRPCAddr(id)
	if !ok {
		return nil, nil, fmt.Errorf("%w: node %q", errUnknownPeer, id)
	}
	target := p.dial(addr)
	c, ok := p.conns[target]
	if !ok {
		var err error
		opts := p.creds
		if len(opts) == 0 {
			opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
		}
		opts = append(opts[:len(opts):len(opts)], grpc.WithChainUnaryInterceptor(p.tagClusterID), grpc.WithConnectParams(peerReconnect))
		c, err = grpc.NewClient("passthrough:///"+target, opts...)
		if err != nil {
			return nil, nil, err
		}
		p.conns[target] = c
	}
	return metadpb.NewPeerClient(c), c, nil
}

// Close closes every cached connection.
func (p *PeerClient) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, c := range p.conns {
		c.Close()
		delete(p.conns, k)
	}
	return nil
}

// ConfirmLeadership implements raftstore.Peers.
func (p *PeerClient) ConfirmLeadership(ctx context.Context, serverID string, term uint64, leaderID string) (bool, error) {
	pc, _, err := p.conn(serverID)
	if err != nil {
		return false, err
	}
	resp, err := pc.ConfirmLeadership(ctx, &metadpb.ConfirmLeadershipRequest{Term: term, LeaderId: leaderID})
	if err != nil {
		return false, err
	}
	return resp.Ok, nil
}

// ReadIndex implements raftstore.Peers.
func (p *PeerClient) ReadIndex(ctx context.Context, leaderID string) (uint64, error) {
	pc, _, err := p.conn(leaderID)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", raftstore.ErrNoLeader, err)
	}
	resp, err := pc.ReadIndex(ctx, &metadpb.ReadIndexRequest{})
	if err != nil {
		return 0, readIndexError(err)
	}
	return resp.Index, nil
}

// readIndexError maps the leader's refusal back onto raftstore's sentinels,
// so the read path classifies it like a local one.
func readIndexError(err error) error {
	switch reasonOf(err) {
	case metadpb.Reason_NOT_READY:
		return fmt.Errorf("%w: %w", raftstore.ErrNotReady, err)
	case metadpb.Reason_LEADERSHIP_LOST:
		return fmt.Errorf("%w: %w", raftstore.ErrLeadershipLost, err)
	case metadpb.Reason_OVERLOADED:
		return fmt.Errorf("%w: %w", raftstore.ErrOverloaded, err)
	}
	return fmt.Errorf("%w: %w", raftstore.ErrNoLeader, err)
}

// forward proposes an encoded command on the leader and returns its result.
func (p *PeerClient) forward(ctx context.Context, leaderID string, command []byte) (*fsmpb.Result, error) {
	pc, _, err := p.conn(leaderID)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", raftstore.ErrNoLeader, err)
	}
	resp, err := pc.Propose(ctx, &metadpb.ProposeRequest{Command: command})
	if err != nil {
		return nil, err
	}
	res := &fsmpb.Result{}
	if err := proto.Unmarshal(resp.Result, res); err != nil {
		return nil, fmt.Errorf("forwarded result: %w", err)
	}
	return res, nil
}

// maxForwards bounds how many leaders one proposal follows: a leader that
// moved while a forward was under way answers NOT_LEADER with the new
// one, which is tried next, up to this many in all (a cluster electing
// over and over answers NOT_LEADER in the end, which the client retries).
// Each forward lands on the leader's Peer.Propose, which never forwards.
const maxForwards = 3

// propose proposes cmd here if this node leads, else on the leader,
// following a moving leader up to maxForwards times. The command is
// encoded once, at the first forward, and the leader stamps those bytes
// as they are (raftstore.ProposeEncoded).
func (s *Server) propose(ctx context.Context, cmd *fsmpb.Command) (*fsmpb.Result, error) {
	var err error
	var encoded []byte
	for range maxForwards {
		var res *fsmpb.Result
		res, err = s.store.Propose(ctx, cmd)
		var nle *raftstore.NotLeaderError
		if !errors.As(err, &nle) || nle.LeaderID == "" || nle.LeaderID == s.store.ID() {
			return res, err
		}
		if encoded == nil {
			if encoded, err = proto.Marshal(cmd); err != nil {
				return nil, err
			}
		}
		res, err = s.peers.forward(ctx, nle.LeaderID, encoded)
		if reasonOf(err) != metadpb.Reason_NOT_LEADER {
			return res, err
		}
	}
	return nil, err
}

// Propose implements the Peer service: a proposal forwarded by a follower.
// It is never forwarded again, so a stale leader hint cannot loop.
func (s *Server) Propose(ctx context.Context, req *metadpb.ProposeRequest) (*metadpb.ProposeResponse, error) {
	res, err := s.store.ProposeEncoded(ctx, req.Command)
	if errors.Is(err, raftstore.ErrBadCommand) {
		return nil, invalidArgument("command", "%v", err)
	}
	if err != nil {
		return nil, toStatus(err)
	}
	data, err := proto.Marshal(res)
	if err != nil {
		return nil, toStatus(err)
	}
	return &metadpb.ProposeResponse{Result: data}, nil
}

// ReadIndex implements the Peer service.
func (s *Server) ReadIndex(ctx context.Context, _ *metadpb.ReadIndexRequest) (*metadpb.ReadIndexResponse, error) {
	idx, err := s.store.ReadIndex(ctx)
	if err != nil {
		return nil, toStatus(err)
	}
	return &metadpb.ReadIndexResponse{Index: idx}, nil
}

// ConfirmLeadership implements the Peer service.
func (s *Server) ConfirmLeadership(ctx context.Context, req *metadpb.ConfirmLeadershipRequest) (*metadpb.ConfirmLeadershipResponse, error) {
	return &metadpb.ConfirmLeadershipResponse{Ok: s.store.ConfirmLeadership(req.Term, req.LeaderId), Term: s.store.Term()}, nil
}

// Repair implements the Peer service: a repair asked for by a resolve on
// another node, run by this (leader's) repair loop.
func (s *Server) Repair(ctx context.Context, req *metadpb.RepairRequest) (*metadpb.RepairResponse, error) {
	if err := s.repair.Repair(ctx, req.StreamId, req.Offset); err != nil {
		return nil, repairStatus(err)
	}
	return &metadpb.RepairResponse{}, nil
}

// repairStatus maps repair's errors; all are retryable from the resolver's
// point of view, and it reports them in its diagnostic.
func repairStatus(err error) error {
	if errors.Is(err, repair.ErrNotLeader) {
		return toStatus(fmt.Errorf("%w: %w", raftstore.ErrNotLeader, err))
	}
	return toStatus(err)
}

// forwardRepair asks the leader's repair loop.
func (p *PeerClient) forwardRepair(ctx context.Context, leaderID string, stream, offset uint64) error {
	pc, _, err := p.conn(leaderID)
	if err != nil {
		return err
	}
	_, err = pc.Repair(ctx, &metadpb.RepairRequest{StreamId: stream, Offset: offset})
	return err
}

// NodeStatus asks one node for its own status (membership's FetchStats).
func (p *PeerClient) NodeStatus(ctx context.Context, id string, withHash bool) (*metadpb.NodeStatus, error) {
	pc, _, err := p.conn(id)
	if err != nil {
		return nil, err
	}
	return pc.LocalStatus(ctx, &metadpb.LocalStatusRequest{WithHash: withHash})
}

// leaderConn returns a connection to the current leader, for Cluster calls
// that only the leader can serve.
func (s *Server) leaderConn() (*grpc.ClientConn, error) {
	id, _ := s.store.Leader()
	if id == "" {
		return nil, raftstore.ErrNoLeader
	}
	_, c, err := s.peers.conn(id)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", raftstore.ErrNoLeader, err)
	}
	return c, nil
}

// addrOf returns a node's gRPC address, or "".
func (p *PeerClient) addrOf(id string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dir == nil {
		return ""
	}
	addr, _ := p.dir.GRPCAddr(id)
	return addr
}

// members returns the directory's gossip view.
func (p *PeerClient) members() []*metadpb.Member {
	p.mu.Lock()
	d := p.dir
	p.mu.Unlock()
	if d == nil {
		return nil
	}
	return d.Members()
}
