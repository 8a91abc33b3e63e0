package membership

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/internal/fakeclock"
	"github.com/metad/metad/internal/waitfor"
)

// This file is the in-process cluster the integration tests run: real
// memberlist on 127.0.0.1, real hashicorp/raft over InmemTransport with
// in-memory stores that survive a node's restart (each agent drives its
// raft through raftHandle, raftadapter_test.go), and FetchStats reading
// the other node's raft directly.

// logSink collects every node's log lines; a failing test prints them.
type logSink struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// count returns how many lines contain all of subs.
func (s *logSink) count(subs ...string) int {
	n := 0
	for _, line := range strings.Split(s.String(), "\n") {
		all := true
		for _, sub := range subs {
			all = all && strings.Contains(line, sub)
		}
		if all && line != "" {
			n++
		}
	}
	return n
}

func newLogSink(t *testing.T) (*logSink, *slog.Logger) {
	sink := &logSink{}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("MEMBERSHIP_TEST_LOGS") != "" {
			t.Logf("logs:\n%s", sink.String())
		}
	})
	return sink, slog.New(slog.NewTextHandler(sink, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// freeAddr returns 127.0.0.1:port with port free for both TCP and UDP at
// the time of the call (memberlist needs both on the same port).
func freeAddr(t *testing.T) string {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		u, err := net.ListenPacket("udp", addr)
		l.Close()
		if err != nil {
			continue
		}
		u.Close()
		return addr
	}
	t.Fatal("no free TCP+UDP port")
	return ""
}

// testConfig is a Config tuned for fast tests on loaded machines.
func testConfig(id, gossip string) Config {
	c := DefaultConfig()
	c.NodeID = id
	c.BindAddr = gossip
	c.RaftAddr = id + ".raft:7421"
	c.GRPCAddr = id + ".grpc:7420"
	c.JoinRetryMin = 50 * time.Millisecond
	c.JoinRetryMax = 500 * time.Millisecond
	c.ReconnectInterval = 500 * time.Millisecond
	c.ReconcileInterval = 100 * time.Millisecond
	c.DeadServerTimeout = 1500 * time.Millisecond
	c.LeftServerTimeout = 1500 * time.Millisecond
	c.LastContactThreshold = time.Second
	c.ServerStabilizationTime = 500 * time.Millisecond
	c.ProbeInterval = 300 * time.Millisecond
	c.ProbeTimeout = 150 * time.Millisecond
	c.SuspicionMult = 3
	return c
}

// cluster is a set of in-process metad nodes (agent + raft).
type cluster struct {
	t    *testing.T
	sink *logSink
	log  *slog.Logger

	mu     sync.Mutex
	addrs  map[string]string // id -> gossip address, fixed for the test
	nodes  map[string]*node  // running nodes
	stores map[string]*stores
	// bootstraps records every successful Bootstrap call's configuration.
	bootstraps []string
	// probeIDs is the cluster id each node reports to FetchStats.
	probeIDs map[string]string
}

type stores struct {
	logs, stable *raft.InmemStore
	snaps        *raft.InmemSnapshotStore
}

type node struct {
	id    string
	r     *raft.Raft
	trans *raft.InmemTransport
	agent *Agent
}

func newCluster(t *testing.T) *cluster {
	sink, log := newLogSink(t)
	c := &cluster{t: t, sink: sink, log: log, addrs: map[string]string{},
		nodes: map[string]*node{}, stores: map[string]*stores{}}
	t.Cleanup(c.stopAll)
	return c
}

// addr returns id's gossip address, picking one on first use, so that
// nodes can be told to join nodes that have not started yet.
func (c *cluster) addr(id string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a, ok := c.addrs[id]; ok {
		return a
	}
	a := freeAddr(c.t)
	c.addrs[id] = a
	return a
}

func (c *cluster) joinAddrs(ids ...string) []string {
	var out []string
	for _, id := range ids {
		out = append(out, c.addr(id))
	}
	return out
}

// start starts node id (fresh, or restarted on its previous stores).
func (c *cluster) start(id string, expect int, join []string, tweak func(*Config)) *node {
	c.t.Helper()
	cfg := testConfig(id, c.addr(id))
	cfg.BootstrapExpect = expect
	cfg.Join = join
	if tweak != nil {
		tweak(&cfg)
	}
	c.mu.Lock()
	st := c.stores[id]
	if st == nil {
		st = &stores{logs: raft.NewInmemStore(), stable: raft.NewInmemStore(), snaps: raft.NewInmemSnapshotStore()}
		c.stores[id] = st
	}
	c.mu.Unlock()
	_, trans := raft.NewInmemTransport(raft.ServerAddress(cfg.RaftAddr))
	r, err := raft.NewRaft(testRaftConfig(id), nopFSM{}, st.logs, st.stable, st.snaps, unpipelined{trans})
	if err != nil {
		c.t.Fatalf("raft %s: %v", id, err)
	}
	n := &node{id: id, r: r, trans: trans}
	c.connect(n)
	hooks := Hooks{
		HasState: func() bool {
			ok, err := raft.HasExistingState(st.logs, st.stable, st.snaps)
			return err == nil && ok
		},
		Bootstrap: func(servers []Server) error {
			err := raftHandle{r}.bootstrap(servers)
			if err == nil {
				c.mu.Lock()
				c.bootstraps = append(c.bootstraps, id+":"+fmt.Sprint(servers))
				c.mu.Unlock()
			}
			return err
		},
		FetchStats: c.fetchStats,
	}
	n.agent, err = New(cfg, raftHandle{r}, hooks, c.log)
	if err != nil {
		c.t.Fatalf("agent %s: %v", id, err)
	}
	return n
}

func testRaftConfig(id string) *raft.Config {
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(id)
	rc.HeartbeatTimeout = 300 * time.Millisecond
	rc.ElectionTimeout = 300 * time.Millisecond
	rc.LeaderLeaseTimeout = 150 * time.Millisecond
	rc.CommitTimeout = 10 * time.Millisecond
	rc.Logger = hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Error})
	return rc
}

