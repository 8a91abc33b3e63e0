package api

// The in-process cluster: three real nodes in this test binary, each a
// raftstore.Store on its own t.TempDir(), raft over loopback TCP
// (127.0.0.1:0), and one gRPC server serving Metad, Cluster and Peer, as
// node builds it (node.buildServices), whose listener is a bufconn. Test
// clients and the nodes' peer clients dial those listeners through
// inprocCluster.dial, which a test can cut per node (the node's public
// side unreachable while its raft carries on).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/api/reasons"
	"github.com/metad/metad/auth"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/internal/waitfor"
	"github.com/metad/metad/peer"
	"github.com/metad/metad/raftstore"
	"github.com/metad/metad/readpath"
	"github.com/metad/metad/repair"
	"github.com/metad/metad/watch"
)

// inprocWait bounds every wait for the cluster to reach a state: a guard
// against hangs, not a speed assertion.
const inprocWait = 30 * time.Second

const inprocSecret = "inproc-peer-secret"

type inprocCluster struct {
	t     *testing.T
	log   *slog.Logger
	nodes []*inprocNode

	// mu guards the dial map and the connections made through it.
	mu    sync.Mutex
	lis   map[string]*bufconn.Listener // by gRPC address; absent: stopped
	cuts  map[string]bool              // by gRPC address: unreachable to the other nodes
	conns map[string][]net.Conn        // the nodes' connections, by gRPC address, for cut
	// misdirect sends node [0]'s calls to node [1] to this gRPC address.
	misdirect map[[2]string]string
}

type inprocNode struct {
	id, addr string // node id; gRPC address (a bufconn name)
	cfg      raftstore.Config
	store    *raftstore.Store
	peers    *peer.Client
	peer     *peer.Node
	api      *Server
	grpc     *grpc.Server
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	// client is an anonymous client (an operator: the cluster runs open,
	// with a peer secret), peerClient one presenting the peer secret.
	client, peerClient *grpc.ClientConn
	stopped            bool
	// proposals counts the Peer.Propose calls this node served.
	proposals atomic.Int64
	// stalled, if set, is the full method this node holds until the
	// call's deadline.
	stalled atomic.Pointer[string]
}

// intercept counts Peer.Propose calls, and holds a call to the stalled
// method until its deadline: a leader that never answers in time.
func (n *inprocNode) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if info.FullMethod == metadpb.Peer_Propose_FullMethodName {
		n.proposals.Add(1)
	}
	if m := n.stalled.Load(); m != nil && *m == info.FullMethod {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return h(ctx, req)
}

// inprocDirectory is node self's view of the others' gRPC addresses.
type inprocDirectory struct {
	c    *inprocCluster
	self string
}

func (d inprocDirectory) GRPCAddr(id string) (string, bool) {
	d.c.mu.Lock()
	to, ok := d.c.misdirect[[2]string{d.self, id}]
	d.c.mu.Unlock()
	if ok {
		return to, true
	}
	for _, n := range d.c.nodes {
		if n.id == id {
			return n.addr, true
		}
	}
	return "", false
}

func (inprocDirectory) Members() []*metadpb.Member { return nil }

