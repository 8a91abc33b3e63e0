package raftstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/metad/metad/fsm"
)

// Peers reaches the other servers of the cluster. Package api implements it
// over gRPC; tests implement it in memory. Implementations must honour ctx
// (return promptly once it ends), and should return this package's sentinel
// errors where they apply (api decodes its wire error table back into them)
// so callers can classify failures that happened at the other end.
type Peers interface {
	// ConfirmLeadership asks server serverID whether, right now, its
	// current term is term and it follows leaderID (Store.ConfirmLeadership
	// at the other end). An error counts as "no".
	ConfirmLeadership(ctx context.Context, serverID string, term uint64, leaderID string) (bool, error)
	// ReadIndex asks server leaderID for a linearizable read index
	// (Store.ReadIndex at the other end).
	ReadIndex(ctx context.Context, leaderID string) (uint64, error)
}

// Suffrage is a server's role in the raft configuration.
type Suffrage string

// The suffrages raft knows.
const (
	Voter    Suffrage = "voter"
	Nonvoter Suffrage = "nonvoter"
	Staging  Suffrage = "staging"
)

// Server is one member of the raft configuration.
type Server struct {
	ID       string   `json:"id"`
	Address  string   `json:"address"`
	Suffrage Suffrage `json:"suffrage"` // empty means Voter in Bootstrap
}

// Store is metad's raft node: hashicorp/raft over raft-boltdb and a file
// snapshot store, driving one fsm.Machine, with linearizable reads on every
// node (read.go), classified proposals (propose.go) and leadership events
// (leadership.go). All methods are safe for concurrent use.
type Store struct {
	// Set by open, never changed.
	cfg           Config
	logger        *slog.Logger
	peers         Peers
	raft          *raft.Raft
	fsm           *fsmAdapter
	guard         *voteGuard    // nil unless opened without raft state (amnesia.go)
	ident         *identity     // this node's cluster id, for the transport (identity.go)
	disk          *disk         // the stable store and the log store under logs
	logs          raft.LogStore // the log cache over disk.log
	snaps         raft.SnapshotStore
	addr          string
	beforeBarrier func(term uint64, closing <-chan struct{}) // test hook, nil in production
	metrics       *metrics

	// Lifecycle. lifeMu guards closed; goroutines are only started under
	// lifeMu.RLock with closed false, so none starts after Close began.
	lifeMu    sync.RWMutex
	closed    bool
	closing   chan struct{} // closed when Close begins
	raftDown  chan struct{} // closed when raft has shut down
	closeOnce sync.Once
	// raftStop guards raftStopped, the future of raft's one Shutdown.
	raftStop    sync.Once
	raftStopped raft.Future
	closeErr    error
	loops       sync.WaitGroup // leadershipLoop and readLoop
	futures     flight         // goroutines waiting on raft futures

	// proposals holds one token per proposal raft has not resolved yet,
	// released by the goroutine waiting on its future, so the goroutines
	// are bounded too. Its capacity is Config.MaxPendingProposals.
	proposals chan struct{}

	// Read path (read.go). reads is consumed by readLoop only; its capacity
	// is Config.MaxWaitingReads.
	reads       chan *readRequest
	readRounds  atomic.Uint64
	readsServed atomic.Uint64

	// Leadership (leadership.go). gateTerm is written by leadershipLoop only.
	gateTerm atomic.Uint64
	// seen is the leader this node last saw, owned by leadershipLoop.
	seen    seenLeader
	emitMu  sync.Mutex // serialises delivery of events to subscribers
	lmu     sync.Mutex // guards the fields below
	lead    *leaderTerm
	leadSig chan struct{} // closed and replaced when lead changes
	subs    map[uint64]func(LeadershipEvent)
	nextSub uint64
}

