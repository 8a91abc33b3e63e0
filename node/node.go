package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/metad/metad/api"
	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/gc"
	"github.com/metad/metad/membership"
	"github.com/metad/metad/objectstore"
	"github.com/metad/metad/raftstore"
	"github.com/metad/metad/repair"
)

// Node is one running metad server.
type Node struct {
	cfg     Config
	log     *slog.Logger
	store   *raftstore.Store
	agent   *membership.Agent
	peers   *api.PeerClient
	api     *api.Server
	grpc    *grpc.Server
	http    *http.Server
	objects *objectstore.Local

	cancel context.CancelFunc // stops the loops below
	wg     sync.WaitGroup     // the loops: serve, health, leader work
	// serveErr receives the first fatal serving error.
	serveErr chan error
}

// Start opens the node's state, joins the cluster and starts serving. The
// configuration must be Complete and valid. reg receives the metrics.
func Start(cfg Config, log *slog.Logger, reg *prometheus.Registry) (n *Node, err error) {
	n = &Node{cfg: cfg, log: log, serveErr: make(chan error, 4)}
	defer func() {
		if err != nil {
			n.closeParts()
		}
	}()
	if n.objects, err = objectstore.NewLocal(cfg.ObjectDir); err != nil {
		return nil, err
	}
	var dial func(string) string
	if len(cfg.DialMap) > 0 {
		dial = cfg.dial
	}
	n.peers = api.NewPeerClient(dial)
	if n.store, err = raftstore.Open(cfg.Raft, n.peers, log.With("component", "raft")); err != nil {
		return nil, err
	}
	if n.agent, err = membership.New(cfg.Membership, n.store.Raft(), n.hooks(), log.With("component", "membership")); err != nil {
		return nil, err
	}
	n.peers.SetDirectory(directory{agent: n.agent, selfID: cfg.NodeID, selfAddr: cfg.GRPCAdvertise})
	if err = n.startServing(reg); err != nil {
		return nil, err
	}
	return n, nil
}

// startServing builds the loops and the API and starts serving gRPC and HTTP.
func (n *Node) startServing(reg *prometheus.Registry) error {
	cfg, log := n.cfg, n.log
	rep, err := repair.New(cfg.Repair, storeAdapter{n.store}, log.With("component", "repair"), reg)
	if err != nil {
		return err
	}
	col, err := gc.New(cfg.GC, gcAdapter{n.store}, n.objects, log.With("component", "gc"), reg)
	if err != nil {
		return err
	}
	n.api, err = api.New(cfg.API, api.Deps{Store: n.store, Repair: rep, Peers: n.peers, Objects: n.objects,
		Logger: log.With("component", "api"), Metrics: reg})
	if err != nil {
		return err
	}
	lis, err := net.Listen("tcp", cfg.GRPCAddr)
	if err != nil {
		return fmt.Errorf("grpc-addr: %w", err)
	}
	n.grpc = grpc.NewServer(n.api.ServerOptions()...)
	n.api.Register(n.grpc)
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.goLoop(func() {
		if err := n.grpc.Serve(lis); err != nil {
			n.serveErr <- fmt.Errorf("grpc: %w", err)
		}
	})
	n.goLoop(func() { n.api.RunHealth(ctx) })
	n.goLoop(func() { n.leaderWork(ctx, rep, col) })
	if cfg.HTTPAddr != "" {
		if err := n.startHTTP(reg); err != nil {
			return err
		}
	}
	log.Info("metad serving", "node", cfg.NodeID, "grpc", lis.Addr().String(), "raft", n.store.Addr(),
		"gossip", n.agent.GossipAddr(), "http", cfg.HTTPAddr, "data_dir", cfg.DataDir)
	return nil
}

func (n *Node) goLoop(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// leaderWork runs repair and GC for each term this node leads, from the
// term's barrier until step-down.
func (n *Node) leaderWork(ctx context.Context, rep *repair.Service, col *gc.Collector) {
	for {
		lctx, term, err := n.store.AwaitLeadership(ctx)
		if err != nil {
			return
		}
		n.log.Info("leading: starting repair and gc", "term", term)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); rep.Run(lctx) }()
		go func() { defer wg.Done(); col.Run(lctx) }()
		wg.Wait()
		n.log.Info("no longer leading: repair and gc stopped", "term", term)
	}
}

