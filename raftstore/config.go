package raftstore

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
	"unicode"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/metad/metad/fsm"
)

// Config is raftstore's settings. Every raft setting that matters comes from
// here, mapped field by field in raftConfig; nothing relies on raft's own
// defaults. Only cmd/metad reads flags or files into a Config.
//
// The timing defaults aim at a new leader within about 2–3 s of the old one
// dying, on loopback or a LAN:
//   - a follower starts an election after HeartbeatTimeout plus a random
//     extra of up to one more HeartbeatTimeout without hearing from the
//     leader: 0.5–1 s;
//   - pre-vote and vote are one round trip each (well under 10 ms here), so
//     the usual election ends within ~1 s of the crash;
//   - a split vote costs one ElectionTimeout plus a random extra (1–2 s),
//     which is where the 2–3 s worst case comes from;
//   - LeaderLeaseTimeout 500 ms makes a leader cut off from a quorum step
//     down 0.5–1 s after its last contact, about when the others can first
//     elect a successor, so the window in which two nodes both think they
//     lead stays short. Reads never rely on that lease (see doc.go): the
//     window is short, not closed.
//
// Going lower trades spurious elections under GC pauses or CPU starvation
// for faster failover; 500 ms keeps ~10 heartbeats (HeartbeatTimeout/10
// each) inside one timeout.
type Config struct {
	// NodeID is this server's stable raft id. Servers are keyed by id, never
	// by address. Required; 1–128 bytes, no spaces or
	// control characters.
	NodeID string
	// DataDir holds this node's raft state (layout in doc.go). Required; it
	// is created if missing.
	DataDir string
	// LogStore is where the raft log lives: LogStoreBolt (raft.db, with the
	// stable store) or LogStoreWAL (raft-wal segments under wal/, the
	// stable store staying in raft.db). A data dir records the one it was
	// first opened with and refuses another (LogStoreMismatchError);
	// LogStoreAuto opens whichever the dir holds and starts a new dir on
	// wal. Default LogStoreAuto.
	LogStore LogStore
	// BindAddr is the host:port the raft TCP transport listens on. Port 0
	// picks a free port. Default "127.0.0.1:7421".
	BindAddr string
	// AdvertiseAddr is the host:port other servers dial to reach this one.
	// Empty means the address the listener actually bound, which must then
	// not be a wildcard (0.0.0.0, ::). Default "".
	AdvertiseAddr string

	// HeartbeatTimeout is how long a follower waits without hearing from a
	// leader before starting an election; the leader heartbeats every
	// HeartbeatTimeout/10. Default 500ms; range [10ms, 1m].
	HeartbeatTimeout time.Duration
	// ElectionTimeout is how long a candidate waits for votes before trying
	// again. Default 1s; range [HeartbeatTimeout, 1m].
	ElectionTimeout time.Duration
	// LeaderLeaseTimeout is how long a leader stays leader without contact
	// from a quorum. Default 500ms; range [5ms, HeartbeatTimeout].
	LeaderLeaseTimeout time.Duration
	// CommitTimeout is how long the leader waits without new entries before
	// sending followers its commit index anyway. A follower read right after
	// a write waits up to about twice this for the follower to learn the
	// commit. Default 10ms; range [1ms, HeartbeatTimeout].
	CommitTimeout time.Duration
	// MaxAppendEntries bounds the entries in one AppendEntries RPC and the
	// commands grouped into one log write. Default 256 (raft's 64 left
	// high-concurrency writes paying per-batch work four times as often);
	// range [1, 1024].
	MaxAppendEntries int

	// SnapshotInterval is how often raft checks whether to snapshot (with a
	// random extra of up to one interval). Default 2m; range [100ms, 24h].
	SnapshotInterval time.Duration
	// SnapshotThreshold is how many log entries since the last snapshot
	// trigger a new one. A snapshot writes the whole state, so it costs
	// O(state): at 8192, a large state spent ~45% of a node's CPU writing
	// snapshots under load (PERFORMANCE.md). Default 65536; range [1, 2^32].
	SnapshotThreshold uint64
	// TrailingLogs is how many entries are kept behind a snapshot, so a
	// follower that lags by fewer catches up from the log instead of a full
	// snapshot. Default 10240; range [1, 2^32].
	TrailingLogs uint64
	// SnapshotRetain is how many snapshots are kept on disk. Default 2;
	// range [1, 100].
	SnapshotRetain int
	// LogCacheSize is how many recent log entries are cached in memory in
	// front of the bolt log store. Default 512; range [1, 1<<20].
	LogCacheSize int
	// StateCacheBytes is the state store's block cache (statestore): with
	// the memtables, the bound on the memory the state on disk uses, so a
	// node's memory no longer grows with its index records. Default 64 MiB;
	// range [1 MiB, 1 TiB].
	StateCacheBytes int64

	// ApplyTimeout bounds how long Propose waits for raft to accept a
	// command into its queue (not how long it waits for the commit: that is
	// the caller's context). Default 1s; range [1ms, 1m].
	ApplyTimeout time.Duration
	// MaxPendingProposals bounds the proposals waiting for their commit on
	// this node; more are refused with ErrOverloaded. Default 4096; range
	// [1, 1<<20].
	MaxPendingProposals int

	// ReadRoundTimeout bounds one leadership-confirmation round of the
	// ReadIndex protocol. Default 1s; range [1ms, 1m].
	ReadRoundTimeout time.Duration
	// MaxReadsPerRound bounds the reads one confirmation round serves.
	// Default 1024; range [1, 1<<20].
	MaxReadsPerRound int
	// MaxWaitingReads bounds the reads queued for the next round; more are
	// refused with ErrOverloaded. Default 8192; range [1, 1<<20].
	MaxWaitingReads int

	// TransportMaxPool is how many idle TCP connections to each peer the
	// raft transport keeps. Default 3; range [1, 64].
	TransportMaxPool int
	// DialAddress, if set, maps a peer's raft address to the address
	// actually dialled (the Jepsen harness's per-link proxies). Default nil.
	DialAddress func(addr string) string
	// TLS, if set, runs the transport over mutual TLS (tls.go).
	TLS *TransportTLS
	// ClusterID is the cluster id this node's data dir recorded, "" if
	// none: the transport tells and checks it (identity.go) until the
	// applied state has its own. Default "".
	ClusterID string

	// TransportTimeout is the raft transport's I/O deadline (scaled up for
	// snapshot transfers). Default 10s; range [100ms, 5m].
	TransportTimeout time.Duration

	// LeadershipPollInterval is how often the leadership watcher re-reads
	// raft's state, in case an observation was dropped (observations are
	// never allowed to block raft). Default 250ms; range [1ms, 10s].
	LeadershipPollInterval time.Duration

	// Space, if set, is asked before a command that grows the state
	// (fsm.Grows) is proposed: while the data dir's disk is below its
	// reserve the command is refused (ErrDiskFull, definite, retryable).
	// Default nil: never refused.
	Space SpaceGuard
}