// openOptions are what tests may inject; Open uses the zero value.
type openOptions struct {
	transport     raft.Transport // nil: TCP transport from Config
	fsmOptions    []fsm.Option
	beforeBarrier func(term uint64, closing <-chan struct{})
	observer      ApplyObserver // nil: none (observer.go)
	// wrapLog, if set, wraps the log store under the failure latch.
	wrapLog func(raft.LogStore) raft.LogStore
}

// Open opens (creating if needed) the raft state in cfg.DataDir and starts
// the raft node. A new node has no configuration: call Bootstrap on exactly
// one server of a new cluster, or have the leader add this one. peers may be
// nil for a single-server cluster; logger nil discards logs.
func Open(cfg Config, peers Peers, logger *slog.Logger) (*Store, error) {
	return open(cfg, peers, logger, openOptions{})
}

func open(cfg Config, peers Peers, logger *slog.Logger, o openOptions) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if peers == nil {
		peers = noPeers{}
	}
	logger = logger.With("node", cfg.NodeID)
	hlog := newHCLogger(logger, "raft")
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("raftstore: data dir: %w", err)
	}
	d, err := openDisk(cfg.DataDir, diskOptions{want: cfg.LogStore, create: true, record: true, hlog: hlog})
	if err != nil {
		return nil, err
	}
	if err := d.checkNodeID(cfg.NodeID); err != nil {
		d.close()
		return nil, err
	}
	if o.wrapLog != nil {
		dl := d.log.(*durableLog)
		dl.LogStore = o.wrapLog(dl.LogStore)
	}
	plantedOpen(d.log, logger) // the fault seam (faults_off.go): nothing
	s, err := start(cfg, peers, logger, hlog, d, o)
	if err != nil {
		d.close()
		return nil, err
	}
	return s, nil
}

// start builds the rest on the open stores; on error the caller closes them.
func start(cfg Config, peers Peers, logger *slog.Logger, hlog hclog.Logger, d *disk, o openOptions) (*Store, error) {
	logs, err := raft.NewLogCache(cfg.LogCacheSize, d.log)
	if err != nil {
		return nil, fmt.Errorf("raftstore: log cache: %w", err)
	}
	removed, err := removeHalfWritten(filepath.Join(cfg.DataDir, "snapshots"))
	if err != nil {
		return nil, err
	}
	for _, tmp := range removed {
		logger.Warn("raftstore: removed a snapshot a crash left half-written", "path", tmp)
	}
	files, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, cfg.SnapshotRetain, hlog.Named("snapshot"))
	if err != nil {
		return nil, fmt.Errorf("raftstore: snapshot store: %w", err)
	}
	checked := &checkedSnapshots{SnapshotStore: files, dir: filepath.Join(cfg.DataDir, "snapshots"), f: d.failure}
	stateCfg := stateStoreConfig(cfg.StateCacheBytes, logger)
	st, err := openState(cfg.DataDir, stateCfg, checked, logger, o.fsmOptions)
	if err != nil {
		return nil, err
	}
	adapter, err := newDiskAdapter(logger, st, filepath.Join(cfg.DataDir, stateDirName), stateCfg, d.failure.corrupt, o.fsmOptions...)
	if err != nil {
		st.Close()
		return nil, err
	}
	logger.Info("raftstore: state opened", "dir", filepath.Join(cfg.DataDir, stateDirName),
		"applied_index", adapter.appliedIndex(), "disk_bytes", st.Stats().DiskBytes)
	snaps := &stateSnapshots{SnapshotStore: checked, stream: adapter.streamState}
	s, err := startRaft(cfg, peers, logger, hlog, d, o, logs, snaps, adapter)
	if err != nil {
		_ = adapter.close()
		return nil, err
	}
	return s, nil
}