// hooks are membership's ties to this node's Raft store and peers.
func (n *Node) hooks() membership.Hooks {
	return membership.Hooks{
		HasState: n.store.HasState,
		Bootstrap: func(servers []raft.Server) error {
			out := make([]raftstore.Server, len(servers))
			for i, s := range servers {
				out[i] = raftstore.Server{ID: string(s.ID), Address: string(s.Address), Suffrage: raftstore.Voter}
			}
			err := n.store.Bootstrap(out)
			if errors.Is(err, raftstore.ErrAlreadyBootstrapped) {
				return fmt.Errorf("%w: %w", raft.ErrCantBootstrap, err)
			}
			return err
		},
		FetchStats: func(ctx context.Context, m membership.Member) (*membership.ServerStats, error) {
			st, err := n.peers.NodeStatus(ctx, m.ID, false)
			if err != nil {
				return nil, err
			}
			return &membership.ServerStats{
				LastContact: st.SinceLastContact.AsDuration(), LastTerm: st.LastLogTerm, LastIndex: st.LastIndex,
			}, nil
		},
	}
}

// Err returns a channel that yields a fatal serving error.
func (n *Node) Err() <-chan error { return n.serveErr }

// Serving reports whether the node's health check says SERVING.
func (n *Node) Serving() bool { return n.api.Serving() }

// Store exposes the node's raft store (for tests and admin commands).
func (n *Node) Store() *raftstore.Store { return n.store }

// Shutdown stops the node gracefully: a leader first hands leadership to
// another voter, then the node stops taking calls, lets calls in flight
// finish (bounded by ShutdownTimeout), leaves gossip and closes Raft. It
// never removes the node from the Raft configuration: a restart rejoins.
func (n *Node) Shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ShutdownTimeout)
	defer cancel()
	if n.store.IsLeader() {
		if err := n.store.TransferLeadership(ctx, ""); err != nil {
			n.log.Warn("shutdown: leadership transfer failed", "err", err)
		} else {
			n.log.Info("shutdown: leadership transferred")
		}
	}
	stopped := make(chan struct{})
	go func() { n.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		n.grpc.Stop()
		<-stopped
	}
	if n.http != nil {
		_ = n.http.Shutdown(ctx)
	}
	if err := n.agent.Leave(time.Second); err != nil {
		n.log.Warn("shutdown: gossip leave failed", "err", err)
	}
	return n.closeParts()
}

// closeParts stops the loops and closes whatever was opened.
func (n *Node) closeParts() error {
	if n.cancel != nil {
		n.cancel()
	}
	if n.grpc != nil {
		n.grpc.Stop()
	}
	var errs []error
	if n.agent != nil {
		errs = append(errs, n.agent.Close())
	}
	if n.store != nil {
		errs = append(errs, n.store.Close())
	}
	n.wg.Wait()
	if n.peers != nil {
		errs = append(errs, n.peers.Close())
	}
	return errors.Join(errs...)
}

// directory turns node ids into gRPC addresses from gossip metadata.
type directory struct {
	agent    *membership.Agent
	selfID   string
	selfAddr string
}

func (d directory) GRPCAddr(id string) (string, bool) {
	if id == d.selfID {
		return d.selfAddr, true
	}
	m, ok := d.agent.Lookup(id)
	if !ok || m.Meta.GRPCAddr == "" {
		return "", false
	}
	return m.Meta.GRPCAddr, true
}

func (d directory) Members() []*metadpb.Member {
	var out []*metadpb.Member
	for _, m := range d.agent.Members() {
		out = append(out, &metadpb.Member{NodeId: m.ID, GossipAddr: m.GossipAddr, RaftAddr: m.Meta.RaftAddr,
			GrpcAddr: m.Meta.GRPCAddr, Status: m.Status.String()})
	}
	return out
}

// storeAdapter and gcAdapter give the leader loops the store with their
// own State types.
type storeAdapter struct{ s *raftstore.Store }

func (a storeAdapter) Read(ctx context.Context, fn func(repair.State)) error {
	return a.s.Read(ctx, func(m *fsm.Machine) error { fn(m); return nil })
}

func (a storeAdapter) Propose(ctx context.Context, cmd *fsmpb.Command) (*fsmpb.Result, error) {
	return a.s.Propose(ctx, cmd)
}

type gcAdapter struct{ s *raftstore.Store }

func (a gcAdapter) Read(ctx context.Context, fn func(gc.State)) error {
	return a.s.Read(ctx, func(m *fsm.Machine) error { fn(m); return nil })
}

func (a gcAdapter) Propose(ctx context.Context, cmd *fsmpb.Command) (*fsmpb.Result, error) {
	return a.s.Propose(ctx, cmd)
}
