package raftstore

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/internal/waitfor"
)

// The in-process cluster harness: real raft, real bolt files in
// t.TempDir(), raft's in-memory transport wrapped by faultTransport (cuts
// per directed link, held heartbeat responses), and a Peers implementation
// that calls the other Stores directly through the same fault switchboard.

var raftLog = flag.String("raftlog", "", "log raft and raftstore to the test log at this level (debug, info, warn)")

// waitLimit bounds every wait for the cluster to reach a state. It is a
// guard against hangs, not a speed assertion: healthy runs take a fraction.
const waitLimit = 20 * time.Second

// testConfig is a Config with short timings for in-process clusters.
func testConfig(id, dir string) Config {
	c := DefaultConfig()
	c.NodeID = id
	c.DataDir = dir
	c.BindAddr = "127.0.0.1:0"
	c.HeartbeatTimeout = 200 * time.Millisecond
	c.ElectionTimeout = 200 * time.Millisecond
	c.LeaderLeaseTimeout = 100 * time.Millisecond
	c.CommitTimeout = 5 * time.Millisecond
	c.ApplyTimeout = 2 * time.Second
	c.ReadRoundTimeout = 500 * time.Millisecond
	c.LeadershipPollInterval = 20 * time.Millisecond
	c.TransportTimeout = time.Second
	// Snapshots only when a test asks for one.
	c.SnapshotInterval = time.Hour
	c.SnapshotThreshold = 1 << 30
	return c
}

// slowConfig makes a node that, once leader, does not step down for lack
// of contact for 20 s: it stands for a leader paused (SIGSTOP) whose lease
// check has not run yet since it resumed. See makeStickyLeader.
func slowConfig(c Config) Config {
	c.HeartbeatTimeout = 20 * time.Second
	c.ElectionTimeout = 20 * time.Second
	c.LeaderLeaseTimeout = 20 * time.Second
	return c
}

func testLogger(t testing.TB) *slog.Logger {
	if *raftLog == "" {
		return slog.New(slog.DiscardHandler)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*raftLog)); err != nil {
		t.Fatalf("-raftlog: %v", err)
	}
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: level}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// testNet is the switchboard of faults shared by every node's transport and
// Peers.
type testNet struct {
	mu      sync.Mutex
	cut     map[[2]string]bool // raft RPCs from [0] to [1] fail
	peerCut map[[2]string]bool // Peers calls from [0] to [1] fail
	hold    *heldHeartbeat
	// confirmHook, if set, runs at the start of every ConfirmLeadership call.
	confirmHook func(ctx context.Context, from, to string) error
}

var errCut = errors.New("test network: link cut")

func (n *testNet) raftErr(from, to string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cut[[2]string{from, to}] {
		return fmt.Errorf("%w: %s -> %s", errCut, from, to)
	}
	return nil
}

// isolate cuts raft RPCs between a and each of others, both ways; peers
// also cuts Peers calls.
func (n *testNet) isolate(a string, others []string, peers bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, b := range others {
		n.cut[[2]string{a, b}], n.cut[[2]string{b, a}] = true, true
		if peers {
			n.peerCut[[2]string{a, b}], n.peerCut[[2]string{b, a}] = true, true
		}
	}
}

func (n *testNet) heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.cut = map[[2]string]bool{}
	n.peerCut = map[[2]string]bool{}
}

// heldHeartbeat holds back the response to one heartbeat from `from` to
// `to`: the request is delivered at once (so the response is generated
// then), the response is returned to the sender only when released.
type heldHeartbeat struct {
	from, to string
	taken    bool
	captured chan struct{} // closed when the response has been generated
	release  chan struct{}
	resp     raft.AppendEntriesResponse
}

func (n *testNet) holdNextHeartbeat(from, to string) *heldHeartbeat {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.hold = &heldHeartbeat{from: from, to: to, captured: make(chan struct{}), release: make(chan struct{})}
	return n.hold
}

func isHeartbeat(a *raft.AppendEntriesRequest) bool {
	return len(a.Entries) == 0 && a.PrevLogEntry == 0 && a.LeaderCommitIndex == 0
}