// startRaft starts raft over the open stores and state; on error the
// caller closes them.
func startRaft(cfg Config, peers Peers, logger *slog.Logger, hlog hclog.Logger, d *disk, o openOptions,
	logs raft.LogStore, snaps raft.SnapshotStore, adapter *fsmAdapter) (*Store, error) {
	var err error
	ident := &identity{recorded: cfg.ClusterID}
	trans := o.transport
	if trans == nil {
		if trans, err = newTCPTransport(cfg, hlog.Named("transport"), ident, logger); err != nil {
			return nil, err
		}
	}
	trans, guard, err := guardIfAmnesiac(trans, logs, d.stable, snaps, logger)
	if err != nil {
		return nil, err
	}
	adapter.observer = o.observer
	if o.observer != nil && adapter.appliedIndex() > 0 {
		// raft does not restore the state at start (it is on disk): the
		// observer learns where the state begins as a restore would tell it.
		o.observer.Restored(adapter.appliedIndex())
	}
	ident.adapter.Store(adapter)
	adapter.diverge = plantedDivergence(cfg.NodeID, logger) // the fault seam (faults_off.go): none
	r, err := newRaft(cfg.raftConfig(hlog), adapter, logs, d.raftStable, snaps, trans)
	if err != nil {
		if latched := d.failure.err(); latched != nil {
			err = latched // raft's own text of it keeps no error chain
		}
		if c, ok := trans.(raft.WithClose); ok {
			c.Close()
		}
		return nil, fmt.Errorf("raftstore: start raft: %w", err)
	}
	if err := d.failure.err(); err != nil {
		// A snapshot or an entry read at start was corrupt (raft may have
		// gone on with an older snapshot): never serve from it.
		_ = r.Shutdown().Error()
		if c, ok := trans.(raft.WithClose); ok {
			c.Close()
		}
		return nil, fmt.Errorf("raftstore: start raft: %w", err)
	}
	if guard != nil {
		guard.raft.Store(r)
	}
	s := &Store{
		cfg: cfg, logger: logger, peers: peers, raft: r, fsm: adapter, guard: guard, ident: ident,
		disk: d, logs: logs, snaps: snaps, addr: string(trans.LocalAddr()),
		beforeBarrier: o.beforeBarrier,
		metrics:       newMetrics(),
		closing:       make(chan struct{}),
		raftDown:      make(chan struct{}),
		proposals:     make(chan struct{}, cfg.MaxPendingProposals),
		reads:         make(chan *readRequest, cfg.MaxWaitingReads),
		leadSig:       make(chan struct{}),
		subs:          make(map[uint64]func(LeadershipEvent)),
	}
	s.futures.init()
	d.failure.onFail(func() { s.stopRaft() })
	s.loops.Add(2)
	go s.leadershipLoop()
	go s.readLoop()
	logger.Info("raftstore: opened", "addr", s.addr, "data_dir", cfg.DataDir, "log_store", d.kind)
	return s, nil
}

func newTCPTransport(cfg Config, logger hclog.Logger, id *identity, slogger *slog.Logger) (raft.Transport, error) {
	var advertise net.Addr
	if cfg.AdvertiseAddr != "" {
		// Resolved only to check that it resolves: the configuration keeps
		// the name as given, as a stable DNS name (a Kubernetes pod's) is
		// what peers must dial after the address behind it changed.
		if _, err := net.ResolveTCPAddr("tcp", cfg.AdvertiseAddr); err != nil {
			return nil, fmt.Errorf("raftstore: advertise address: %w", err)
		}
		advertise = advertisedAddr(cfg.AdvertiseAddr)
	}
	ln, err := net.Listen("tcp", cfg.BindAddr)
	if err != nil {
		return nil, fmt.Errorf("raftstore: raft transport on %s: %w", cfg.BindAddr, err)
	}
	if advertise == nil {
		advertise = ln.Addr()
	}
	var stream raft.StreamLayer = &streamLayer{Listener: ln, advertise: advertise, dial: cfg.DialAddress}
	if cfg.TLS != nil {
		stream = newTLSStreamLayer(stream, *cfg.TLS)
	}
	// Outermost, so that with TLS the preamble travels inside it.
	stream = newIdentityStreamLayer(stream, id, slogger)
	trans := raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:  stream,
		Logger:  logger,
		MaxPool: cfg.TransportMaxPool,
		Timeout: cfg.TransportTimeout,
		// 1: no pipelining; each follower's AppendEntries waits for the
		// previous answer (raft still batches entries into each). v1.7.3's
		// pipeline can deadlock when a follower's connection fails mid-
		// flight (hashicorp/raft#612): the sender parks handing the decoder
		// one more request while the decoder parks handing back one nobody
		// reads, and the leader never replicates to that follower again
		// while its heartbeats keep it looking healthy. The disk-error
		// nemesis found it: a follower restarted after its failed write
		// held its log at the index it stopped at for the rest of the run.
		MaxRPCsInFlight: 1,
	})
	return plantedHeartbeats(trans, serialHeartbeats{trans}, slogger), nil // the fault seam (faults_off.go): serial
}

