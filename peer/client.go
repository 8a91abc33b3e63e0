package peer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/api/reasons"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/raftstore"
)

// Directory finds other nodes; membership provides it.
type Directory interface {
	// GRPCAddr returns a node's gRPC address, by node id.
	GRPCAddr(nodeID string) (string, bool)
	// Members is the gossip view, for `metad members`.
	Members() []*metadpb.Member
}

// ClientConfig is everything the client needs, given once at construction:
// it has no setters, so a call never finds a part missing.
type ClientConfig struct {
	// Directory maps node ids to gRPC addresses. Required.
	Directory Directory
	// Dial maps a gRPC address to the address actually dialled; nil is the
	// identity (the Jepsen harness routes through proxies).
	Dial func(addr string) string
	// Credentials are the dial options that prove this node is a peer (its
	// TLS certificate, or the peer secret without TLS). Without them calls
	// go in clear text with no identity, and other nodes refuse them.
	Credentials []grpc.DialOption
	// ClusterID returns this node's cluster id, sent with every call as
	// ClusterIDHeader; nil or "" sends none.
	ClusterID func() string
}

// Client reaches other nodes' Peer services by node id. It implements
// raftstore.Peers (leadership confirmation and read index over gRPC) and
// carries forwarded proposals, repair requests and status questions.
type Client struct {
	cfg ClientConfig

	mu    sync.Mutex
	conns map[string]*grpc.ClientConn // by dialled address; guarded by mu
}

// NewClient returns a client.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.Directory == nil {
		return nil, errors.New("peer: ClientConfig.Directory is required")
	}
	if cfg.Dial == nil {
		cfg.Dial = func(a string) string { return a }
	}
	if cfg.ClusterID == nil {
		cfg.ClusterID = func() string { return "" }
	}
	return &Client{cfg: cfg, conns: map[string]*grpc.ClientConn{}}, nil
}

// errUnknownPeer: the directory knows no address for the node.
var errUnknownPeer = errors.New("peer address unknown")

// reconnect bounds the wait between attempts to reach a peer that went
// away. gRPC's default backs off up to 120 s: a peer down for two minutes
// (a long restart, a removed server wiped and started again) then stayed
// unreachable to this node for up to two more after it was back, so the
// leader could neither probe a new incarnation nor forward to it.
var reconnect = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
	MinConnectTimeout: 5 * time.Second,
}

// Conn returns a (cached) connection to node id, for the Cluster calls a
// follower hands to the leader.
func (c *Client) Conn(id string) (*grpc.ClientConn, error) {
	addr, ok := c.cfg.Directory.GRPCAddr(id)
	if !ok {
		return nil, fmt.Errorf("%w: node %q", errUnknownPeer, id)
	}
	target := c.cfg.Dial(addr)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc, ok := c.conns[target]; ok {
		return cc, nil
	}
	opts := c.cfg.Credentials
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	opts = append(opts[:len(opts):len(opts)], grpc.WithChainUnaryInterceptor(c.tagClusterID), grpc.WithConnectParams(reconnect))
	cc, err := grpc.NewClient("passthrough:///"+target, opts...)
	if err != nil {
		return nil, err
	}
	c.conns[target] = cc
	return cc, nil
}

func (c *Client) peer(id string) (metadpb.PeerClient, error) {
	cc, err := c.Conn(id)
	if err != nil {
		return nil, err
	}
	return metadpb.NewPeerClient(cc), nil
}

// tagClusterID sends this node's cluster id with every call it makes to
// another node.
func (c *Client) tagClusterID(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if id := c.cfg.ClusterID(); id != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, ClusterIDHeader, id)
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// Close closes every cached connection.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, cc := range c.conns {
		cc.Close()
		delete(c.conns, k)
	}
	return nil
}

// ConfirmLeadership implements raftstore.Peers.
func (c *Client) ConfirmLeadership(ctx context.Context, serverID string, term uint64, leaderID string) (bool, error) {
	pc, err := c.peer(serverID)
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
func (c *Client) ReadIndex(ctx context.Context, leaderID string) (uint64, error) {
	pc, err := c.peer(leaderID)
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
	switch reasons.FromError(err) {
	case metadpb.Reason_NOT_READY:
		return fmt.Errorf("%w: %w", raftstore.ErrNotReady, err)
	case metadpb.Reason_LEADERSHIP_LOST:
		return fmt.Errorf("%w: %w", raftstore.ErrLeadershipLost, err)
	case metadpb.Reason_OVERLOADED:
		return fmt.Errorf("%w: %w", raftstore.ErrOverloaded, err)
	}
	return fmt.Errorf("%w: %w", raftstore.ErrNoLeader, err)
}

// Forward proposes an encoded command on the leader and returns its result.
func (c *Client) Forward(ctx context.Context, leaderID string, command []byte) (*fsmpb.Result, error) {
	pc, err := c.peer(leaderID)
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

// ForwardRepair asks the leader's repair loop (readpath's RepairOnLeader).
func (c *Client) ForwardRepair(ctx context.Context, leaderID string, stream, offset uint64) error {
	pc, err := c.peer(leaderID)
	if err != nil {
		return err
	}
	_, err = pc.Repair(ctx, &metadpb.RepairRequest{StreamId: stream, Offset: offset})
	return err
}

// NodeStatus asks one node for its own status (membership's FetchStats).
func (c *Client) NodeStatus(ctx context.Context, id string, withHash bool) (*metadpb.NodeStatus, error) {
	pc, err := c.peer(id)
	if err != nil {
		return nil, err
	}
	return pc.LocalStatus(ctx, &metadpb.LocalStatusRequest{WithHash: withHash})
}

// Tombstones asks node id for the tombstones in its replicated state
// (Cluster.Members): a removed node learns from a peer that it was
// removed.
func (c *Client) Tombstones(ctx context.Context, id string) ([]*metadpb.Tombstone, error) {
	cc, err := c.Conn(id)
	if err != nil {
		return nil, err
	}
	resp, err := metadpb.NewClusterClient(cc).Members(ctx, &metadpb.MembersRequest{TombstonesOnly: true})
	if err != nil {
		return nil, err
	}
	return resp.Tombstones, nil
}

// AddrOf returns a node's gRPC address, or "".
func (c *Client) AddrOf(id string) string {
	addr, _ := c.cfg.Directory.GRPCAddr(id)
	return addr
}

// Members returns the directory's gossip view.
func (c *Client) Members() []*metadpb.Member { return c.cfg.Directory.Members() }
