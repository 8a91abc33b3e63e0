package membership

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/metad/metad/clock"
)

// ErrClosed is returned by Leave after Close.
var ErrClosed = errors.New("membership: agent closed")

// Hooks are the functions cmd/metad injects; all are required but those
// marked optional.
type Hooks struct {
	// HasState reports whether this node already has raft state on disk.
	// Such a node never bootstraps.
	HasState func() bool
	// Bootstrap bootstraps raft with the given configuration (all
	// voters). An error wrapping ErrAlreadyBootstrapped means state
	// appeared meanwhile: no retry.
	Bootstrap func(servers []Server) error
	// FetchStats fetches another server's raft stats (normally an RPC to
	// m.Meta.GRPCAddr answered with that server's own Raft.Stats). The leader calls it
	// for each alive non-voter every reconcile round, with a deadline.
	FetchStats func(ctx context.Context, m Member) (*ServerStats, error)
	// Tombstones, optional, lists the operator removals in the replicated
	// state (feature level 2); the loop never re-adds a tombstoned
	// incarnation. It reads local state and must be fast.
	Tombstones func() []Tombstone
	// ClusterID, optional, returns this node's cluster id as its raft
	// state knows it ("" if none yet); Config.ClusterID stands in until it
	// answers. It must be fast.
	ClusterID func() string
	// Clock, optional, is the agent's one time source: its loops' periods
	// and backoffs, member status times, removal windows. nil is
	// clock.Real; tests drive an internal/fakeclock.
	Clock clock.Clock
}

// Agent is one node's membership: its memberlist instance, its gossip view,
// and the loop that bootstraps raft and, while this node leads, reconciles
// the raft configuration with the gossip view.
type Agent struct {
	// Immutable after New.
	cfg   Config
	raft  Raft
	hooks Hooks
	clock clock.Clock // hooks.Clock, or clock.Real
	log   *slog.Logger
	ml    *memberlist.Memberlist
	table *table
	meta  *metaSource
	// joinAddrs is cfg.Join without this node's own address.
	joinAddrs []string
	// gossipAddr is the advertised address, read once: memberlist rewrites
	// its local node (UpdateNode) concurrently with readers of LocalNode.
	gossipAddr string

	// Lifecycle. nudgeCh (capacity 1) wakes the loop; cancel and wg stop
	// and join the two goroutines New starts; lifeMu orders Leave/Close.
	nudgeCh chan struct{}
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	lifeMu  sync.Mutex
	closed  bool
	left    atomic.Bool

	// removals: operator removals and seen incarnations (removal.go).
	removals *removals
	// decisions counts the reconcile loop's decisions (metrics.go).
	decisions *decisionMetrics
	// foreign logs and counts refused nodes of other clusters (identity.go).
	foreign *foreignLog
	// rounds counts the loop's finished steps (loop.go).
	rounds *rounds
	// keyring is memberlist's gossip keyring, nil without encryption.
	keyring *memberlist.Keyring

	// Owned by the loop goroutine (run); nothing else touches it.
	loop loopState
}

// loopState is the loop goroutine's private memory.
type loopState struct {
	// bootstrapDone: never consider bootstrapping again (no expect, state
	// found, bootstrapped, or a peer is already in a cluster).
	bootstrapDone bool
	// lastBootstrapReason de-duplicates bootstrap log lines.
	lastBootstrapReason string
	// bootstrapped is what this node's metadata currently advertises.
	bootstrapped bool
	// leading: reconcile state below belongs to the current leadership.
	leading     bool
	absentSince map[string]time.Time
	health      map[string]health
	// logged holds keys of hold decisions already logged and still in
	// force; failed maps planned actions to the last error logged for them.
	logged map[string]bool
	failed map[string]string
	// probes maps each member that answered FetchStats this round to the
	// cluster id it reported (identity.go).
	probes map[string]string
}

