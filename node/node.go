package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/metad/metad/api"
	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/auth"
	"github.com/metad/metad/backup"
	"github.com/metad/metad/clock"
	"github.com/metad/metad/diskspace"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/gc"
	"github.com/metad/metad/membership"
	"github.com/metad/metad/objectstore"
	"github.com/metad/metad/peer"
	"github.com/metad/metad/raftstore"
	"github.com/metad/metad/readpath"
	"github.com/metad/metad/repair"
	"github.com/metad/metad/tracing"
	"github.com/metad/metad/watch"
)

// Server is one running metad server: its parts, started together by Start
// and stopped together by Shutdown.
type Server struct {
	cfg   Config
	log   *slog.Logger
	store *raftstore.Store
	hub   *watch.Hub
	agent *membership.Agent
	// peers reaches the other nodes; peer is this node's side of the
	// node-to-node work (package peer), api the public services.
	peers   *peer.Client
	peer    *peer.Node
	tracer  *tracing.Provider
	api     *api.Server
	grpc    *grpc.Server
	http    *http.Server
	objects objectstore.Store
	// backups is the backup target, nil when backups are off.
	backups backup.Target
	rpc     *api.RPCMetrics
	notify  *notifier
	// incarnation is this data dir's incarnation id (incarnation.go).
	incarnation string
	// clusterID is the data dir's record of the cluster id (clusterid.go).
	clusterID *clusterIdentity
	// raftRef hands the store to membership once open (membership.go).
	raftRef *storeRef
	sec     *security
	// gossipKeys follows Security.GossipKeyFile, nil without it.
	gossipKeys *gossipKeys
	// leaders are the recent leader changes, for the status page.
	leaders leaderLog
	// peerRefusals: the nodes that refuse this node's peer secret.
	peerRefusals peerRefusals
	// opened turns true once the raft state is open and the API built:
	// until then the HTTP admin endpoints, served from before the restore,
	// answer without them (http.go).
	opened atomic.Bool
	// Claimed by preflight before anything is written.
	grpcLis, httpLis net.Listener
	lock             *os.File // flock on the data dir

	cancel context.CancelFunc // stops the loops below
	wg     sync.WaitGroup     // the loops: serve, health, leader work
	disk   *diskspace.Guard   // the data dir's free space (refuses growth when low)
	// serveErr receives the first fatal serving error.
	serveErr chan error
}