// streamLayer is raft's TCP stream layer with one addition: every dial goes
// to cfg.DialAddress(target) when set, so the Jepsen harness can route each
// directed link through its own proxy and cut it without root.
type streamLayer struct {
	net.Listener
	advertise net.Addr
	dial      func(string) string
}

func (s *streamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	target := string(address)
	if s.dial != nil {
		target = s.dial(target)
	}
	return net.DialTimeout("tcp", target, timeout)
}

func (s *streamLayer) Addr() net.Addr { return s.advertise }

// advertisedAddr is the advertise address as configured, host name and
// all (net.Addr of a TCP stream).
type advertisedAddr string

func (a advertisedAddr) Network() string { return "tcp" }
func (a advertisedAddr) String() string  { return string(a) }

// Close shuts raft down cleanly and closes the stores. New calls are refused
// from the moment it starts; proposals already in raft get up to
// ApplyTimeout to resolve first. Close is idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Store) close() error {
	s.lifeMu.Lock()
	s.closed = true
	close(s.closing)
	s.lifeMu.Unlock()
	// Let raft resolve what it accepted while it still can: a batch raft
	// handed to its FSM goroutine is dropped unanswered if shutdown wins the
	// race (hashicorp/raft v1.7.3 runFSM), leaving its futures pending forever.
	if !s.futures.wait(s.cfg.ApplyTimeout) {
		s.logger.Warn("raftstore: closing with raft operations still pending", "pending", s.futures.count())
	}
	errs := []error{s.stopRaft().Error()}
	close(s.raftDown)
	errs = append(errs, s.fsm.close())
	s.loops.Wait()
	if !s.futures.wait(s.cfg.ApplyTimeout) {
		s.logger.Error("raftstore: raft left operations unresolved at shutdown; their waiters are abandoned",
			"pending", s.futures.count())
	}
	errs = append(errs, s.disk.close())
	s.logger.Info("raftstore: closed")
	return errors.Join(errs...)
}

// stopRaft shuts raft down, once, without waiting for it: Close waits on
// the future. A latched disk failure calls it from raft's own goroutine.
func (s *Store) stopRaft() raft.Future {
	s.raftStop.Do(func() { s.raftStopped = s.raft.Shutdown() })
	return s.raftStopped
}

func (s *Store) isClosing() bool {
	select {
	case <-s.closing:
		return true
	default:
		return false
	}
}

// await waits for f to resolve, ctx to end, or stop to close, whichever
// comes first. done reports whether f resolved (then err is f's error). A
// goroutine calls f.Error() so that the caller can stop waiting; it is
// counted in s.futures, runs resolved (if not nil) once f has resolved, and
// then ends. If the store is closed nothing is started: resolved runs at
// once and await returns ErrClosed. Either way resolved runs exactly once.
func (s *Store) await(ctx context.Context, f raft.Future, stop <-chan struct{}, resolved func()) (done bool, err error) {
	ch := make(chan error, 1)
	started := s.spawnWaiter(func() {
		ch <- f.Error()
		if resolved != nil {
			resolved()
		}
	})
	if !started {
		if resolved != nil {
			resolved()
		}
		return false, ErrClosed
	}
	select {
	case err := <-ch:
		return true, err
	case <-ctx.Done():
		return false, ctx.Err()
	case <-stop:
		return false, ErrClosed
	}
}