func (n *testNet) takeHold(from, to string, a *raft.AppendEntriesRequest) *heldHeartbeat {
	n.mu.Lock()
	defer n.mu.Unlock()
	h := n.hold
	if h == nil || h.taken || h.from != from || h.to != to || !isHeartbeat(a) {
		return nil
	}
	h.taken = true
	return h
}

// faultTransport is raft's in-memory transport with the faults of testNet.
// Pipelining is refused so that every AppendEntries is one synchronous call
// the switchboard can see.
type faultTransport struct {
	*raft.InmemTransport
	id  string
	net *testNet
}

func (t *faultTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

func (t *faultTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, a *raft.AppendEntriesRequest, r *raft.AppendEntriesResponse) error {
	if h := t.net.takeHold(t.id, string(target), a); h != nil {
		err := t.InmemTransport.AppendEntries(id, target, a, r)
		h.resp = *r
		close(h.captured)
		<-h.release
		return err
	}
	if err := t.net.raftErr(t.id, string(target)); err != nil {
		return err
	}
	return t.InmemTransport.AppendEntries(id, target, a, r)
}

func (t *faultTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, a *raft.RequestVoteRequest, r *raft.RequestVoteResponse) error {
	if err := t.net.raftErr(t.id, string(target)); err != nil {
		return err
	}
	return t.InmemTransport.RequestVote(id, target, a, r)
}

func (t *faultTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, a *raft.RequestPreVoteRequest, r *raft.RequestPreVoteResponse) error {
	if err := t.net.raftErr(t.id, string(target)); err != nil {
		return err
	}
	return t.InmemTransport.RequestPreVote(id, target, a, r)
}

func (t *faultTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, a *raft.InstallSnapshotRequest, r *raft.InstallSnapshotResponse, data io.Reader) error {
	if err := t.net.raftErr(t.id, string(target)); err != nil {
		return err
	}
	return t.InmemTransport.InstallSnapshot(id, target, a, r, data)
}

func (t *faultTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, a *raft.TimeoutNowRequest, r *raft.TimeoutNowResponse) error {
	if err := t.net.raftErr(t.id, string(target)); err != nil {
		return err
	}
	return t.InmemTransport.TimeoutNow(id, target, a, r)
}

type testNode struct {
	id    string
	cfg   Config
	store atomic.Pointer[Store] // nil while down
	inner *raft.InmemTransport  // of the current incarnation
	opts  openOptions
}

type testCluster struct {
	t      testing.TB
	net    *testNet
	logger *slog.Logger
	mu     sync.Mutex // guards transports' Connect/Disconnect across restarts
	nodes  []*testNode
}

// newCluster starts n nodes (ids n1..nN), bootstraps them as voters and
// waits for a ready leader. tweak, if not nil, adjusts each node's config
// and options before the first start.
func newCluster(t testing.TB, n int, tweak func(i int, c *Config, o *openOptions)) *testCluster {
	t.Helper()
	c := &testCluster{t: t, net: &testNet{cut: map[[2]string]bool{}, peerCut: map[[2]string]bool{}}, logger: testLogger(t)}
	dir := t.TempDir()
	for i := range n {
		id := fmt.Sprintf("n%d", i+1)
		node := &testNode{id: id, cfg: testConfig(id, filepath.Join(dir, id)),
			opts: openOptions{fsmOptions: []fsm.Option{fsm.WithInvariantChecks()}}}
		if tweak != nil {
			tweak(i, &node.cfg, &node.opts)
		}
		c.nodes = append(c.nodes, node)
	}
	t.Cleanup(c.closeAll)
	for i := range c.nodes {
		c.start(i)
	}
	var servers []Server
	for _, node := range c.nodes {
		servers = append(servers, Server{ID: node.id, Address: node.id, Suffrage: Voter})
	}
	// Every node is bootstrapped with the same configuration (allowed by
	// raft), so any of them can win the first election. Two bootstrapped
	// nodes may elect a leader whose entries reach a later node before its
	// own Bootstrap: that node then has state, which is as good.
	for i := range c.nodes {
		if err := c.store(i).Bootstrap(servers); err != nil && !(i > 0 && errors.Is(err, ErrAlreadyBootstrapped)) {
			t.Fatalf("bootstrap %s: %v", c.nodes[i].id, err)
		}
	}
	c.leader()
	return c
}

func (c *testCluster) start(i int) {
	c.t.Helper()
	node := c.nodes[i]
	_, inner := raft.NewInmemTransportWithTimeout(raft.ServerAddress(node.id), time.Second)
	c.mu.Lock()
	for _, other := range c.nodes {
		if other != node && other.store.Load() != nil {
			inner.Connect(raft.ServerAddress(other.id), other.inner)
			other.inner.Connect(raft.ServerAddress(node.id), inner)
		}
	}
	node.inner = inner
	c.mu.Unlock()
	o := node.opts
	o.transport = &faultTransport{InmemTransport: inner, id: node.id, net: c.net}
	s, err := open(node.cfg, &testPeers{c: c, self: node.id}, c.logger, o)
	if err != nil {
		c.t.Fatalf("open %s: %v", node.id, err)
	}
	node.store.Store(s)
}

func (c *testCluster) stop(i int) {
	c.t.Helper()
	node := c.nodes[i]
	s := node.store.Swap(nil)
	if s == nil {
		return
	}
	c.mu.Lock()
	for _, other := range c.nodes {
		if other != node && other.inner != nil {
			other.inner.Disconnect(raft.ServerAddress(node.id))
		}
	}
	c.mu.Unlock()
	if err := s.Close(); err != nil {
		c.t.Errorf("close %s: %v", node.id, err)
	}
}

func (c *testCluster) restart(i int) {
	c.stop(i)
	c.start(i)
}

func (c *testCluster) closeAll() {
	for i := range c.nodes {
		c.stop(i)
	}
}

func (c *testCluster) store(i int) *Store { return c.nodes[i].store.Load() }

func (c *testCluster) byID(id string) *Store {
	for _, n := range c.nodes {
		if n.id == id {
			return n.store.Load()
		}
	}
	return nil
}

func (c *testCluster) index(s *Store) int {
	for i, n := range c.nodes {
		if n.store.Load() == s {
			return i
		}
	}
	c.t.Fatalf("store %s not in cluster", s.ID())
	return -1
}

// others returns the ids of every node but i.
func (c *testCluster) others(i int) []string {
	var out []string
	for j, n := range c.nodes {
		if j != i {
			out = append(out, n.id)
		}
	}
	return out
}

// leader waits for a ready leader (barrier applied) and returns it; if two
// nodes think they lead, the one with the higher term.
func (c *testCluster) leader() *Store {
	c.t.Helper()
	var found *Store
	waitFor(c.t, "a ready leader", func() bool {
		found = nil
		for _, n := range c.nodes {
			s := n.store.Load()
			if s != nil && s.Status().ReadReady && (found == nil || s.Term() > found.Term()) {
				found = s
			}
		}
		return found != nil
	})
	return found
}

// leaderAmong waits for a ready leader among the given nodes.
func (c *testCluster) leaderAmong(ids ...string) *Store {
	c.t.Helper()
	var found *Store
	waitFor(c.t, fmt.Sprintf("a ready leader among %v", ids), func() bool {
		for _, id := range ids {
			if s := c.byID(id); s != nil && s.Status().ReadReady {
				found = s
				return true
			}
		}
		return false
	})
	return found
}

// propose proposes cmd at the current leader, retrying retryable failures
// (cmd carries a request id, so a retry after an indeterminate failure is
// deduplicated), and returns the result and the leader that committed it.
func (c *testCluster) propose(cmd *fsmpb.Command) (*fsmpb.Result, *Store) {
	c.t.Helper()
	if cmd.RequestId == "" {
		c.t.Fatal("propose: command needs a request id to be retried safely")
	}
	var res *fsmpb.Result
	var s *Store
	waitfor.Cond(c.t, waitLimit, "a committed proposal", func() error {
		s = c.leader()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var err error
		res, err = s.Propose(ctx, cmd)
		cancel()
		if err != nil && !Retryable(err) {
			c.t.Fatalf("propose on %s: %v", s.ID(), err)
		}
		return err
	})
	return res, s
}

// read runs a linearizable Read on store s, retrying retryable failures.
func (c *testCluster) read(s *Store, fn func(*fsm.Machine) error) {
	c.t.Helper()
	waitfor.Cond(c.t, waitLimit, "a read on "+s.ID(), func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := s.Read(ctx, fn)
		cancel()
		if err != nil && !Retryable(err) {
			c.t.Fatalf("read on %s: %v", s.ID(), err)
		}
		return err
	})
}