// SpaceGuard says whether the data dir's disk can take more state
// (diskspace.Guard is one): Refuse returns nil, or the error naming the
// full filesystem.
type SpaceGuard interface {
	Refuse() error
}

// DefaultConfig returns the defaults documented on each field. NodeID and
// DataDir are left empty: they have no sensible default.
func DefaultConfig() Config {
	return Config{
		LogStore:               LogStoreAuto,
		BindAddr:               "127.0.0.1:7421",
		HeartbeatTimeout:       500 * time.Millisecond,
		ElectionTimeout:        1 * time.Second,
		LeaderLeaseTimeout:     500 * time.Millisecond,
		CommitTimeout:          10 * time.Millisecond,
		MaxAppendEntries:       256,
		SnapshotInterval:       2 * time.Minute,
		SnapshotThreshold:      65536,
		TrailingLogs:           10240,
		SnapshotRetain:         2,
		LogCacheSize:           512,
		StateCacheBytes:        DefaultStateCacheBytes,
		ApplyTimeout:           1 * time.Second,
		MaxPendingProposals:    4096,
		ReadRoundTimeout:       1 * time.Second,
		MaxReadsPerRound:       1024,
		MaxWaitingReads:        8192,
		TransportMaxPool:       3,
		TransportTimeout:       10 * time.Second,
		LeadershipPollInterval: 250 * time.Millisecond,
	}
}

// DefaultStateCacheBytes is Config.StateCacheBytes's default.
const DefaultStateCacheBytes = 64 << 20