// connect wires n's raft transport to every running node, both ways.
func (c *cluster) connect(n *node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.nodes {
		o.trans.Connect(n.trans.LocalAddr(), n.trans)
		n.trans.Connect(o.trans.LocalAddr(), o.trans)
	}
	c.nodes[n.id] = n
}

// kill stops node id without a gossip leave: memberlist shut down, raft
// shut down, raft transport cut from everyone.
func (c *cluster) kill(id string) {
	c.t.Helper()
	c.mu.Lock()
	n := c.nodes[id]
	delete(c.nodes, id)
	for _, o := range c.nodes {
		o.trans.Disconnect(n.trans.LocalAddr())
	}
	c.mu.Unlock()
	if err := n.agent.table.checkInvariants(); err != nil {
		c.t.Errorf("%s: %v", id, err)
	}
	if err := n.agent.Close(); err != nil {
		c.t.Errorf("close %s: %v", id, err)
	}
	if err := n.r.Shutdown().Error(); err != nil {
		c.t.Errorf("raft shutdown %s: %v", id, err)
	}
}

func (c *cluster) stopAll() {
	c.mu.Lock()
	var ids []string
	for id := range c.nodes {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		c.kill(id)
	}
}

func (c *cluster) node(id string) *node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id]
}

func (c *cluster) fetchStats(ctx context.Context, m Member) (*ServerStats, error) {
	n := c.node(m.ID)
	if n == nil {
		return nil, errors.New("node not running")
	}
	st, err := raftHandle{n.r}.Stats()
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	st.ClusterID = c.probeIDs[m.ID]
	c.mu.Unlock()
	return &st, nil
}

func (c *cluster) bootstrapCalls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.bootstraps...)
}