// makeStickyLeader makes node i (configured with slowConfig) the leader.
// Its followers are first given timeouts long enough to sit through its
// slow heartbeats (every 2–4 s), then leadership is transferred to it;
// speedUpFollowers undoes the first step.
func (c *testCluster) makeStickyLeader(i int) *Store {
	c.t.Helper()
	for j := range c.nodes {
		if j != i {
			c.reloadTimeouts(j, 30*time.Second)
		}
	}
	target := c.nodes[i].id
	waitFor(c.t, "leadership transferred to "+target, func() bool {
		if s := c.store(i); s.Status().ReadReady {
			return true
		}
		l := c.leader()
		if l.ID() != target {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = l.TransferLeadership(ctx, target)
			cancel()
		}
		return c.store(i).Status().ReadReady
	})
	return c.store(i)
}

// speedUpFollowers gives every node but i the test timeouts again; they
// start an election at once if they have not heard from a leader lately.
func (c *testCluster) speedUpFollowers(i int) {
	for j := range c.nodes {
		if j != i {
			c.reloadTimeouts(j, testConfig("", "").HeartbeatTimeout)
		}
	}
}

func (c *testCluster) reloadTimeouts(j int, d time.Duration) {
	c.t.Helper()
	r := c.store(j).raft
	rc := r.ReloadableConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = d, d
	if err := r.ReloadConfig(rc); err != nil {
		c.t.Fatalf("reload config of %s: %v", c.nodes[j].id, err)
	}
}