// New validates cfg, starts memberlist on cfg.BindAddr and starts the
// agent's goroutines: the joiner (Join with backoff, then periodic
// reconnects) and the loop (bootstrap, then reconcile while leading).
// r is this node's raft; logger receives the agent's and memberlist's logs
// (nil discards them). Close stops everything.
func New(cfg Config, r Raft, hooks Hooks, logger *slog.Logger) (*Agent, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if r == nil || hooks.HasState == nil || hooks.Bootstrap == nil || hooks.FetchStats == nil {
		return nil, fmt.Errorf("%w: raft handle and all hooks (HasState, Bootstrap, FetchStats) are required", ErrInvalidConfig)
	}
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	logger = logger.With("node", cfg.NodeID)
	if hooks.Clock == nil {
		hooks.Clock = clock.Real
	}
	a := &Agent{cfg: cfg, raft: r, hooks: hooks, clock: hooks.Clock, log: logger, nudgeCh: make(chan struct{}, 1),
		removals: newRemovals(), decisions: newDecisionMetrics(), foreign: newForeignLog(), rounds: newRounds()}
	a.table = newTable(logger, a.clock.Now, a.nudge)
	hasState := hooks.HasState()
	a.loop.bootstrapped = hasState
	a.loop.bootstrapDone = hasState || cfg.BootstrapExpect == 0
	meta, err := newMetaSource(Meta{RaftAddr: cfg.RaftAddr, GRPCAddr: cfg.GRPCAddr,
		Expect: cfg.BootstrapExpect, Bootstrapped: hasState, ClusterID: cfg.ClusterID})
	if err != nil {
		return nil, err
	}
	a.meta = meta
	meta.onMsg = a.table.noteMessage
	if a.ml, err = a.createMemberlist(); err != nil {
		return nil, err
	}
	a.gossipAddr = a.ml.LocalNode().Address()
	a.joinAddrs = withoutSelf(cfg.Join, a.GossipAddr(), cfg.BindAddr)
	logger.Info("membership started", "gossip", a.GossipAddr(), "raft", cfg.RaftAddr,
		"grpc", cfg.GRPCAddr, "expect", cfg.BootstrapExpect, "has_state", hasState, "join", a.joinAddrs)
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	a.wg.Add(2)
	go func() { defer a.wg.Done(); a.run(ctx) }()
	go func() { defer a.wg.Done(); a.runJoiner(ctx) }()
	return a, nil
}

func (a *Agent) createMemberlist() (*memberlist.Memberlist, error) {
	bindHost, bindPort, _ := net.SplitHostPort(a.cfg.BindAddr) // validated
	port, _ := strconv.Atoi(bindPort)
	stdLog := newStdLogger(a.log)
	nt, err := memberlist.NewNetTransport(&memberlist.NetTransportConfig{
		BindAddrs: []string{bindHost}, BindPort: port, Logger: stdLog})
	if err != nil {
		return nil, fmt.Errorf("membership: gossip listen on %s: %w", a.cfg.BindAddr, err)
	}
	var transport memberlist.NodeAwareTransport = nt
	if a.cfg.DialAddress != nil {
		transport = &dialTransport{inner: nt, dial: a.cfg.DialAddress}
	}
	advHost, advPort := bindHost, nt.GetAutoBindPort()
	if a.cfg.AdvertiseAddr != "" {
		h, p, _ := net.SplitHostPort(a.cfg.AdvertiseAddr) // validated
		advHost = h
		if n, _ := strconv.Atoi(p); n != 0 {
			advPort = n
		}
	}
	conf := memberlist.DefaultLocalConfig()
	conf.Name = a.cfg.NodeID
	conf.Transport = transport
	conf.AdvertiseAddr, conf.AdvertisePort = advHost, advPort
	conf.BindAddr, conf.BindPort = bindHost, nt.GetAutoBindPort()
	conf.ProbeInterval = a.cfg.ProbeInterval
	conf.ProbeTimeout = a.cfg.ProbeTimeout
	conf.SuspicionMult = a.cfg.SuspicionMult
	// A node restarted on a new gossip address may take its name back once
	// its old incarnation has been dead this long (0 would mean never,
	// until memberlist forgets the dead node).
	conf.DeadNodeReclaimTime = a.cfg.ProbeInterval
	conf.Delegate = a.meta
	conf.Events = a.table
	conf.Merge, conf.Alive = gossipGuard{a}, gossipGuard{a}
	if len(a.cfg.GossipKeys) > 0 {
		kr, err := memberlist.NewKeyring(nil, a.cfg.GossipKeys[0])
		if err == nil {
			err = setGossipKeys(kr, a.cfg.GossipKeys)
		}
		if err != nil {
			_ = nt.Shutdown()
			return nil, fmt.Errorf("membership: gossip keyring: %w", err)
		}
		a.keyring = kr
		conf.Keyring = kr
		conf.GossipVerifyIncoming, conf.GossipVerifyOutgoing = true, true
	}
	conf.Logger = stdLog
	ml, err := memberlist.Create(conf)
	if err != nil {
		_ = nt.Shutdown()
		return nil, fmt.Errorf("membership: start memberlist: %w", err)
	}
	return ml, nil
}

// withoutSelf drops this node's own addresses from a join list: joining
// oneself "succeeds" and would end the join retries before any peer
// answered.
func withoutSelf(join []string, self ...string) []string {
	var out []string
	for _, j := range join {
		mine := false
		for _, s := range self {
			mine = mine || j == s
		}
		if !mine {
			out = append(out, j)
		}
	}
	return out
}

// GossipAddr is the gossip address this node advertises (host:port).
func (a *Agent) GossipAddr() string { return a.gossipAddr }

// Members is this node's gossip view, sorted by id: every server with valid
// metadata, alive, dead or left (dead and left ones are forgotten after
// 72h). Nodes with invalid metadata are not listed.
func (a *Agent) Members() []Member { return a.table.snapshot() }