func (s *Store) spawnWaiter(fn func()) bool {
	s.lifeMu.RLock()
	defer s.lifeMu.RUnlock()
	if s.closed {
		return false
	}
	s.futures.add()
	go func() {
		defer s.futures.done()
		fn()
	}()
	return true
}

// HasState reports whether this node has raft state (a term, log entries or
// a snapshot): a node with state must not be bootstrapped. An unreadable
// store counts as having state, so that nobody bootstraps over it.
func (s *Store) HasState() bool {
	has, err := raft.HasExistingState(s.logs, s.disk.stable, s.snaps)
	if err != nil {
		s.logger.Error("raftstore: reading raft state", "err", err)
		return true
	}
	return has
}

// Bootstrap writes the initial configuration of a new cluster. Call it on
// one server only. A node that already has state returns
// ErrAlreadyBootstrapped and changes nothing.
func (s *Store) Bootstrap(servers []Server) error {
	if s.HasState() {
		return ErrAlreadyBootstrapped
	}
	s.guard.disarm("bootstrapping a new cluster")
	var conf raft.Configuration
	for _, sv := range servers {
		suffrage, err := raftSuffrage(sv.Suffrage)
		if err != nil {
			return err
		}
		conf.Servers = append(conf.Servers, raft.Server{
			ID: raft.ServerID(sv.ID), Address: raft.ServerAddress(sv.Address), Suffrage: suffrage})
	}
	done, err := s.await(context.Background(), s.raft.BootstrapCluster(conf), s.closing, nil)
	switch {
	case !done || errors.Is(err, raft.ErrRaftShutdown):
		return ErrClosed
	case errors.Is(err, raft.ErrCantBootstrap):
		return ErrAlreadyBootstrapped
	case err != nil:
		return fmt.Errorf("raftstore: bootstrap: %w", err)
	}
	return nil
}

func raftSuffrage(s Suffrage) (raft.ServerSuffrage, error) {
	switch s {
	case Voter, "":
		return raft.Voter, nil
	case Nonvoter:
		return raft.Nonvoter, nil
	case Staging:
		return raft.Staging, nil
	}
	return 0, fmt.Errorf("raftstore: unknown suffrage %q", s)
}

func suffrageOf(s raft.ServerSuffrage) Suffrage {
	switch s {
	case raft.Nonvoter:
		return Nonvoter
	case raft.Staging:
		return Staging
	}
	return Voter
}

// ID is this node's raft server id.
func (s *Store) ID() string { return s.cfg.NodeID }

// Addr is the raft address other servers reach this node at.
func (s *Store) Addr() string { return s.addr }

// IsLeader reports whether raft currently considers this node the leader.
// A leader serves linearizable reads only once ready (LeadershipEvent).
func (s *Store) IsLeader() bool { return s.raft.State() == raft.Leader }

// Leader returns the id and address of the leader this node knows of, or
// empty strings.
func (s *Store) Leader() (id, addr string) {
	a, i := s.raft.LeaderWithID()
	return string(i), string(a)
}

// Term is this node's current raft term.
func (s *Store) Term() uint64 { return s.raft.CurrentTerm() }

// CommitIndex is the highest log index this node knows to be committed.
func (s *Store) CommitIndex() uint64 { return s.raft.CommitIndex() }

// AppliedIndex is the highest log index the local state machine reflects.
// Unlike raft's AppliedIndex it is advanced only after the entries have
// been applied, so state at this index is readable now.
func (s *Store) AppliedIndex() uint64 { return s.fsm.appliedIndex() }

