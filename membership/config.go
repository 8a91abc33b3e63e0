package membership

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// Defaults of the discovery and reconcile loops. Each is documented on
// the Config field it fills.
const (
	DefaultGossipAddr = "127.0.0.1:7422"
	DefaultRaftAddr   = "127.0.0.1:7421"
	DefaultGRPCAddr   = "127.0.0.1:7420"

	// MaxBootstrapExpect bounds --bootstrap-expect. Raft clusters beyond 9
	// voters only slow commits down; a larger value is a typo.
	MaxBootstrapExpect = 9
	// MaxIDLen bounds a node id, so that metadata, logs and raft
	// configurations stay small.
	MaxIDLen = 64
	// MaxAddrLen bounds each address carried in node metadata, so that the
	// encoding always fits memberlist's 512-byte limit (see meta.go).
	MaxAddrLen = 200
	// MaxJoinAddrs bounds Config.Join.
	MaxJoinAddrs = 64
	// MaxClusterIDLen bounds a cluster id (fsm.MaxClusterIDLen, restated:
	// this package does not import fsm).
	MaxClusterIDLen = 64
	// MaxGossipKeys bounds Config.GossipKeys: a rotation needs two.
	MaxGossipKeys = 16

	// DefaultDeadServerTimeout is Consul's reap time for failed servers
	// (serf's reconnect_timeout): a weekend-long outage or partition is
	// ridden out without losing a voter. Only remove-peer removes sooner.
	DefaultDeadServerTimeout = 72 * time.Hour
	// DefaultLeftServerTimeout: a graceful leave is usually a restart or
	// an upgrade step (minutes, including the restore of a large state:
	// 4M records take ~3 minutes); a server that left and stayed away an
	// hour was taken out of service.
	DefaultLeftServerTimeout = time.Hour
	// maxRemovalTimeout bounds both removal timeouts (30 days).
	maxRemovalTimeout = 720 * time.Hour
)

// ErrInvalidConfig is wrapped by every error Config.Validate returns.
var ErrInvalidConfig = errors.New("membership: invalid config")

// Config is everything package membership needs. Only cmd/metad fills it
// (from flags, env or a file); tests fill it directly.
type Config struct {
	// NodeID is this node's stable identity: its memberlist node name and its
	// raft ServerID. It never changes across restarts or address changes.
	// No default (cmd/metad supplies one); 1..MaxIDLen bytes of
	// [A-Za-z0-9._-].
	NodeID string

	// BindAddr is the host:port memberlist listens on, UDP and TCP.
	// Default DefaultGossipAddr. Port 0 picks a free port (tests).
	BindAddr string
	// AdvertiseAddr is the host:port peers use to reach this node's gossip.
	// Default "" = BindAddr (which must then be a specific IP, not 0.0.0.0).
	// The host must be an IP literal: memberlist carries addresses as IPs.
	AdvertiseAddr string

	// RaftAddr is this node's advertised raft transport address, carried in
	// gossip metadata; the leader adds the node to raft at this address.
	// Default DefaultRaftAddr. At most MaxAddrLen bytes.
	RaftAddr string
	// GRPCAddr is this node's advertised gRPC address, carried in gossip
	// metadata so that others can turn a raft leader id into a client
	// address (Agent.Lookup). Default DefaultGRPCAddr. At most MaxAddrLen.
	GRPCAddr string

	// Join lists gossip addresses (host:port) of other nodes. Joining
	// retries in the background, with backoff from JoinRetryMin to
	// JoinRetryMax, until one of them answers, so nodes start in any order.
	// Default none; at most MaxJoinAddrs entries.
	Join []string
	// JoinRetryMin is the first delay between join attempts. Default 500ms;
	// range [10ms, 1m].
	JoinRetryMin time.Duration
	// JoinRetryMax caps the doubling join delay. Default 15s; range
	// [JoinRetryMin, 10m].
	JoinRetryMax time.Duration
	// ReconnectInterval is how often the node tries to rejoin members it
	// sees as dead (not left), and the Join addresses when it is alone, so
	// that a healed partition merges even after memberlist has stopped
	// gossiping to the dead. Default 15s; range [10ms, 1h].
	ReconnectInterval time.Duration

	// BootstrapExpect is the number of servers that form the cluster
	// together: the node bootstraps raft once it sees exactly that many live
	// servers all expecting the same number and none already in a cluster.
	// 0 (the default) never bootstraps: the node waits to be added by a
	// leader. Range [0, MaxBootstrapExpect].
	BootstrapExpect int

	// DeadServerTimeout is how long a server must have been dead (failed
	// probes, or absent) in this leader's gossip view before the leader
	// removes it from raft. Default DefaultDeadServerTimeout (72h);
	// range [10ms, 720h]. It must outlast any partition, restart or
	// restore an operator wants the cluster to ride out: a server removed
	// by mistake costs the cluster a voter until it is re-added.
	DeadServerTimeout time.Duration
	// LeftServerTimeout is how long a server that left gracefully (every
	// SIGTERM leaves gossip) may stay away before the leader removes it.
	// Default DefaultLeftServerTimeout (1h); range [10ms, 720h].
	LeftServerTimeout time.Duration
	// ReconcileInterval is the period of the bootstrap/reconcile loop; a
	// gossip change also runs it at once. Default 2s; range [10ms, 1m].
	ReconcileInterval time.Duration

	// LastContactThreshold: a non-voter whose last contact with the leader
	// is older is unhealthy. Default 200ms; range [1ms, 1h].
	LastContactThreshold time.Duration
	// MaxTrailingLogs: a non-voter more than this many entries behind the
	// leader's last index is unhealthy. Default 250; range [0, 1e9].
	MaxTrailingLogs uint64
	// ServerStabilizationTime is how long a non-voter must stay healthy
	// (as seen by the current leader) before it is promoted to voter.
	// Default 10s; range [0, 1h].
	ServerStabilizationTime time.Duration
	// MinQuorum: the leader never removes a voter when fewer than MinQuorum
	// voters would remain. 0 (default) = no floor beyond the quorum guard;
	// otherwise range [1, MaxBootstrapExpect]; 3 is the usual choice.
	MinQuorum int

	// ProbeInterval is memberlist's failure-probe period. Default 1s
	// (memberlist's local profile); range [10ms, 1m].
	ProbeInterval time.Duration
	// ProbeTimeout is how long a probe waits for an ack. Default 200ms;
	// range [1ms, ProbeInterval].
	ProbeTimeout time.Duration
	// SuspicionMult scales how long a node stays suspect before it is
	// declared dead (mult × log10(n) × ProbeInterval, at least mult ×
	// ProbeInterval). Default 3; range [1, 10].
	SuspicionMult int

	// DialAddress, if set, maps a peer's advertised gossip address to the
	// address actually dialled: every packet and stream memberlist sends
	// goes to DialAddress(addr) instead of addr. The Jepsen harness uses it
	// to route each directed link through its own proxy. It must be safe
	// for concurrent use and fast. Default nil (identity).
	DialAddress func(addr string) string

	// ClusterID is the cluster id this node's data dir recorded, "" if
	// none. The node advertises it in its gossip metadata (version 2) and
	// refuses to merge with nodes that advertise another (identity.go);
	// Hooks.ClusterID, when set, supersedes it once the state has one.
	ClusterID string
	// GossipKeys, if any, encrypt and authenticate gossip (memberlist's
	// keyring, AES-GCM): the first key is the one this node encrypts with,
	// all are tried on receipt, and messages that are not encrypted are
	// refused. Each key is 16, 24 or 32 bytes; at most MaxGossipKeys.
	// Agent.SetGossipKeys rotates them. Default none: clear-text gossip.
	GossipKeys [][]byte
}