// Start opens the node's state, joins the cluster and starts serving. The
// configuration must be Complete and valid. reg receives the metrics.
func Start(cfg Config, log *slog.Logger, reg *prometheus.Registry) (_ *Server, err error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	n := &Server{cfg: cfg, log: log, serveErr: make(chan error, 4),
		notify: &notifier{socket: cfg.NotifySocket, log: log}}
	defer func() {
		if err != nil {
			// Close what was opened; the error is what the caller sees.
			_ = n.closeParts()
		}
	}()
	// Everything that can refuse the start without writing comes first.
	// Only then is the data dir locked and written (its node id,
	// incarnation), so a refused start leaves it as it was and the
	// corrected command starts.
	if err = n.checkWithoutWriting(&cfg); err != nil {
		return nil, err
	}
	if err = n.claimDataDir(); err != nil {
		return nil, err
	}
	// The start is now committed: a file:// store's directory is made
	// here (opened, it wrote nothing), so clients that check it find it.
	if l, ok := n.objects.(*objectstore.Local); ok {
		if err = l.Create(); err != nil {
			return nil, err
		}
	}
	if err = n.loadIdentity(&cfg); err != nil {
		return nil, err
	}
	// Gossip first: opening raft restores the latest snapshot (minutes for
	// a large state), and a server that announces itself meanwhile is
	// alive to the leader, never a removal candidate.
	hadState, err := priorRaftState(cfg.Raft)
	if err != nil {
		return nil, err
	}
	n.raftRef = &storeRef{}
	mr := membershipRaft{n.raftRef}
	if n.agent, err = membership.New(cfg.Membership, mr, n.hooks(mr, hadState), log.With("component", "membership")); err != nil {
		return nil, err
	}
	if cfg.Security.GossipKeyFile != "" {
		n.gossipKeys = newGossipKeys(cfg.Security.GossipKeyFile, n.agent, log.With("component", "security"))
	}
	// The peer client next, with everything it needs: the directory is
	// the agent's view, so it comes after the agent; raft needs it to
	// confirm leadership. The agent's hooks reach it only while this node
	// leads, which needs the store opened below.
	if n.peers, err = n.newPeerClient(cfg); err != nil {
		return nil, err
	}
	// The change feed observes the apply path from before raft starts, so
	// it sees the startup restore and the log replayed after it.
	if n.hub, err = watch.New(cfg.API.Watch); err != nil {
		return nil, err
	}
	// Health next, for the same reason: /healthz answers and /readyz says
	// 503 "restoring" while the restore runs, instead of refusing
	// connections, which a supervisor or balancer reads as a dead process.
	if cfg.HTTPAddr != "" {
		if err = n.startHTTP(reg); err != nil {
			return nil, err
		}
	}
	// The disk guard is checked once before raft opens, so a node starting
	// on a full disk refuses growth from its first request.
	n.disk = diskspace.New(diskspace.Config{Dir: cfg.DataDir, Reserve: cfg.DiskReserve}, log.With("component", "disk"),
		diskspace.WithClock(serverClock))
	reg.MustRegister(n.disk.Collector())
	cfg.Raft.Space = n.disk
	obs := observers{n.hub, clusterIDRecorder{id: n.clusterID, log: log}}
	if n.store, err = openRaft(cfg.Raft, n.peers, log.With("component", "raft"), obs); err != nil {
		return nil, err
	}
	n.raftRef.p.Store(n.store)
	if err = n.checkClusterID(); err != nil {
		return nil, err
	}
	if err = n.registerMetrics(reg); err != nil {
		return nil, err
	}
	if err = n.registerMembershipMetrics(reg); err != nil {
		return nil, err
	}
	if err = n.startServing(reg); err != nil {
		return nil, err
	}
	return n, nil
}

// loadIdentity reads what this node is from its data dir (its incarnation
// and recorded cluster id), filling in the parts of cfg's raft and
// membership settings that depend on them.
func (n *Server) loadIdentity(cfg *Config) (err error) {
	if n.incarnation, err = LoadIncarnation(cfg.DataDir); err != nil {
		return err
	}
	recordedID, err := LoadClusterID(cfg.DataDir)
	if err != nil {
		return err
	}
	n.clusterID = &clusterIdentity{dataDir: cfg.DataDir, recorded: recordedID}
	cfg.Raft.ClusterID, cfg.Membership.ClusterID = recordedID, recordedID
	return nil
}

// loadSecurity reads how this node proves itself to the others (gossip
// keys, the peer secret or TLS, the tokens file) without writing
// anything, filling in cfg's raft and membership settings that depend on
// them.
func (n *Server) loadSecurity(cfg *Config) (err error) {
	if cfg.Security.GossipKeyFile != "" {
		if cfg.Membership.GossipKeys, err = LoadGossipKeys(cfg.Security.GossipKeyFile); err != nil {
			return err
		}
	}
	if n.sec, err = newSecurity(cfg.Security, cfg.multiNode(), n.log.With("component", "security")); err != nil {
		return err
	}
	cfg.Raft.TLS = n.sec.raftTLS()
	return nil
}

// newPeerClient builds the client of the other nodes' Peer services: the
// directory over gossip, the dial map, this node's peer credentials and
// its cluster id, all given at once (loadSecurity and the agent first).
func (n *Server) newPeerClient(cfg Config) (*peer.Client, error) {
	var dial func(string) string
	if len(cfg.DialMap) > 0 {
		dial = cfg.dial
	}
	return peer.NewClient(peer.ClientConfig{
		Directory:   directory{agent: n.agent, selfID: cfg.NodeID, selfAddr: cfg.GRPCAdvertise, selfInc: n.incarnation},
		Dial:        dial,
		Credentials: append(n.sec.peerDialOptions(cfg.NodeID), n.tracer.DialOption()),
		ClusterID:   n.ownClusterID,
	})
}

