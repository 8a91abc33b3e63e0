package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/auth"
	"github.com/metad/metad/clock"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/objectstore"
	"github.com/metad/metad/peer"
	"github.com/metad/metad/raftstore"
	"github.com/metad/metad/readpath"
	"github.com/metad/metad/watch"
)

// Config bounds the API.
type Config struct {
	// DefaultTimeout applies to calls that arrive without a deadline.
	// Default 10s; range [100ms, MaxTimeout].
	DefaultTimeout time.Duration
	// MaxTimeout caps any call's deadline. Default 60s; range [1s, 10m].
	MaxTimeout time.Duration
	// MaxMessageBytes bounds a request or response. Default 8 MiB; range
	// [64 KiB, 256 MiB].
	MaxMessageBytes int
	// MaxListLimit caps list calls' page size. Default 1000; range [1, 100000].
	MaxListLimit int
	// HealthInterval is how often health is re-evaluated. Default 500ms;
	// range [10ms, 1m].
	HealthInterval time.Duration
	// CaughtUpSlack is how many entries a follower's applied index may lag
	// the leader's commit index and still report SERVING. Default 1000;
	// range [0, 1<<30].
	CaughtUpSlack uint64
	// MaxObjectStreams bounds the appends (streams) of one CommitObject.
	// Default 1000; range [1, fsm.MaxAppendsPerObject].
	MaxObjectStreams int
	// MaxCommandBytes bounds the encoded size of one CommitObject's Raft
	// entry. Default 4 MiB; range [64 KiB, MaxMessageBytes].
	MaxCommandBytes int
	// Config shapes the read path: VerifyObjects, SharePins, LeaseMargin
	// and Resolver, documented in package readpath (embedded, so that
	// cmd/metad sets them as fields of api.Config).
	readpath.Config
	// Watch bounds the change feed: history per stream, watchers, and each
	// watcher's queue. node builds the hub from it.
	Watch watch.Config
}

// DefaultConfig returns the defaults documented on Config.
func DefaultConfig() Config {
	return Config{
		DefaultTimeout: 10 * time.Second, MaxTimeout: 60 * time.Second, MaxMessageBytes: 8 << 20,
		MaxListLimit: 1000, MaxObjectStreams: 1000, MaxCommandBytes: 4 << 20, HealthInterval: 500 * time.Millisecond, CaughtUpSlack: 1000,
		Config: readpath.DefaultConfig(), Watch: watch.DefaultConfig(),
	}
}

// Validate reports every out-of-range setting.
func (c Config) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf("api: "+format, args...))
		}
	}
	check(c.MaxTimeout >= time.Second && c.MaxTimeout <= 10*time.Minute, "MaxTimeout %s outside [1s, 10m]", c.MaxTimeout)
	check(c.DefaultTimeout >= 100*time.Millisecond && c.DefaultTimeout <= c.MaxTimeout, "DefaultTimeout %s outside [100ms, MaxTimeout]", c.DefaultTimeout)
	check(c.MaxMessageBytes >= 64<<10 && c.MaxMessageBytes <= 256<<20, "MaxMessageBytes %d outside [64KiB, 256MiB]", c.MaxMessageBytes)
	check(c.MaxListLimit >= 1 && c.MaxListLimit <= 100000, "MaxListLimit %d outside [1, 100000]", c.MaxListLimit)
	check(c.MaxObjectStreams >= 1 && c.MaxObjectStreams <= fsm.MaxAppendsPerObject, "MaxObjectStreams %d outside [1, %d]", c.MaxObjectStreams, fsm.MaxAppendsPerObject)
	check(c.MaxCommandBytes >= 64<<10 && c.MaxCommandBytes <= c.MaxMessageBytes, "MaxCommandBytes %d outside [64KiB, %d] (a command fits in the largest gRPC message)", c.MaxCommandBytes, c.MaxMessageBytes)
	check(c.HealthInterval >= 10*time.Millisecond && c.HealthInterval <= time.Minute, "HealthInterval %s outside [10ms, 1m]", c.HealthInterval)
	check(c.CaughtUpSlack <= 1<<30, "CaughtUpSlack %d above 2^30", c.CaughtUpSlack)
	if err := c.Config.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Watch.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Deps are the server's collaborators. Objects may be nil.