// testPeers is Peers for one node: it calls the other nodes' Stores
// directly, subject to the switchboard's Peers cuts and hook.
type testPeers struct {
	c    *testCluster
	self string
}

func (p *testPeers) reach(ctx context.Context, to string) (*Store, error) {
	n := p.c.net
	n.mu.Lock()
	cut, hook := n.peerCut[[2]string{p.self, to}], n.confirmHook
	n.mu.Unlock()
	if cut {
		return nil, fmt.Errorf("%w: peers %s -> %s", errCut, p.self, to)
	}
	if hook != nil {
		if err := hook(ctx, p.self, to); err != nil {
			return nil, err
		}
	}
	s := p.c.byID(to)
	if s == nil {
		return nil, fmt.Errorf("test network: %s is down", to)
	}
	return s, nil
}

func (p *testPeers) ConfirmLeadership(ctx context.Context, serverID string, term uint64, leaderID string) (bool, error) {
	s, err := p.reach(ctx, serverID)
	if err != nil {
		return false, err
	}
	return s.ConfirmLeadership(term, leaderID), nil
}

func (p *testPeers) ReadIndex(ctx context.Context, leaderID string) (uint64, error) {
	n := p.c.net
	n.mu.Lock()
	cut := n.peerCut[[2]string{p.self, leaderID}]
	n.mu.Unlock()
	if cut {
		return 0, fmt.Errorf("%w: peers %s -> %s", errCut, p.self, leaderID)
	}
	s := p.c.byID(leaderID)
	if s == nil {
		return 0, fmt.Errorf("test network: %s is down", leaderID)
	}
	return s.ReadIndex(ctx)
}

// waitFor polls cond until it holds, failing the test after waitLimit.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	waitfor.Cond(t, waitLimit, what, func() error {
		if !cond() {
			return errors.New("not yet")
		}
		return nil
	})
}

// Commands and reads used by the tests.

func createStream(name string) *fsmpb.Command {
	return &fsmpb.Command{RequestId: "create-" + name,
		Op: &fsmpb.Command_CreateStream{CreateStream: &fsmpb.CreateStream{Name: name}}}
}

// hasStream reports whether s's local state has the stream, read
// linearizably through the harness.
func (c *testCluster) hasStream(s *Store, name string) bool {
	c.t.Helper()
	var ok bool
	c.read(s, func(m *fsm.Machine) error {
		_, ok = m.StreamByName(name)
		return nil
	})
	return ok
}