// Validate reports every problem with c at once, joined.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("raftstore: Config.%s: %s", field, fmt.Sprintf(format, args...)))
	}
	c.checkNode(bad)
	if err := checkHostPort(c.BindAddr); err != nil {
		bad("BindAddr", "%v", err)
	}
	if c.AdvertiseAddr != "" {
		if err := checkAdvertise(c.AdvertiseAddr); err != nil {
			bad("AdvertiseAddr", "%v", err)
		}
	}
	durations := []struct {
		name     string
		v        time.Duration
		min, max time.Duration
	}{
		{"HeartbeatTimeout", c.HeartbeatTimeout, 10 * time.Millisecond, time.Minute},
		{"ElectionTimeout", c.ElectionTimeout, max(c.HeartbeatTimeout, 10*time.Millisecond), time.Minute},
		{"LeaderLeaseTimeout", c.LeaderLeaseTimeout, 5 * time.Millisecond, c.HeartbeatTimeout},
		{"CommitTimeout", c.CommitTimeout, time.Millisecond, c.HeartbeatTimeout},
		{"SnapshotInterval", c.SnapshotInterval, 100 * time.Millisecond, 24 * time.Hour},
		{"ApplyTimeout", c.ApplyTimeout, time.Millisecond, time.Minute},
		{"ReadRoundTimeout", c.ReadRoundTimeout, time.Millisecond, time.Minute},
		{"TransportTimeout", c.TransportTimeout, 100 * time.Millisecond, 5 * time.Minute},
		{"LeadershipPollInterval", c.LeadershipPollInterval, time.Millisecond, 10 * time.Second},
	}
	for _, d := range durations {
		if d.v < d.min || d.v > d.max {
			bad(d.name, "%v is outside [%v, %v]", d.v, d.min, d.max)
		}
	}
	ints := []struct {
		name     string
		v        int
		min, max int
	}{
		{"MaxAppendEntries", c.MaxAppendEntries, 1, 1024},
		{"SnapshotRetain", c.SnapshotRetain, 1, 100},
		{"LogCacheSize", c.LogCacheSize, 1, 1 << 20},
		{"MaxPendingProposals", c.MaxPendingProposals, 1, 1 << 20},
		{"MaxReadsPerRound", c.MaxReadsPerRound, 1, 1 << 20},
		{"MaxWaitingReads", c.MaxWaitingReads, 1, 1 << 20},
		{"TransportMaxPool", c.TransportMaxPool, 1, 64},
	}
	for _, i := range ints {
		if i.v < i.min || i.v > i.max {
			bad(i.name, "%d is outside [%d, %d]", i.v, i.min, i.max)
		}
	}
	if c.StateCacheBytes < 1<<20 || c.StateCacheBytes > 1<<40 {
		bad("StateCacheBytes", "%d is outside [1 MiB, 1 TiB]", c.StateCacheBytes)
	}
	if c.SnapshotThreshold < 1 || c.SnapshotThreshold > 1<<32 {
		bad("SnapshotThreshold", "%d is outside [1, 2^32]", c.SnapshotThreshold)
	}
	if c.TrailingLogs < 1 || c.TrailingLogs > 1<<32 {
		bad("TrailingLogs", "%d is outside [1, 2^32]", c.TrailingLogs)
	}
	if len(errs) == 0 {
		// Our ranges are meant to imply raft's own rules; this catches a
		// raft upgrade that tightened them.
		if err := raft.ValidateConfig(c.raftConfig(hclog.NewNullLogger())); err != nil {
			errs = append(errs, fmt.Errorf("raftstore: Config rejected by raft: %w", err))
		}
	}
	return errors.Join(errs...)
}

// checkNode checks who the node is and where its state lives.
func (c Config) checkNode(bad func(field, format string, args ...any)) {
	if err := checkNodeID(c.NodeID); err != nil {
		bad("NodeID", "%v", err)
	}
	if c.DataDir == "" {
		bad("DataDir", "required")
	}
	if !c.LogStore.Valid() {
		bad("LogStore", "%q: want %s, %s or %s", c.LogStore, LogStoreAuto, LogStoreBolt, LogStoreWAL)
	}
	if c.ClusterID != "" {
		if err := fsm.ValidClusterID(c.ClusterID); err != nil {
			bad("ClusterID", "%v", err)
		}
	}
}

// raftConfig maps c onto raft's Config, every field explicitly.
func (c Config) raftConfig(logger hclog.Logger) *raft.Config {
	return &raft.Config{
		ProtocolVersion:    raft.ProtocolVersionMax,
		HeartbeatTimeout:   c.HeartbeatTimeout,
		ElectionTimeout:    c.ElectionTimeout,
		CommitTimeout:      c.CommitTimeout,
		MaxAppendEntries:   c.MaxAppendEntries,
		LeaderLeaseTimeout: c.LeaderLeaseTimeout,
		// Proposals arriving together share one log write and one
		// replication round.
		BatchApplyCh: true,
		// A removed server stays up as a follower outside the configuration:
		// it keeps answering status and can be added back, and Close stays
		// the one way this package's raft stops.
		ShutdownOnRemove:  false,
		TrailingLogs:      c.TrailingLogs,
		SnapshotInterval:  c.SnapshotInterval,
		SnapshotThreshold: c.SnapshotThreshold,
		LocalID:           raft.ServerID(c.NodeID),
		// Leadership is watched through an observer (leadership.go), not
		// NotifyCh, which would block raft if nobody drained it.
		NotifyCh:  nil,
		Logger:    logger,
		LogOutput: nil,
		LogLevel:  "",
		// Not at start: the state is on disk (state.go), and a restart
		// opens it and replays the log after the index it holds.
		NoSnapshotRestoreOnStart: true,
		// Pre-vote stops a node that was partitioned away from bumping the
		// term of a healthy cluster when it comes back.
		PreVoteDisabled:   false,
		NoLegacyTelemetry: true,
	}
}

func checkNodeID(id string) error {
	if id == "" {
		return errors.New("required")
	}
	if len(id) > 128 {
		return fmt.Errorf("%d bytes, at most 128", len(id))
	}
	for _, r := range id {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("%q contains a space or control character", id)
		}
	}
	return nil
}

func checkHostPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("port %q is not a number in [0, 65535]", port)
	}
	return nil
}

func checkAdvertise(addr string) error {
	if err := checkHostPort(addr); err != nil {
		return err
	}
	host, port, _ := net.SplitHostPort(addr)
	if port == "0" {
		return errors.New("port 0 cannot be advertised")
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return fmt.Errorf("host %q cannot be advertised (wildcard)", host)
	}
	return nil
}