type Deps struct {
	Store *raftstore.Store
	// Peer is this node's node-to-node side (package peer): forwarding to
	// the leader, status fan-out, the cluster id check and the tombstone
	// policy, and the Peer service, registered with the others.
	Peer *peer.Node
	// Resolver is the read path node built over the same store and Peer.
	Resolver *readpath.Resolver
	Objects  objectstore.Store
	// ObjectStore is how Objects was opened; Cluster.Status reports it so
	// that clients use the servers' store (file:// URLs absolute).
	ObjectStore objectstore.Config
	Logger      *slog.Logger
	// Metrics receives the API's metrics; nil leaves them unregistered.
	Metrics prometheus.Registerer
	// Auth says how callers are identified (authz.go). Its PeerSecret is
	// required when TLS is off.
	Auth auth.Settings
	// Watch is the apply path's change feed, which raftstore feeds; nil
	// disables Watch and DescribeStream's long poll.
	Watch *watch.Hub
	// Clock is the health loop's, the deadlines' and the long polls' time
	// source; nil is clock.Real.
	Clock clock.Clock
}

// Server serves the public Metad and Cluster services and gRPC health;
// the Peer service is package peer's, registered alongside.
type Server struct {
	metadpb.UnimplementedMetadServer
	metadpb.UnimplementedClusterServer

	cfg     Config
	store   *raftstore.Store
	peer    *peer.Node
	objects objectstore.Store
	// objectStore: Deps.ObjectStore.
	objectStore   objectstore.Config
	log           *slog.Logger
	clock         clock.Clock
	resolver      *readpath.Resolver
	metrics       *resolveMetrics
	objectMetrics *objectMetrics
	health        *health.Server
	// readiness keeps the last readiness reason (readiness.go).
	readiness readiness
	auth      auth.Settings
	// refusals bounds the log lines of refused peer secrets (authz.go).
	refusals auth.RefusalLimiter

	hub          *watch.Hub
	watchMetrics *watchMetrics
	// watchesEnd is closed by Drain: every watch and long poll ends.
	watchesEnd  chan struct{}
	endWatchOne sync.Once
	// watchStale is closed (and replaced) when this node has lost its
	// leader for Config.Watch.StaleAfter; leaderlessSince, owned by
	// RunHealth's goroutine, is since when (watch.go).
	watchStale      atomic.Pointer[chan struct{}]
	leaderlessSince time.Time
}

// New returns a Server.
func New(cfg Config, deps Deps) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Store == nil || deps.Peer == nil || deps.Resolver == nil || deps.Logger == nil {
		return nil, errors.New("api: Store, Peer, Resolver and Logger are required")
	}
	if !deps.Auth.TLS && deps.Auth.PeerSecret == "" {
		return nil, errors.New("api: without TLS, Auth needs a PeerSecret")
	}
	if deps.Clock == nil {
		deps.Clock = clock.Real
	}
	s := &Server{
		cfg: cfg, store: deps.Store, peer: deps.Peer, resolver: deps.Resolver, objects: deps.Objects, objectStore: deps.ObjectStore,
		log: deps.Logger, clock: deps.Clock, health: health.NewServer(),
		metrics: newResolveMetrics(deps.Metrics), objectMetrics: newObjectMetrics(deps.Metrics),
		auth: deps.Auth,
		hub:  deps.Watch, watchMetrics: newWatchMetrics(deps.Metrics, deps.Watch), watchesEnd: make(chan struct{}),
	}
	stale := make(chan struct{})
	s.watchStale.Store(&stale)
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	return s, nil
}