// newInprocCluster starts three nodes, bootstraps them and waits for a
// leader. space, if not nil, is every store's raftstore.Config.Space.
func newInprocCluster(t *testing.T, space raftstore.SpaceGuard) *inprocCluster {
	t.Helper()
	c := &inprocCluster{t: t, log: slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn})),
		lis: map[string]*bufconn.Listener{}, cuts: map[string]bool{}, misdirect: map[[2]string]string{}, conns: map[string][]net.Conn{}}
	t.Cleanup(c.close)
	dir := t.TempDir()
	var servers []raftstore.Server
	for i := range 3 {
		id := fmt.Sprintf("n%d", i+1)
		cfg := raftstore.DefaultConfig()
		cfg.NodeID, cfg.DataDir, cfg.BindAddr = id, filepath.Join(dir, id), "127.0.0.1:0"
		// Generous timings: the machine is shared and -race is slow, and
		// an election the test did not ask for moves its leader.
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = 2*time.Second, 2*time.Second, time.Second
		cfg.ApplyTimeout, cfg.LeadershipPollInterval = 3*time.Second, 20*time.Millisecond
		cfg.SnapshotInterval, cfg.SnapshotThreshold = time.Hour, 1<<30
		cfg.Space = space
		n := &inprocNode{id: id, addr: "bufconn-" + id, cfg: cfg}
		c.nodes = append(c.nodes, n)
		c.start(n)
		servers = append(servers, raftstore.Server{ID: id, Address: n.store.Addr()})
	}
	if err := c.nodes[0].store.Bootstrap(servers); err != nil {
		t.Fatal(err)
	}
	c.leader()
	return c
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// start opens n's store and serves its API, as node.buildServices wires it.
func (c *inprocCluster) start(n *inprocNode) {
	t := c.t
	t.Helper()
	var err error
	dialer := grpc.WithContextDialer(c.peerDial)
	n.peers, err = peer.NewClient(peer.ClientConfig{Directory: inprocDirectory{c, n.id},
		Credentials: []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithPerRPCCredentials(auth.PeerSecretCredentials(inprocSecret)), dialer}})
	must(t, err)
	hub, err := watch.New(watch.DefaultConfig())
	must(t, err)
	log := c.log.With("node", n.id)
	n.store, err = raftstore.OpenObserved(n.cfg, n.peers, log, hub)
	must(t, err)
	rep, err := repair.New(repair.DefaultConfig(), readpath.NewStore[repair.State](n.store), log, nil)
	must(t, err)
	n.peer, err = peer.New(peer.DefaultConfig(), peer.Deps{Store: n.store, Repair: rep, Client: n.peers, Logger: log, ToStatus: ToStatus})
	must(t, err)
	cfg := DefaultConfig()
	// A call that comes without a deadline gets 2s (every test call
	// brings its own but TestDeadlineOverTheWire's).
	cfg.DefaultTimeout = 2 * time.Second
	res, err := readpath.New(cfg.Config, readpath.Deps{Store: n.store, Propose: n.peer.Propose, Repair: rep, RepairOnLeader: n.peers.ForwardRepair})
	must(t, err)
	n.api, err = New(cfg, Deps{Store: n.store, Peer: n.peer, Resolver: res, Logger: log, Auth: auth.Settings{PeerSecret: inprocSecret}, Watch: hub})
	must(t, err)
	n.grpc = grpc.NewServer(append(n.api.ServerOptions(), grpc.ChainUnaryInterceptor(n.intercept))...)
	n.api.Register(n.grpc)
	lis := bufconn.Listen(1 << 20)
	c.mu.Lock()
	c.lis[n.addr] = lis
	delete(c.cuts, n.addr)
	c.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.wg.Add(3)
	go func() { defer n.wg.Done(); _ = n.grpc.Serve(lis) }()
	go func() { defer n.wg.Done(); n.api.RunHealth(ctx) }()
	// The leader's loops, as node.leaderWork runs them (repair only).
	go func() {
		defer n.wg.Done()
		for {
			lctx, _, err := n.store.AwaitLeadership(ctx)
			if err != nil {
				return
			}
			rep.Run(lctx)
		}
	}()
	n.client = c.conn(n.addr)
	n.peerClient = c.conn(n.addr, grpc.WithPerRPCCredentials(auth.PeerSecretCredentials(inprocSecret)))
	n.stopped = false
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (c *inprocCluster) conn(addr string, opts ...grpc.DialOption) *grpc.ClientConn {
	cc, err := grpc.NewClient("passthrough:///"+addr, append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(c.dial)}, opts...)...)
	must(c.t, err)
	return cc
}

// errCut: the node's listener is cut or stopped.
var errCut = errors.New("inproc: node unreachable")

// dial is the test clients' dialer: it reaches a running node's
// listener, cut or not.
func (c *inprocCluster) dial(ctx context.Context, addr string) (net.Conn, error) {
	c.mu.Lock()
	lis, ok := c.lis[addr]
	c.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: %s", errCut, addr)
	}
	return lis.DialContext(ctx)
}

// peerDial is the nodes' dialer (their peer clients): a cut node is
// unreachable to the others.
func (c *inprocCluster) peerDial(ctx context.Context, addr string) (net.Conn, error) {
	c.mu.Lock()
	lis, ok := c.lis[addr]
	cut := c.cuts[addr]
	c.mu.Unlock()
	if !ok || cut {
		return nil, fmt.Errorf("%w: %s", errCut, addr)
	}
	conn, err := lis.DialContext(ctx)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cuts[addr] { // cut meanwhile
		conn.Close()
		return nil, fmt.Errorf("%w: %s", errCut, addr)
	}
	c.conns[addr] = append(c.conns[addr], conn)
	return conn, nil
}