// ClusterID is the id of the cluster this node belongs to: the applied
// state's (fsm.Machine.ClusterID), or until that has one the id
// Config.ClusterID recorded in the data dir; "" if neither.
func (s *Store) ClusterID() string {
	id, _ := s.ident.current()
	return id
}

// FeatureLevel is the cluster feature level of the applied state
// (fsm.Machine.Level), read without a lock.
func (s *Store) FeatureLevel() uint32 { return s.fsm.level.Load() }

// Halted delivers, once, the error of a committed entry this binary cannot
// apply (fsm.ErrUnsupported): the store has stopped applying, and the node
// must stop serving and exit with it, for an operator to upgrade.
func (s *Store) Halted() <-chan error { return s.fsm.halted }

// newRaft is raft.NewRaft, which panics when it cannot read a
// configuration entry back from the log; a corrupt entry (logcheck.go)
// becomes Open's error instead, naming it. Any other panic stays one.
func newRaft(conf *raft.Config, fsm raft.FSM, logs raft.LogStore, stable raft.StableStore, snaps raft.SnapshotStore, trans raft.Transport) (r *raft.Raft, err error) {
	defer func() {
		if p := recover(); p != nil {
			pe, ok := p.(error)
			if !ok || !errors.Is(pe, ErrCorruptLog) {
				panic(p)
			}
			r, err = nil, pe
		}
	}()
	return raft.NewRaft(conf, fsm, logs, stable, snaps, trans)
}

// DiskFailed delivers, once, the first failed write or fsync of the raft
// log or the stable store (a DiskWriteError naming the file). From then on
// the store writes nothing more; the node must stop and exit with it,
// never retry (durable.go says why).
func (s *Store) DiskFailed() <-chan error { return s.disk.failure.ch }

// WaitApplied blocks until AppliedIndex() >= index, ctx ends (ErrTimeout)
// or the store closes (ErrClosed).
func (s *Store) WaitApplied(ctx context.Context, index uint64) error {
	return s.fsm.waitApplied(ctx, index, s.closing)
}

// StateHash returns the hash of the local machine's state and the index of
// the last command it applied. Replicas at the same index have the same
// hash. It hashes a clone, so Apply is held up only for the clone.
func (s *Store) StateHash() ([32]byte, uint64, error) {
	c := s.fsm.clone()
	defer c.Release()
	sum, _, err := c.m.StateHash()
	return sum, c.m.AppliedIndex(), err
}

// Status is what `metad status` shows for one node.
type Status struct {
	NodeID       string
	Address      string
	State        string // Follower, Candidate, Leader or Shutdown, for people
	Leader       bool   // this node leads in Term (compare this, not State)
	Term         uint64
	LastLogIndex uint64
	CommitIndex  uint64
	AppliedIndex uint64    // the state machine's (see AppliedIndex)
	LastContact  time.Time // last contact from a leader; zero on the leader or if never
	Voter        bool      // a voter in the latest configuration
	LeaderID     string
	LeaderAddr   string
	ReadReady    bool     // a leader whose barrier of this term is applied
	LogStore     LogStore // where this node's raft log lives
	// Disk is why the data dir's disk refuses growth (Config.Space), ""
	// while it does not.
	Disk string
}

// Status returns this node's raft status.
func (s *Store) Status() Status {
	term, leader := s.leadership()
	id, addr := s.Leader()
	st := Status{
		NodeID: s.cfg.NodeID, Address: s.addr, State: s.raft.State().String(), Term: term,
		LastLogIndex: s.raft.LastIndex(), CommitIndex: s.raft.CommitIndex(), AppliedIndex: s.AppliedIndex(),
		LeaderID: id, LeaderAddr: addr, Leader: leader, ReadReady: leader && s.gateTerm.Load() == term,
		LogStore: s.disk.kind,
	}
	if !leader {
		st.LastContact = s.raft.LastContact()
	}
	if s.cfg.Space != nil {
		if err := s.cfg.Space.Refuse(); err != nil {
			st.Disk = err.Error()
		}
	}
	if servers, err := s.Configuration(); err == nil {
		for _, sv := range servers {
			st.Voter = st.Voter || (sv.ID == s.cfg.NodeID && sv.Suffrage == Voter)
		}
	}
	return st
}

