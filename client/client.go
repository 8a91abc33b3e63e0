package client

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/clock"
	"github.com/metad/metad/objectstore"
)

// Config says how to reach a cluster.
type Config struct {
	// Addrs are gRPC addresses of any members; calls are balanced round
	// robin and any member serves any call.
	Addrs []string
	// Timeout applies to calls whose context has no deadline. Default 10s.
	Timeout time.Duration
	// MaxRetryDelay caps the wait between retries of retryable failures.
	// Default 1s.
	MaxRetryDelay time.Duration
	// Objects is where Read fetches bytes: objectstore.Open of the URL
	// the servers use (file://DIR or s3://BUCKET[/PREFIX]). Optional for
	// everything else.
	Objects objectstore.Store
	// Holder names this client in pins. Default "metad-client".
	Holder string
	// SpreadCalls sends every call round robin over Addrs. By default
	// calls go to the leader once it is known (any member can serve them,
	// but a follower must consult the leader for writes and linearizable
	// reads), falling back to any member while it is not.
	SpreadCalls bool
	// TLS, if set, dials with TLS (security.go). Default: clear text.
	TLS *TLS
	// Token, if set, is sent as "authorization: Bearer <token>" on every
	// call.
	Token string
	// Metrics, if set, receives Read's counters
	// (metad_client_reads_unchecked_total, metad_client_reads_corrupt_total).
	// Default: not registered.
	Metrics prometheus.Registerer
}

// Client is a metad client for brokers and tools. It retries retryable
// failures within the caller's deadline, with a request id on every
// mutation so that retrying an indeterminate failure is safe.
type Client struct {
	cfg     Config
	metrics readMetrics
	conn    *grpc.ClientConn
	router  *leaderRouter // nil with SpreadCalls
	// bg tracks best-effort background calls (pin releases, failure
	// reports); Close waits for them.
	bg      sync.WaitGroup
	Metad   metadpb.MetadClient
	Cluster metadpb.ClusterClient
	// Health is the standard gRPC health service of the members dialled
	// (round robin, never routed to the leader): SERVING when a member is
	// ready to take traffic (README: Health, metrics, profiling).
	Health healthpb.HealthClient
	// stopWatch ends the TLS files' watcher.
	stopWatch func()
	// handshakes tells a TLS mismatch from an unreachable cluster.
	handshakes *handshakes
}

// New connects lazily to the cluster (no I/O until the first call).
func New(cfg Config) (*Client, error) {
	if len(cfg.Addrs) == 0 {
		return nil, errors.New("client: no addresses")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.MaxRetryDelay <= 0 {
		cfg.MaxRetryDelay = time.Second
	}
	if cfg.Holder == "" {
		cfg.Holder = "metad-client"
	}
	r := manual.NewBuilderWithScheme("metad")
	addrs := make([]resolver.Address, len(cfg.Addrs))
	for i, a := range cfg.Addrs {
		addrs[i] = resolver.Address{Addr: strings.TrimSpace(a)}
		if host, _, err := net.SplitHostPort(addrs[i].Addr); err == nil {
			// TLS verifies each member's certificate against its own
			// host, not the shared target "cluster".
			addrs[i].ServerName = host
		}
	}
	r.InitialState(resolver.State{Addresses: addrs})
	dialled := make([]string, len(addrs))
	for i, a := range addrs {
		dialled[i] = a.Addr
	}
	seen := newHandshakes(dialled)
	creds, watch, err := cfg.dialCredentials(seen)
	if err != nil {
		return nil, err
	}
	creds = append(creds, grpc.WithConnectParams(reconnect))
	conn, err := grpc.NewClient("metad:///cluster", append(creds,
		grpc.WithResolvers(r),
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig":[{"round_robin":{}}]}`),
	)...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	c := &Client{cfg: cfg, metrics: newReadMetrics(cfg.Metrics), conn: conn, handshakes: seen, stopWatch: func() {}}
	if watch != nil {
		// Follow certificate rotation for the client's life.
		ctx, cancel := context.WithCancel(context.Background())
		c.stopWatch = cancel
		c.bg.Add(1)
		go func() { defer c.bg.Done(); watch.Watch(ctx, wall) }()
	}
	var routed grpc.ClientConnInterface = conn
	if !cfg.SpreadCalls {
		c.router = &leaderRouter{any: conn, creds: creds}
		routed = c.router
	}
	c.Metad, c.Cluster = metadpb.NewMetadClient(routed), metadpb.NewClusterClient(routed)
	c.Health = healthpb.NewHealthClient(conn)
	return c, nil
}

// Close waits for background calls, then closes the connections.
func (c *Client) Close() error {
	c.stopWatch()
	c.bg.Wait()
	if c.router != nil {
		c.router.close()
	}
	return c.conn.Close()
}

// background runs fn with a short deadline, owned by the client.
func (c *Client) background(fn func(ctx context.Context)) {
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		fn(ctx)
	}()
}

// NewRequestID returns a random request id for idempotent retries.
func NewRequestID() string {
	var b [16]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Call runs one RPC with the client's retry policy: retryable failures
// (the server's RetryInfo, or a broken connection) are retried after the
// advised delay, with jittered backoff, until the deadline. When the
// deadline cuts a retry short, the error is the failure being retried (its
// reason and retry advice), which still matches context.DeadlineExceeded,
// never the bare deadline of the last attempt. A TLS mismatch with every
// member is a *HandshakeError (ErrTLSHandshake), definite and not retried
// (handshake.go). Mutations must
// carry a request id so that a retry after an indeterminate failure is
// applied at most once.
func Call[Req, Resp any](ctx context.Context, c *Client, rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req) (Resp, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	delay := 20 * time.Millisecond
	var last error // the retryable failure the call in flight retries
	for {
		resp, err := rpc(ctx, req)
		if err == nil {
			return resp, nil
		}
		err = c.handshakes.definite(fromStatus(err))
		if last != nil && ctx.Err() != nil {
			// The deadline ended a retry. The failure that made the call
			// retry is what the caller must see (its reason, its retry
			// advice); the deadline stays matchable beside it.
			return resp, fmt.Errorf("%w (the deadline ended its retry: %w)", last, err)
		}
		e, ok := AsError(err)
		if !ok || !e.Retryable() || ctx.Err() != nil {
			return resp, err
		}
		last = err
		delay = max(delay, e.RetryDelay)
		wait := delay/2 + rand.N(delay/2+1)
		select {
		case <-ctx.Done():
			return resp, err
		case <-clock.After(wall, wait):
		}
		delay = min(2*delay, c.cfg.MaxRetryDelay)
	}
}

// reconnect bounds how long a connection waits between attempts to reach a
// server that went away. gRPC's default backs off up to 120 s, so a member
// down for a few minutes would stay unused for up to two more after it came
// back; a broker's client should see it within a second or two.
var reconnect = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 2 * time.Second},
	MinConnectTimeout: 5 * time.Second,
}