// describeConfig renders a configuration as "a=V@addr b=N@addr", sorted.
func describeConfig(conf raft.Configuration) string {
	var parts []string
	for _, s := range conf.Servers {
		suf := "V"
		if s.Suffrage != raft.Voter {
			suf = "N"
		}
		parts = append(parts, fmt.Sprintf("%s=%s@%s", s.ID, suf, s.Address))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// clusterView checks that every running node agrees on one leader and one
// configuration and returns them.
func (c *cluster) clusterView() (leader string, conf string, err error) {
	c.mu.Lock()
	nodes := make([]*node, 0, len(c.nodes))
	for _, n := range c.nodes {
		nodes = append(nodes, n)
	}
	c.mu.Unlock()
	leaders := 0
	for _, n := range nodes {
		f := n.r.GetConfiguration()
		if err := f.Error(); err != nil {
			return "", "", err
		}
		got := describeConfig(f.Configuration())
		_, lid := n.r.LeaderWithID()
		if n.r.State() == raft.Leader {
			leaders++
		}
		switch {
		case conf == "" && leader == "":
			conf, leader = got, string(lid)
		case got != conf:
			return "", "", fmt.Errorf("%s has configuration %q, another %q", n.id, got, conf)
		case string(lid) != leader:
			return "", "", fmt.Errorf("%s follows %q, another %q", n.id, lid, leader)
		}
	}
	if leaders != 1 || leader == "" {
		return "", "", fmt.Errorf("%d nodes in leader state, leader id %q", leaders, leader)
	}
	return leader, conf, nil
}

// waitFor polls cond until it returns nil or timeout passes. The timeouts
// are generous: they bound a hang, they do not measure speed.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	waitfor.Cond(t, timeout, what, cond)
}

// roundsTimeout bounds a wait for loop steps: a hang, not a speed.
const roundsTimeout = 20 * time.Second

// waitRounds waits until a's loop has finished n more steps on its own
// clock: whatever the loop would do, it has then had n chances to do, so
// a test can assert that it did not ("sleep, then assert nothing
// happened" passes before the loop has run).
func waitRounds(t *testing.T, a *Agent, n int) {
	t.Helper()
	start, _ := a.rounds.count()
	bound := clock.After(clock.Real, roundsTimeout)
	for {
		got, next := a.rounds.count()
		if got >= start+uint64(n) {
			return
		}
		select {
		case <-next:
		case <-bound:
			t.Fatalf("%s: %d of %d loop steps in %v", a.cfg.NodeID, got-start, n, roundsTimeout)
		}
	}
}

// driveRound moves clk, a's clock, one ReconcileInterval on and waits
// until a's loop has finished a step since.
func driveRound(t *testing.T, clk *fakeclock.Clock, a *Agent) {
	t.Helper()
	start, _ := a.rounds.count()
	clk.Advance(a.cfg.ReconcileInterval)
	bound := clock.After(clock.Real, roundsTimeout)
	for {
		got, next := a.rounds.count()
		if got > start {
			return
		}
		select {
		case <-next:
		case <-bound:
			t.Fatalf("%s: no loop step in %v after the clock moved", a.cfg.NodeID, roundsTimeout)
		}
	}
}

// driveUntil drives a's loop round by round until cond holds.
func driveUntil(t *testing.T, clk *fakeclock.Clock, a *Agent, what string, cond func() error) {
	t.Helper()
	err := waitfor.Until(roundsTimeout, func() error {
		err := cond()
		if err != nil {
			driveRound(t, clk, a)
		}
		return err
	})
	if err != nil {
		t.Fatalf("%s: still not true after %v: %v", what, roundsTimeout, err)
	}
}

// wantConfig waits until all running nodes agree on a leader and exactly
// the configuration want.
func (c *cluster) wantConfig(want string) string {
	c.t.Helper()
	var leader string
	waitFor(c.t, 20*time.Second, "configuration "+want, func() error {
		l, got, err := c.clusterView()
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("configuration %q", got)
		}
		leader = l
		return nil
	})
	return leader
}

// voters renders the expected configuration of voters ids at their
// default test raft addresses.
func voters(ids ...string) string {
	var parts []string
	for _, id := range ids {
		parts = append(parts, id+"=V@"+id+".raft:7421")
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

type nopFSM struct{}

func (nopFSM) Apply(*raft.Log) any                 { return nil }
func (nopFSM) Snapshot() (raft.FSMSnapshot, error) { return nopSnapshot{}, nil }
func (nopFSM) Restore(rc io.ReadCloser) error      { return rc.Close() }

type nopSnapshot struct{}

func (nopSnapshot) Persist(sink raft.SnapshotSink) error { return sink.Close() }
func (nopSnapshot) Release()                             {}

// unpipelined is the in-memory transport without AppendEntries pipelining.
// hashicorp/raft v1.7.3 reads a follower's address without its lock when a
// pipelined append fails (replication.go:521, an error log) while the
// leader updates that address (raft.go:624): the race detector reports it
// when a test moves a server to a new raft address (TestGrowShrinkRestart,
// about one run in twenty). Without pipelining raft replicates one request
// at a time and reads the address under the lock.
type unpipelined struct{ *raft.InmemTransport }

func (unpipelined) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}