// TransferLeadership asks the leader (this node) to hand leadership to
// server toID, or to the most up-to-date voter if toID is empty, and waits
// until raft reports the transfer done or failed, or ctx ends.
func (s *Store) TransferLeadership(ctx context.Context, toID string) error {
	if _, leader := s.leadership(); !leader {
		return s.notLeaderError()
	}
	if toID == s.cfg.NodeID {
		return fmt.Errorf("%w: %q is already the leader; name another voter, or none to let raft choose", ErrAlreadyLeader, toID)
	}
	var f raft.Future
	if toID == "" {
		f = s.raft.LeadershipTransfer()
	} else {
		addr, err := s.addressOf(toID)
		if err != nil {
			return err
		}
		f = s.raft.LeadershipTransferToServer(raft.ServerID(toID), raft.ServerAddress(addr))
	}
	done, err := s.await(ctx, f, s.closing, nil)
	switch {
	case !done && errors.Is(err, ErrClosed):
		return ErrClosed
	case !done:
		return fmt.Errorf("%w: leadership transfer: %w", ErrTimeout, err)
	case errors.Is(err, raft.ErrNotLeader):
		return s.notLeaderError()
	case err != nil:
		return fmt.Errorf("%w: to %q: %w", ErrTransferFailed, toID, err)
	}
	return nil
}

func (s *Store) addressOf(id string) (string, error) {
	servers, err := s.Configuration()
	if err != nil {
		return "", err
	}
	for _, sv := range servers {
		if sv.ID == id {
			return sv.Address, nil
		}
	}
	return "", fmt.Errorf("%w: %q", ErrUnknownServer, id)
}

// notLeaderError says who leads, as far as this node knows.
func (s *Store) notLeaderError() error {
	id, addr := s.Leader()
	if id == "" || id == s.cfg.NodeID {
		return fmt.Errorf("%w: this node (%s) is %v", ErrNoLeader, s.cfg.NodeID, s.raft.State())
	}
	return &NotLeaderError{LeaderID: id, LeaderAddr: addr}
}

// noPeers is the Peers of a store opened without one: every call fails,
// which a single-server cluster never needs.
type noPeers struct{}

func (noPeers) ConfirmLeadership(context.Context, string, uint64, string) (bool, error) {
	return false, fmt.Errorf("%w: no Peers configured", ErrNoLeader)
}

func (noPeers) ReadIndex(context.Context, string) (uint64, error) {
	return 0, fmt.Errorf("%w: no Peers configured", ErrNoLeader)
}

// flight counts goroutines waiting on raft futures and lets Close wait for
// them with a bound.
type flight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed while n == 0
}

func (f *flight) init() {
	f.idle = make(chan struct{})
	close(f.idle)
}

func (f *flight) add() {
	f.mu.Lock()
	if f.n == 0 {
		f.idle = make(chan struct{})
	}
	f.n++
	f.mu.Unlock()
}

func (f *flight) done() {
	f.mu.Lock()
	f.n--
	if f.n == 0 {
		close(f.idle)
	}
	f.mu.Unlock()
}

func (f *flight) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// wait reports whether the count reached zero within d.
func (f *flight) wait(d time.Duration) bool {
	f.mu.Lock()
	idle := f.idle
	f.mu.Unlock()
	t := wall.NewTimer(d)
	defer t.Stop()
	select {
	case <-idle:
		return true
	case <-t.C():
		return false
	}
}