// streamWorkers is how many goroutines serve RPCs from a reused pool. A
// fresh goroutine per RPC starts with a small stack that every resolve
// grows by copying: 17% of the leader's CPU under resolve load at
// concurrency 64 (PERFORMANCE.md). Pool workers keep their grown stacks;
// an RPC that finds every worker busy gets its own goroutine as before.
const streamWorkers = 256

// ServerOptions are the grpc.Server options the API needs: the worker
// pool, message bounds, the codec that turns undecodable requests into
// InvalidArgument (codec.go), the audit trail of operator actions
// (audit.go: outermost, so it records refusals too), the authorization
// interceptors (a refused call runs nothing, and learns nothing about its
// request), and the deadline and panic interceptor.
func (s *Server) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.NumStreamWorkers(streamWorkers),
		grpc.MaxRecvMsgSize(s.cfg.MaxMessageBytes),
		grpc.MaxSendMsgSize(s.cfg.MaxMessageBytes),
		grpc.ForceServerCodecV2(newDecodeCodec()),
		grpc.ChainUnaryInterceptor(s.auditUnary, s.authUnary, s.peer.ClusterIDUnary, refuseUndecodable, s.unaryInterceptor),
		grpc.ChainStreamInterceptor(s.auditStream, s.authStream, refuseUndecodableStream),
	}
}

// Register registers every service (the Peer service is package peer's),
// health and reflection on g.
func (s *Server) Register(g *grpc.Server) {
	metadpb.RegisterMetadServer(g, s)
	metadpb.RegisterClusterServer(g, s)
	s.peer.Register(g)
	healthpb.RegisterHealthServer(g, s.health)
	reflection.Register(g)
}

// unaryInterceptor imposes the default and maximum deadline, and turns a
// panic in a handler into INTERNAL instead of a crashed node.
func (s *Server) unaryInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
	deadline, ok := ctx.Deadline()
	maxDeadline := s.clock.Now().Add(s.cfg.MaxTimeout)
	var cancel context.CancelFunc
	switch {
	case !ok:
		ctx, cancel = context.WithTimeout(ctx, s.cfg.DefaultTimeout)
	case deadline.After(maxDeadline):
		ctx, cancel = context.WithDeadline(ctx, maxDeadline)
	default:
		cancel = func() {}
	}
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("api: handler panicked", "method", info.FullMethod, "panic", p, "stack", string(debug.Stack()))
			err = fail(metadpb.Reason_INTERNAL, sprintf("internal error in %s", info.FullMethod), "")
		}
	}()
	return h(ctx, req)
}

// RunHealth keeps the health status current until ctx ends: SERVING when
// this node is ready (readiness.go: a member of the configuration, a
// leader known, applied close to the leader's commit index).
func (s *Server) RunHealth(ctx context.Context) {
	last := healthpb.HealthCheckResponse_UNKNOWN
	clock.Every(ctx, s.clock, s.cfg.HealthInterval, func() bool {
		s.checkWatchLiveness(s.store.Status(), s.clock.Now())
		want := healthpb.HealthCheckResponse_NOT_SERVING
		ok, reason := s.ready(ctx)
		s.readiness.reason.Store(&reason)
		if ok {
			want = healthpb.HealthCheckResponse_SERVING
		}
		if want != last {
			s.health.SetServingStatus("", want)
			for _, svc := range []string{metadpb.Metad_ServiceDesc.ServiceName, metadpb.Cluster_ServiceDesc.ServiceName} {
				s.health.SetServingStatus(svc, want)
			}
			last = want
		}
		return true
	})
	s.health.Shutdown()
}

// Serving reports the current health verdict.
func (s *Server) Serving() bool {
	resp, err := s.health.Check(context.Background(), &healthpb.HealthCheckRequest{})
	return err == nil && resp.Status == healthpb.HealthCheckResponse_SERVING
}

func (s *Server) limit(n uint32) int {
	if n == 0 || int(n) > s.cfg.MaxListLimit {
		return s.cfg.MaxListLimit
	}
	return int(n)
}