// buildServices builds, in dependency order, the node-to-node side (over
// the peer client), the read path (proposing through it) and the public
// API (over both).
func (n *Server) buildServices(rep *repair.Service, reg *prometheus.Registry) (err error) {
	cfg, log := n.cfg, n.log
	n.peer, err = peer.New(peer.DefaultConfig(), peer.Deps{Store: n.store, Repair: rep, Client: n.peers,
		Logger: log.With("component", "peer"), ToStatus: api.ToStatus, Removals: n.agent, Incarnation: n.incarnation})
	if err != nil {
		return err
	}
	res, err := readpath.New(cfg.API.Config, readpath.Deps{Store: n.store, Propose: n.peer.Propose, Repair: rep,
		RepairOnLeader: n.peers.ForwardRepair, Objects: n.objects, Metrics: reg, Clock: serverClock})
	if err != nil {
		return err
	}
	n.api, err = api.New(cfg.API, api.Deps{Store: n.store, Peer: n.peer, Resolver: res, Objects: n.objects,
		ObjectStore: reportedStore(cfg.Objects), Logger: log.With("component", "api"), Metrics: reg, Auth: n.authSettings(),
		Watch: n.hub, Clock: serverClock})
	return err
}

// startServing builds the loops and the API and starts serving gRPC and HTTP.
func (n *Server) startServing(reg *prometheus.Registry) error {
	cfg, log := n.cfg, n.log
	rep, err := repair.New(cfg.Repair, readpath.NewStore[repair.State](n.store), log.With("component", "repair"), reg,
		repair.WithVerifier(readpath.Objects{Store: n.objects}), repair.WithClock(serverClock))
	if err != nil {
		return err
	}
	col, err := gc.New(cfg.GC, readpath.NewStore[gc.State](n.store), n.objects, log.With("component", "gc"), reg, gc.WithClock(serverClock))
	if err != nil {
		return err
	}
	var bk *backup.Scheduler
	if n.backups != nil {
		if bk, err = backup.New(cfg.Backup, n.backups, n.store, log.With("component", "backup"), reg, backup.WithClock(serverClock)); err != nil {
			return err
		}
	}
	if err = n.buildServices(rep, reg); err != nil {
		return err
	}
	lis := n.grpcLis
	// The RPC metrics interceptors go first, to count each call's final code.
	n.grpc = grpc.NewServer(append(append(n.rpc.ServerOptions(), n.api.ServerOptions()...), n.sec.serverOption(), n.tracer.ServerOption())...)
	n.api.Register(n.grpc)
	n.rpc.Initialize(n.grpc)
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.goLoop(func() {
		if err := n.grpc.Serve(lis); err != nil {
			n.serveErr <- fmt.Errorf("grpc: %w", err)
		}
	})
	n.goLoop(func() { n.api.RunHealth(ctx) })
	n.goLoop(func() { n.watchFiles(ctx) })
	n.goLoop(func() { n.disk.Run(ctx) })
	n.goLoop(func() { n.leaderWork(ctx, rep, col, bk) })
	n.goLoop(func() {
		select {
		case err := <-n.store.Halted():
			n.serveErr <- fmt.Errorf("raft: %w", err)
		case err := <-n.store.DiskFailed():
			n.serveErr <- err
		case <-ctx.Done():
		}
	})
	n.goLoop(func() { n.announceReady(ctx, cfg.API.HealthInterval) })
	n.goLoop(func() { n.watchRemoval(ctx) })
	n.goLoop(func() { n.watchClusterID(ctx, cfg.API.HealthInterval) })
	n.goLoop(func() { n.watchLeader(ctx, cfg.API.HealthInterval) })
	// /readyz and / turn from "restoring" to the API's verdict and page.
	n.opened.Store(true)
	log.Info("metad serving", "node", cfg.NodeID, "grpc", lis.Addr().String(), "raft", n.store.Addr(),
		"gossip", n.agent.GossipAddr(), "http", cfg.HTTPAddr, "data_dir", cfg.DataDir, "raft_log_store", n.store.Status().LogStore)
	return nil
}

func (n *Server) goLoop(f func()) {
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		f()
	}()
}