// cut makes n's gRPC side unreachable to the other nodes (its raft and
// the test clients are untouched): their open connections to it break,
// new ones are refused. It returns the undo.
func (c *inprocCluster) cut(n *inprocNode) (heal func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cuts[n.addr] = true
	for _, conn := range c.conns[n.addr] {
		conn.Close()
	}
	delete(c.conns, n.addr)
	return func() {
		c.mu.Lock()
		delete(c.cuts, n.addr)
		c.mu.Unlock()
		c.reconnected(n)
	}
}

// reconnected waits until every running node's connection to n is ready
// again: gRPC fails calls at once while a connection backs off.
func (c *inprocCluster) reconnected(n *inprocNode) {
	c.t.Helper()
	for _, o := range c.nodes {
		if o == n || o.stopped {
			continue
		}
		cc, err := o.peers.Conn(n.id)
		must(c.t, err)
		c.eventually(o.id+" reconnected to "+n.id, func() error {
			if st := cc.GetState(); st != connectivity.Ready {
				cc.Connect()
				return fmt.Errorf("connection %v", st)
			}
			return nil
		})
	}
}

// stop closes n: its gRPC side is cut, its server and store closed.
func (c *inprocCluster) stop(n *inprocNode) {
	if n.stopped {
		return
	}
	n.stopped = true
	c.cut(n)
	c.mu.Lock()
	delete(c.lis, n.addr)
	c.mu.Unlock()
	n.cancel()
	n.grpc.Stop()
	n.client.Close()
	n.peerClient.Close()
	if err := n.store.Close(); err != nil {
		c.t.Errorf("close %s: %v", n.id, err)
	}
	n.wg.Wait()
	n.peers.Close()
}

func (c *inprocCluster) close() {
	for _, n := range c.nodes {
		c.stop(n)
	}
}

// leader waits until the running nodes agree on a leader that is one of
// them, and returns it.
func (c *inprocCluster) leader() *inprocNode {
	c.t.Helper()
	var l *inprocNode
	c.eventually("a leader every running node knows", func() error {
		l = nil
		for _, n := range c.nodes {
			if !n.stopped && n.store.IsLeader() {
				l = n
			}
		}
		if l == nil {
			return errors.New("no leader")
		}
		for _, n := range c.nodes {
			if id, _ := n.store.Leader(); !n.stopped && id != l.id {
				return fmt.Errorf("%s follows %q, not %s", n.id, id, l.id)
			}
		}
		return nil
	})
	return l
}

// followers returns the running nodes other than l.
func (c *inprocCluster) followers(l *inprocNode) []*inprocNode {
	var out []*inprocNode
	for _, n := range c.nodes {
		if n != l && !n.stopped {
			out = append(out, n)
		}
	}
	return out
}

// eventually polls cond until it returns nil, failing the test with its
// last error after inprocWait.
func (c *inprocCluster) eventually(what string, cond func() error) {
	c.t.Helper()
	waitfor.Cond(c.t, inprocWait, what, cond)
}

func (c *inprocCluster) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), inprocWait)
	c.t.Cleanup(cancel)
	return ctx
}

func metad(cc *grpc.ClientConn) metadpb.MetadClient     { return metadpb.NewMetadClient(cc) }
func cluster(cc *grpc.ClientConn) metadpb.ClusterClient { return metadpb.NewClusterClient(cc) }
func peerRPC(cc *grpc.ClientConn) metadpb.PeerClient    { return metadpb.NewPeerClient(cc) }

// raiseLevel raises the cluster's feature level to the highest this build
// applies (node's leader loop does it in a running cluster).
func (c *inprocCluster) raiseLevel() {
	c.t.Helper()
	c.eventually("the feature level raised to fsm.MaxLevel", func() error {
		level, err := c.leader().peer.RaiseFeatureLevel(c.ctx())
		if err == nil && level < fsm.MaxLevel {
			err = fmt.Errorf("level %d", level)
		}
		return err
	})
}

// transfer moves leadership from the node asked (on) to node to, asking
// again while raft gives the transfer up (CONFIGURATION_REFUSED, which
// says retry: an election the test did not ask for can cut across it).
func (c *inprocCluster) transfer(ctx context.Context, on *inprocNode, to string) (*metadpb.TransferLeadershipResponse, error) {
	for {
		resp, err := cluster(on.client).TransferLeadership(ctx, &metadpb.TransferLeadershipRequest{ToNodeId: to})
		if reasons.FromError(err) != metadpb.Reason_CONFIGURATION_REFUSED || ctx.Err() != nil {
			return resp, err
		}
		c.t.Logf("transfer to %s via %s given up by raft, asking again: %v", to, on.id, err)
	}
}