// DefaultConfig returns a Config with every default filled in except
// NodeID, which has none.
func DefaultConfig() Config {
	return Config{
		BindAddr:                DefaultGossipAddr,
		RaftAddr:                DefaultRaftAddr,
		GRPCAddr:                DefaultGRPCAddr,
		JoinRetryMin:            500 * time.Millisecond,
		JoinRetryMax:            15 * time.Second,
		ReconnectInterval:       15 * time.Second,
		DeadServerTimeout:       DefaultDeadServerTimeout,
		LeftServerTimeout:       DefaultLeftServerTimeout,
		ReconcileInterval:       2 * time.Second,
		LastContactThreshold:    200 * time.Millisecond,
		MaxTrailingLogs:         250,
		ServerStabilizationTime: 10 * time.Second,
		ProbeInterval:           time.Second,
		ProbeTimeout:            200 * time.Millisecond,
		SuspicionMult:           3,
	}
}

// Validate reports every problem with c at once, each error wrapping
// ErrInvalidConfig.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
	}
	if err := validateID(c.NodeID); err != nil {
		bad("NodeID: %v", err)
	}
	c.validateAddrs(bad)
	if len(c.Join) > MaxJoinAddrs {
		bad("Join: %d addresses, at most %d", len(c.Join), MaxJoinAddrs)
	}
	for i, a := range c.Join {
		if err := validateHostPort(a, false); err != nil {
			bad("Join[%d] %q: %v", i, a, err)
		}
	}
	if c.BootstrapExpect < 0 || c.BootstrapExpect > MaxBootstrapExpect {
		bad("BootstrapExpect %d: want 0..%d", c.BootstrapExpect, MaxBootstrapExpect)
	}
	if c.MinQuorum < 0 || c.MinQuorum > MaxBootstrapExpect {
		bad("MinQuorum %d: want 0..%d", c.MinQuorum, MaxBootstrapExpect)
	}
	if c.MaxTrailingLogs > 1e9 {
		bad("MaxTrailingLogs %d: want 0..1e9", c.MaxTrailingLogs)
	}
	if c.SuspicionMult < 1 || c.SuspicionMult > 10 {
		bad("SuspicionMult %d: want 1..10", c.SuspicionMult)
	}
	c.validateDurations(bad)
	if c.ClusterID != "" {
		if err := validateClusterID(c.ClusterID); err != nil {
			bad("ClusterID %q: %v", c.ClusterID, err)
		}
	}
	if err := ValidateGossipKeys(c.GossipKeys); err != nil {
		bad("GossipKeys: %v", err)
	}
	return errors.Join(errs...)
}