// leaderWork runs repair, GC and the backup schedule (bk, nil when
// backups are off) for each term this node leads, from the term's barrier
// until step-down.
func (n *Server) leaderWork(ctx context.Context, rep *repair.Service, col *gc.Collector, bk *backup.Scheduler) {
	for {
		lctx, term, err := n.store.AwaitLeadership(ctx)
		if err != nil {
			return
		}
		n.log.Info("leading: starting repair and gc", "term", term)
		var wg sync.WaitGroup
		wg.Add(3)
		go func() { defer wg.Done(); rep.Run(lctx) }()
		go func() { defer wg.Done(); col.Run(lctx) }()
		go func() { defer wg.Done(); n.raiseFeatureLevel(lctx) }()
		if bk != nil {
			wg.Add(1)
			go func() { defer wg.Done(); bk.Run(lctx) }()
		}
		wg.Wait()
		n.log.Info("no longer leading: repair and gc stopped", "term", term)
	}
}

// featureLevelInterval is how often a leader asks the servers whether the
// cluster's feature level can be raised (peer.Node.RaiseFeatureLevel).
const featureLevelInterval = 5 * time.Second

// raiseFeatureLevel raises the cluster's feature level, while this node
// leads, once every server applies a higher one, and gives the cluster its
// id as soon as the level allows (peer.Node.EnsureClusterID); it ends when
// the level is the highest this binary knows and the id is set.
func (n *Server) raiseFeatureLevel(ctx context.Context) {
	clock.Every(ctx, serverClock, featureLevelInterval, func() bool {
		level, err := n.peer.RaiseFeatureLevel(ctx)
		id := ""
		if err == nil && level >= 2 {
			id, err = n.peer.EnsureClusterID(ctx)
		}
		switch {
		case err == nil && level >= fsm.MaxLevel && id != "":
			return false
		case err != nil && ctx.Err() == nil:
			n.log.Debug("feature level or cluster id not set yet", "level", level, "err", err)
		}
		return true
	})
}

// hooks are membership's ties to this node's Raft store and peers. They
// work before the store is open: HasState from the data dir, the rest
// failing or empty until then.
func (n *Server) hooks(mr membershipRaft, hadState bool) membership.Hooks {
	return membership.Hooks{
		HasState:  mr.hasState(hadState),
		Bootstrap: mr.bootstrap,
		FetchStats: func(ctx context.Context, m membership.Member) (*membership.ServerStats, error) {
			st, err := n.peers.NodeStatus(ctx, m.ID, false)
			n.peerRefusals.observe(n.log, m.ID, m.Meta.GRPCAddr, err)
			if err != nil {
				return nil, err
			}
			return &membership.ServerStats{
				LastContact: st.SinceLastContact.AsDuration(), LastTerm: st.LastLogTerm, LastIndex: st.LastIndex,
				Incarnation: st.Incarnation, ClusterID: st.ClusterId,
			}, nil
		},
		Tombstones: n.tombstones,
		ClusterID:  n.ownClusterID,
		Clock:      serverClock,
	}
}

// ownClusterID is the id of the cluster this node belongs to: the raft
// store's (its state's, or the data dir's until the state has one), or
// before the store is open the data dir's.
func (n *Server) ownClusterID() string {
	if n.raftRef != nil {
		if st := n.raftRef.p.Load(); st != nil {
			return st.ClusterID()
		}
	}
	return n.clusterID.get()
}

// tombstones is membership's Hooks.Tombstones: the local replicated state's.
func (n *Server) tombstones() []membership.Tombstone {
	st := n.raftRef.p.Load()
	if st == nil {
		return nil
	}
	var out []membership.Tombstone
	_ = st.ReadLocal(func(m *fsm.Machine) error {
		for _, t := range m.Tombstones() {
			out = append(out, membership.Tombstone{NodeID: t.NodeID, Incarnation: t.Incarnation})
		}
		return nil
	})
	return out
}

// Err returns a channel that yields a fatal serving error.
func (n *Server) Err() <-chan error { return n.serveErr }