// Lookup returns the member with node id id, e.g. to turn the raft
// leader's id into its gRPC address (m.Meta.GRPCAddr).
func (a *Agent) Lookup(id string) (Member, bool) { return a.table.lookup(id) }

// Leave announces a graceful leave to the other nodes, waiting up to
// timeout (at least 1ms) for the broadcasts. It does not remove this node from raft (the
// leader does, after DeadServerTimeout, if it does not come back) and does
// not stop the agent: call Close afterwards.
func (a *Agent) Leave(timeout time.Duration) error {
	a.lifeMu.Lock()
	defer a.lifeMu.Unlock()
	if a.closed {
		return ErrClosed
	}
	a.left.Store(true) // stops reconnect attempts, which would undo the leave
	a.log.Info("leaving gossip")
	// Announce the leave in metadata first: peers learn "left" from it.
	if err := a.meta.update(func(m *Meta) { m.Leaving = true }); err != nil {
		return err
	}
	// memberlist reads a zero timeout as "wait forever".
	deadline := a.clock.Now().Add(max(timeout, time.Millisecond))
	if err := a.ml.UpdateNode(max(deadline.Sub(a.clock.Now()), time.Millisecond)); err != nil {
		a.log.Warn("leave announcement not confirmed; leaving anyway", "err", err)
	}
	a.tellPeersLeaving(deadline)
	if err := a.ml.Leave(max(deadline.Sub(a.clock.Now()), time.Millisecond)); err != nil {
		return fmt.Errorf("membership: leave: %w", err)
	}
	return nil
}

// tellPeersLeaving sends each alive peer a direct "leaving" message over
// TCP, so that it records this node as left whatever order gossip delivers
// the metadata update and the leave in (a peer that missed the former saw a
// failure, and a failure has a 72-times longer removal timeout).
func (a *Agent) tellPeersLeaving(deadline time.Time) {
	msg := []byte(leaveMsgPrefix + a.cfg.NodeID)
	for _, n := range a.ml.Members() {
		if n.Name == a.cfg.NodeID || a.clock.Now().After(deadline) {
			continue
		}
		if err := a.ml.SendReliable(n, msg); err != nil {
			a.log.Debug("leave message not delivered; the peer learns of the leave by gossip", "peer", n.Name, "err", err)
		}
	}
}

// Close stops the agent's goroutines, waits for them, and shuts memberlist
// down without a leave broadcast (peers will see this node dead). It is
// idempotent. It may wait for an in-flight raft configuration change;
// shutting raft down first ends that wait.
func (a *Agent) Close() error {
	a.lifeMu.Lock()
	defer a.lifeMu.Unlock()
	if a.closed {
		return nil
	}
	a.closed = true
	a.cancel()
	a.wg.Wait()
	if err := a.ml.Shutdown(); err != nil {
		return fmt.Errorf("membership: shutdown memberlist: %w", err)
	}
	a.log.Info("membership stopped")
	return nil
}

// nudge wakes the loop without blocking (memberlist callbacks call it).
func (a *Agent) nudge() {
	select {
	case a.nudgeCh <- struct{}{}:
	default:
	}
}

// metaSource is the memberlist.Delegate that serves this node's metadata.
// The loop and Leave update it; memberlist reads it from its goroutines.
type metaSource struct {
	encoded atomic.Pointer[[]byte] // read lock-free by NodeMeta

	mu   sync.Mutex // serialises updates
	meta Meta

	// onMsg receives peers' user messages (set before memberlist starts).
	onMsg func([]byte)
}

var _ memberlist.Delegate = (*metaSource)(nil)

func newMetaSource(m Meta) (*metaSource, error) {
	s := &metaSource{onMsg: func([]byte) {}}
	return s, s.update(func(cur *Meta) { *cur = m })
}

// update applies change to the metadata and re-encodes it; on an encoding
// error the metadata is left as it was.
func (s *metaSource) update(change func(*Meta)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := s.meta
	change(&next)
	b, err := EncodeMeta(next)
	if err != nil {
		return err
	}
	s.meta = next
	s.encoded.Store(&b)
	return nil
}

// current returns the metadata as last encoded.
func (s *metaSource) current() Meta {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.meta
}

func (s *metaSource) NodeMeta(limit int) []byte {
	b := *s.encoded.Load()
	if len(b) > limit {
		// Unreachable: EncodeMeta output is at most 405 bytes. Advertise
		// nothing rather than make memberlist panic.
		return nil
	}
	return b
}

func (s *metaSource) NotifyMsg(b []byte)                  { s.onMsg(append([]byte(nil), b...)) }
func (s *metaSource) GetBroadcasts(int, int) [][]byte     { return nil }
func (s *metaSource) LocalState(bool) []byte              { return nil }
func (s *metaSource) MergeRemoteState(buf []byte, _ bool) {}