func (c Config) validateAddrs(bad func(string, ...any)) {
	if err := validateHostPort(c.BindAddr, true); err != nil {
		bad("BindAddr %q: %v", c.BindAddr, err)
	}
	adv := c.AdvertiseAddr
	if adv == "" {
		adv = c.BindAddr
		if host, _, err := net.SplitHostPort(adv); err == nil {
			if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
				bad("AdvertiseAddr: required when BindAddr %q is unspecified", c.BindAddr)
			}
		}
	} else if err := validateHostPort(adv, true); err != nil {
		bad("AdvertiseAddr %q: %v", adv, err)
	}
	if host, _, err := net.SplitHostPort(adv); err == nil && net.ParseIP(host) == nil {
		bad("AdvertiseAddr %q: host must be an IP literal", adv)
	}
	if err := validateHostPort(c.RaftAddr, false); err != nil {
		bad("RaftAddr %q: %v", c.RaftAddr, err)
	}
	if err := validateHostPort(c.GRPCAddr, false); err != nil {
		bad("GRPCAddr %q: %v", c.GRPCAddr, err)
	}
}

func (c Config) validateDurations(bad func(string, ...any)) {
	checks := []struct {
		name     string
		v        time.Duration
		min, max time.Duration
	}{
		{"JoinRetryMin", c.JoinRetryMin, 10 * time.Millisecond, time.Minute},
		{"JoinRetryMax", c.JoinRetryMax, max(c.JoinRetryMin, 10*time.Millisecond), 10 * time.Minute},
		{"ReconnectInterval", c.ReconnectInterval, 10 * time.Millisecond, time.Hour},
		{"DeadServerTimeout", c.DeadServerTimeout, 10 * time.Millisecond, maxRemovalTimeout},
		{"LeftServerTimeout", c.LeftServerTimeout, 10 * time.Millisecond, maxRemovalTimeout},
		{"ReconcileInterval", c.ReconcileInterval, 10 * time.Millisecond, time.Minute},
		{"LastContactThreshold", c.LastContactThreshold, time.Millisecond, time.Hour},
		{"ServerStabilizationTime", c.ServerStabilizationTime, 0, time.Hour},
		{"ProbeInterval", c.ProbeInterval, 10 * time.Millisecond, time.Minute},
		{"ProbeTimeout", c.ProbeTimeout, time.Millisecond, max(c.ProbeInterval, time.Millisecond)},
	}
	for _, k := range checks {
		if k.v < k.min || k.v > k.max {
			bad("%s %v: want %v..%v", k.name, k.v, k.min, k.max)
		}
	}
}

// validateID checks a node id: it is a memberlist node name, a raft
// ServerID and a log attribute, so keep it short and plain.
func validateID(id string) error {
	if id == "" || len(id) > MaxIDLen {
		return fmt.Errorf("length %d, want 1..%d", len(id), MaxIDLen)
	}
	for _, r := range id {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			r == '.' || r == '_' || r == '-'
		if !ok {
			return fmt.Errorf("character %q not in [A-Za-z0-9._-]", r)
		}
	}
	return nil
}

// validateClusterID: 1..MaxClusterIDLen printable ASCII bytes, no space
// (as fsm.ValidClusterID).
func validateClusterID(id string) error {
	if id == "" || len(id) > MaxClusterIDLen {
		return fmt.Errorf("length %d, want 1..%d", len(id), MaxClusterIDLen)
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return fmt.Errorf("byte %d is %#x, want printable ASCII without spaces", i, id[i])
		}
	}
	return nil
}

// ValidateGossipKeys checks a keyring's keys: AES-128, -192 or -256 keys,
// at most MaxGossipKeys, no key twice.
func ValidateGossipKeys(keys [][]byte) error {
	if len(keys) > MaxGossipKeys {
		return fmt.Errorf("%d keys, at most %d", len(keys), MaxGossipKeys)
	}
	seen := make(map[string]bool, len(keys))
	for i, k := range keys {
		if n := len(k); n != 16 && n != 24 && n != 32 {
			return fmt.Errorf("key %d is %d bytes, want 16, 24 or 32", i+1, n)
		}
		if seen[string(k)] {
			return fmt.Errorf("key %d appears twice", i+1)
		}
		seen[string(k)] = true
	}
	return nil
}

// validateHostPort checks host:port. zeroPort allows port 0 (bind to any).
func validateHostPort(addr string, zeroPort bool) error {
	if len(addr) > MaxAddrLen {
		return fmt.Errorf("length %d, at most %d", len(addr), MaxAddrLen)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "" {
		return errors.New("empty host")
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 || (p == 0 && !zeroPort) {
		return fmt.Errorf("bad port %q", port)
	}
	return nil
}