// Shutdown stops the node gracefully, in this order: it reports
// NOT_SERVING (gRPC health, /readyz) and STOPPING=1 to systemd so that
// balancers stop sending it calls; a leader hands leadership to another
// voter; the gRPC server stops taking calls and lets those in flight
// finish; gossip is left; raft is closed cleanly. The whole is bounded by
// ShutdownTimeout, after which calls still in flight are cut. It never
// removes the node from the Raft configuration: a restart rejoins with its
// data, and acknowledged writes are on disk on a quorum already.
func (n *Server) Shutdown() error {
	start := serverClock.Now()
	ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ShutdownTimeout)
	defer cancel()
	n.log.Info("shutdown: draining", "timeout", n.cfg.ShutdownTimeout)
	n.api.Drain()
	n.notify.markStopping()
	n.handOffLeadership(ctx)
	n.drainCalls(ctx)
	if n.http != nil {
		_ = n.http.Shutdown(ctx)
	}
	if err := n.agent.Leave(time.Second); err != nil {
		n.log.Warn("shutdown: gossip leave failed", "err", err)
	}
	err := n.closeParts()
	n.log.Info("shutdown: done", "took", clock.Since(serverClock, start).Round(time.Millisecond))
	return err
}

// handOffLeadership transfers leadership to another voter if this node
// leads, retrying while ctx allows: raft refuses a transfer while another
// is in progress or the target is still catching up. A node without
// another voter keeps leadership; a failed transfer is logged, and the
// closing leader's followers then elect a successor after their heartbeat
// timeout.
func (n *Server) handOffLeadership(ctx context.Context) {
	if !n.store.IsLeader() {
		return
	}
	servers, err := n.store.Configuration()
	others := 0
	for _, s := range servers {
		if s.ID != n.cfg.NodeID && s.Suffrage == raftstore.Voter {
			others++
		}
	}
	if err != nil || others == 0 {
		n.log.Info("shutdown: no other voter to hand leadership to")
		return
	}
	for attempt := 1; ; attempt++ {
		err := n.store.TransferLeadership(ctx, "")
		if err == nil || !n.store.IsLeader() {
			n.log.Info("shutdown: leadership transferred", "to", n.awaitOtherLeader(ctx), "attempts", attempt)
			return
		}
		if ctx.Err() != nil || attempt == 3 {
			n.log.Warn("shutdown: leadership transfer failed; followers will elect a leader after their heartbeat timeout",
				"err", err, "attempts", attempt)
			return
		}
		n.log.Info("shutdown: leadership transfer failed, retrying", "err", err, "attempt", attempt)
		select {
		case <-ctx.Done():
		case <-clock.After(serverClock, 100*time.Millisecond):
		}
	}
}

// awaitOtherLeader waits (up to a second, within ctx) until this node
// knows the leader that followed it, so calls it forwards while draining
// find that leader, and returns its id ("" if none known yet).
func (n *Server) awaitOtherLeader(ctx context.Context) string {
	deadline := serverClock.Now().Add(time.Second)
	for {
		id, _ := n.store.Leader()
		if (id != "" && id != n.cfg.NodeID) || serverClock.Now().After(deadline) || ctx.Err() != nil {
			return id
		}
		select {
		case <-ctx.Done():
		case <-clock.After(serverClock, 10*time.Millisecond):
		}
	}
}

// drainCalls stops the gRPC server from taking calls and waits for those in
// flight, until ctx ends; then it cuts the rest.
func (n *Server) drainCalls(ctx context.Context) {
	stopped := make(chan struct{})
	go func() { n.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		n.log.Warn("shutdown: calls still in flight at the shutdown timeout are cut")
		n.grpc.Stop()
		<-stopped
	}
}

// closeParts stops the loops and closes whatever was opened.
func (n *Server) closeParts() error {
	if n.cancel != nil {
		n.cancel()
	}
	if n.grpc != nil {
		n.grpc.Stop()
	}
	if n.http != nil {
		_ = n.http.Close() // ends its serve loop, which wg.Wait waits for
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
	for _, l := range []net.Listener{n.grpcLis, n.httpLis} {
		if l != nil {
			_ = l.Close() // already closed if it was served
		}
	}
	if n.lock != nil {
		errs = append(errs, n.lock.Close()) // releases the flock
	}
	if n.tracer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		errs = append(errs, n.tracer.Shutdown(ctx)) // flushes what is buffered
		cancel()
	}
	return errors.Join(errs...)
}

