package node

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"time"

	"github.com/metad/metad/api"
	"github.com/metad/metad/backup"
	"github.com/metad/metad/diskspace"
	"github.com/metad/metad/gc"
	"github.com/metad/metad/membership"
	"github.com/metad/metad/objectstore"
	"github.com/metad/metad/raftstore"
	"github.com/metad/metad/repair"
	"github.com/metad/metad/tracing"
)

// Default addresses: everything on localhost.
const (
	DefaultGRPCAddr   = "127.0.0.1:7420"
	DefaultRaftAddr   = "127.0.0.1:7421"
	DefaultGossipAddr = "127.0.0.1:7422"
	DefaultHTTPAddr   = "127.0.0.1:7423"
	DefaultDataDir    = "./metad-data"
)

// Config is one node's whole configuration. cmd/metad fills it from flags,
// environment and file; tests fill it directly. The sub-configs keep their
// own packages' documentation; Complete derives what they share.
type Config struct {
	// NodeID is the stable server id. Default: the id stored in the data
	// dir, or a new random one stored there on first start.
	NodeID string
	// DataDir holds raft state (DataDir/raft), the node id, and by default
	// the object store. Default ./metad-data.
	DataDir string
	// GRPCAddr is where clients and peers call; GRPCAdvertise is what peers
	// are told (default GRPCAddr).
	GRPCAddr, GRPCAdvertise string
	// HTTPAddr serves /metrics, /healthz, /readyz (and pprof if enabled).
	// Empty disables it.
	HTTPAddr string
	// EnablePprof exposes /debug/pprof on HTTPAddr. Default false.
	EnablePprof bool
	// ObjectDir is the directory of a file:// object store: an alias of
	// Objects.URL = file://ObjectDir, kept for --object-dir. Set one or
	// the other. Default DataDir/objects when Objects.URL is empty.
	ObjectDir string
	// Objects is the object store (package objectstore): file://DIR or
	// s3://BUCKET[/PREFIX]. Open checks an s3:// bucket at start.
	Objects objectstore.Config
	// ShutdownTimeout bounds a graceful shutdown. Default 10s; range [0, 5m].
	ShutdownTimeout time.Duration
	// NotifySocket is systemd's notify socket ($NOTIFY_SOCKET, read by
	// cmd/metad): READY=1 is sent there once the node serves, STOPPING=1
	// when it shuts down. Empty (the default) sends nothing.
	NotifySocket string
	// DialMap maps addresses (raft, gRPC, gossip) to the addresses actually
	// dialled. Empty in production; the Jepsen harness routes each link
	// through a proxy with it.
	DialMap map[string]string
	// Security is TLS, tokens and the insecure-mode peer secret
	// (security.go).
	Security Security
	// Tracing is OpenTelemetry request tracing, off by default
	// (--otlp-endpoint).
	Tracing tracing.Config
	// TraceExporter, for tests, receives every span instead of an OTLP
	// collector (package tracing). Nil in production.
	TraceExporter tracing.Exporter

	Raft       raftstore.Config
	Membership membership.Config
	API        api.Config
	Repair     repair.Config
	GC         gc.Config
	// Backup is the leader's backup schedule (package backup); off by
	// default. Its S3 settings are the object store's (Complete).
	Backup backup.Config
	// DiskReserve: below this many free bytes on the data dir's
	// filesystem, the node refuses writes that grow the state (package
	// diskspace). 0 turns the guard off. Default diskspace.DefaultReserve.
	DiskReserve uint64
}

// DefaultConfig returns a single-node configuration on localhost.
func DefaultConfig() Config {
	c := Config{
		DataDir: DefaultDataDir, GRPCAddr: DefaultGRPCAddr, HTTPAddr: DefaultHTTPAddr,
		ShutdownTimeout: 10 * time.Second,
		Raft:            raftstore.DefaultConfig(), Membership: membership.DefaultConfig(),
		API: api.DefaultConfig(), Repair: repair.DefaultConfig(), GC: gc.DefaultConfig(),
		Tracing:     tracing.DefaultConfig(),
		Backup:      backup.Config{Retain: backup.DefaultRetain},
		DiskReserve: diskspace.DefaultReserve,
	}
	c.Raft.BindAddr = DefaultRaftAddr
	c.Membership.BindAddr = DefaultGossipAddr
	return c
}

// Complete fills what the sub-configs share from the node's own fields.
// Call it after setting NodeID (see LoadNodeID) and before Validate.
func (c *Config) Complete() {
	if c.GRPCAdvertise == "" {
		c.GRPCAdvertise = c.GRPCAddr
	}
	if c.Objects.URL == "" {
		if c.ObjectDir == "" {
			c.ObjectDir = filepath.Join(c.DataDir, "objects")
		}
		c.Objects.URL = objectstore.FileURL(c.ObjectDir)
	}
	c.Backup.S3 = c.Objects.S3
	c.Raft.NodeID = c.NodeID
	c.Raft.DataDir = RaftDir(c.DataDir)
	c.Membership.NodeID = c.NodeID
	c.Membership.RaftAddr = c.Raft.AdvertiseAddr
	if c.Membership.RaftAddr == "" {
		c.Membership.RaftAddr = c.Raft.BindAddr
	}
	c.Membership.GRPCAddr = c.GRPCAdvertise
	if len(c.DialMap) > 0 {
		dial := c.dial
		c.Raft.DialAddress, c.Membership.DialAddress = dial, dial
	}
}

// dial maps an address through DialMap.
func (c *Config) dial(addr string) string {
	if to, ok := c.DialMap[addr]; ok {
		return to
	}
	return addr
}

// Validate reports every problem at once, across all sub-configs.
func (c Config) Validate() error {
	var errs []error
	if c.DataDir == "" {
		errs = append(errs, errors.New("data-dir: required"))
	}
	if _, _, err := net.SplitHostPort(c.GRPCAddr); err != nil {
		errs = append(errs, fmt.Errorf("grpc-addr %q: %w", c.GRPCAddr, err))
	}
	if _, _, err := net.SplitHostPort(c.GRPCAdvertise); err != nil {
		errs = append(errs, fmt.Errorf("grpc-advertise %q: %w", c.GRPCAdvertise, err))
	}
	if c.HTTPAddr != "" {
		if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
			errs = append(errs, fmt.Errorf("http-addr %q: %w", c.HTTPAddr, err))
		}
	}
	if c.ShutdownTimeout < 0 || c.ShutdownTimeout > 5*time.Minute {
		errs = append(errs, fmt.Errorf("shutdown-timeout %s outside [0, 5m]", c.ShutdownTimeout))
	}
	if err := c.validateSecurity(); err != nil {
		errs = append(errs, err)
	}
	if c.ObjectDir != "" && c.Objects.URL != objectstore.FileURL(c.ObjectDir) {
		errs = append(errs, fmt.Errorf("object-dir %q and object-store %q: give one (object-dir is file://DIR)", c.ObjectDir, c.Objects.URL))
	}
	for _, sub := range []interface{ Validate() error }{c.Raft, c.Membership, c.API, c.Repair, c.GC, c.Objects, c.Tracing, c.Backup} {
		if err := sub.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