// checkWithoutWriting claims the ports and opens what a start can be
// refused for — tracing, the security files, the object store, the backup
// target — writing nothing.
func (n *Server) checkWithoutWriting(cfg *Config) (err error) {
	if err = n.preflight(); err != nil {
		return err
	}
	cfg.Tracing.NodeID = cfg.NodeID
	if n.tracer, err = tracing.New(context.Background(), cfg.Tracing, cfg.TraceExporter); err != nil {
		return fmt.Errorf("%w: %w", ErrBadSetting, err)
	}
	if err = n.loadSecurity(cfg); err != nil {
		return fmt.Errorf("%w: %w", ErrBadSetting, err)
	}
	if n.objects, err = openObjects(cfg.Objects); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrBadSetting, objectStoreSetting(*cfg), err)
	}
	if n.backups, err = openBackups(cfg.Backup); err != nil {
		return fmt.Errorf("%w: %w", ErrBadSetting, err)
	}
	return nil
}

// directory turns node ids into gRPC addresses from gossip metadata.
type directory struct {
	agent    *membership.Agent
	selfID   string
	selfAddr string
	selfInc  string
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
		inc := d.agent.Incarnation(m.ID)
		if m.ID == d.selfID {
			inc = d.selfInc
		}
		out = append(out, &metadpb.Member{NodeId: m.ID, GossipAddr: m.GossipAddr, RaftAddr: m.Meta.RaftAddr,
			GrpcAddr: m.Meta.GRPCAddr, Status: m.Status.String(), Incarnation: inc})
	}
	return out
}

// reportedStore is the object store as clients are told of it: a file://
// directory made absolute (a client's working directory is not the
// server's), S3 settings without the CA file or TLS (client-side).
func reportedStore(cfg objectstore.Config) objectstore.Config {
	out := objectstore.Config{URL: cfg.URL, S3: objectstore.S3Config{Endpoint: cfg.S3.Endpoint, Region: cfg.S3.Region, PathStyle: cfg.S3.PathStyle}}
	if dir, ok := strings.CutPrefix(cfg.URL, "file://"); ok {
		if abs, err := filepath.Abs(dir); err == nil {
			out.URL = objectstore.FileURL(abs)
		}
	}
	return out
}

// objectStoreSetting names the setting an object store error is about, as
// the operator gave it: --object-dir DIR (the default, <data-dir>/objects,
// is one too) or --object-store URL.
func objectStoreSetting(cfg Config) string {
	if cfg.ObjectDir != "" {
		return "object-dir " + cfg.ObjectDir
	}
	return "object-store " + cfg.Objects.URL
}

// openObjects opens the object store, checking an s3:// bucket is
// reachable and versioned: a node that cannot verify or collect objects
// refuses to start rather than run half-blind.
func openObjects(cfg objectstore.Config) (objectstore.Store, error) {
	ctx, cancel := context.WithTimeout(context.Background(), objectStoreCheckTimeout)
	defer cancel()
	return objectstore.Open(ctx, cfg)
}

// openBackups checks and opens the backup target (nil when backups are
// off), writing nothing: a directory must be writable or creatable, an
// s3:// bucket reachable and versioned.
func openBackups(cfg backup.Config) (backup.Target, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), objectStoreCheckTimeout)
	defer cancel()
	return backup.OpenTarget(ctx, "backup-to", cfg.To, cfg.S3)
}

// objectStoreCheckTimeout bounds the start-up check of the object store,
// retries included.
const objectStoreCheckTimeout = 30 * time.Second

// authSettings are the security settings the API enforces, with the
// rolling-upgrade allowance: while the cluster's feature level is 1 a
// server of the previous release, which knows no peer secret, may be a
// member and forward node-to-node calls without one.
func (n *Server) authSettings() auth.Settings {
	s := n.sec.settings
	if !s.TLS {
		s.LegacyPeers = func() bool { return n.store.FeatureLevel() < 2 }
	}
	return s
}

// openRaft opens the raft state (restoring its latest snapshot): a
// variable so that a test can hold the open and look at /readyz meanwhile.
var openRaft = raftstore.OpenObserved

// priorRaftState reports whether the raft data dir holds state, after
// refusing a log store other than the dir's (raftstore.CheckLogStore), so
// that a wrong --raft-log-store stops the start before gossip begins.
func priorRaftState(cfg raftstore.Config) (bool, error) {
	if err := raftstore.CheckLogStore(cfg.DataDir, cfg.LogStore); err != nil {
		return false, err
	}
	return raftstore.HasStateIn(cfg.DataDir)
}
