package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/metad/metad/cmd/internal/cliflags"
	"github.com/metad/metad/node"
)

// serverFlags binds every server setting to a flag (and so to its
// environment variable and config-file key).
type serverFlags struct {
	cfg        node.Config
	configFile string
	logFormat  string
	logLevel   string
	dialMap    []string
	validate   bool
}

func newServerCmd() *cobra.Command {
	f := &serverFlags{cfg: node.DefaultConfig()}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run a metad server",
		Long: `Run a metad server. With no flags it is a single-node cluster on localhost:
gRPC 127.0.0.1:7420, raft 127.0.0.1:7421, gossip 127.0.0.1:7422, HTTP admin
127.0.0.1:7423, data in ./metad-data.

For a cluster, start N servers with --bootstrap-expect N and --join pointing at
any other member's gossip address; they form one cluster in any start order.

Every flag can also be set as an environment variable (METAD_ and the flag name
in upper case, '-' as '_': METAD_DATA_DIR) or as a key of the YAML file given by
--config (data-dir: ...). Precedence: flag > environment > file > default.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyLayers(cmd.Flags(), configFileFrom(cmd.Flags())); err != nil {
				// A setting that does not parse, an unknown key, or a config
				// file that cannot be read is bad usage (exit 2), as a bad flag.
				return usageError{err}
			}
			if f.validate {
				return nameFlags(cmd.Flags(), validateServer(f, cmd.Flags(), cmd.OutOrStdout(), cmd.ErrOrStderr()))
			}
			return nameFlags(cmd.Flags(), runServer(cmd.Context(), f, cmd.Flags(), cmd.ErrOrStderr()))
		},
	}
	f.register(cmd.Flags())
	return cmd
}

func (f *serverFlags) register(fs *pflag.FlagSet) {
	c := &f.cfg
	fs.StringVar(&f.configFile, "config", "", "YAML file of settings (keys are flag names)")
	fs.BoolVar(&f.validate, "validate", false, "check every setting, file, certificate, the object store and the ports, then exit (0: it would start; 2: it would not), writing nothing")
	fs.StringVar(&c.NodeID, "node-id", "", "stable node id (default: stored in the data dir, or generated)")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "directory for raft state, the node id and objects")
	fs.StringVar(&c.GRPCAddr, "grpc-addr", c.GRPCAddr, "gRPC listen address (clients and peers)")
	fs.StringVar(&c.GRPCAdvertise, "grpc-advertise", "", "gRPC address told to peers (default --grpc-addr)")
	fs.StringVar(&c.Raft.BindAddr, "raft-addr", c.Raft.BindAddr, "raft transport listen address")
	fs.StringVar(&c.Raft.AdvertiseAddr, "raft-advertise", "", "raft address told to peers (default --raft-addr)")
	fs.StringVar(&c.Membership.BindAddr, "gossip-addr", c.Membership.BindAddr, "gossip (memberlist) listen address, UDP and TCP")
	fs.StringVar(&c.Membership.AdvertiseAddr, "gossip-advertise", "", "gossip address told to peers (default --gossip-addr)")
	fs.StringVar(&c.HTTPAddr, "http-addr", c.HTTPAddr, "HTTP admin address: /metrics, /healthz, /readyz (empty disables)")
	fs.IntVar(&c.Membership.BootstrapExpect, "bootstrap-expect", 0, "form a new cluster once this many servers are seen (0: single node if alone and no --join, else wait to be added)")
	fs.StringSliceVar(&c.Membership.Join, "join", nil, "gossip address of a member to join (repeatable)")
	fs.StringVar(&c.ObjectDir, "object-dir", "", "local object store directory, an alias of --object-store file://DIR (default <data-dir>/objects); share it between nodes and brokers on one machine")
	cliflags.RegisterObjectStore(fs, &c.Objects)
	fs.BoolVar(&c.EnablePprof, "pprof", false, "serve /debug/pprof on the HTTP admin address")
	fs.StringVar(&c.Tracing.Endpoint, "otlp-endpoint", "", "OpenTelemetry collector (OTLP/gRPC host:port) to send request traces to (empty: tracing off)")
	fs.BoolVar(&c.Tracing.Insecure, "otlp-insecure", false, "send traces to --otlp-endpoint without TLS (a collector on this host)")
	fs.Float64Var(&c.Tracing.SampleRatio, "trace-sample-ratio", c.Tracing.SampleRatio, "share of new requests traced, in [0, 1]; a request its caller traces is always traced")
	fs.BoolVar(&c.API.VerifyObjects, "verify-objects", false, "resolve checks each target's identity in the object store before returning it")
	fs.StringVar(&f.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&f.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	// Timings and bounds; defaults are the packages' documented defaults.
	fs.DurationVar(&c.Raft.HeartbeatTimeout, "raft-heartbeat-timeout", c.Raft.HeartbeatTimeout, "raft heartbeat timeout")
	fs.DurationVar(&c.Raft.ElectionTimeout, "raft-election-timeout", c.Raft.ElectionTimeout, "raft election timeout")
	fs.DurationVar(&c.Raft.LeaderLeaseTimeout, "raft-leader-lease-timeout", c.Raft.LeaderLeaseTimeout, "raft leader lease timeout")
	fs.StringVar((*string)(&c.Raft.LogStore), "raft-log-store", string(c.Raft.LogStore), "where the raft log lives: auto (what the data dir holds; wal for a new dir), bolt (raft.db) or wal (raft-wal segments); a data dir keeps the one it was created with")
	fs.Uint64Var(&c.Raft.SnapshotThreshold, "raft-snapshot-threshold", c.Raft.SnapshotThreshold, "log entries between raft snapshots")
	fs.DurationVar(&c.Raft.SnapshotInterval, "raft-snapshot-interval", c.Raft.SnapshotInterval, "how often raft checks --raft-snapshot-threshold (plus a random extra of up to one interval)")
	fs.Int64Var(&c.Raft.StateCacheBytes, "state-cache", c.Raft.StateCacheBytes, "bytes of the state store's block cache: with its memtables (64 MiB), what bounds the memory the state on disk uses, whatever its size")
	fs.Uint64Var(&c.Raft.TrailingLogs, "raft-trailing-logs", c.Raft.TrailingLogs, "log entries kept behind a snapshot, so a follower that far behind catches up from the log instead of a whole snapshot")
	fs.DurationVar(&c.Membership.DeadServerTimeout, "dead-server-timeout", c.Membership.DeadServerTimeout, "how long a server may be unreachable before the leader removes it (never below quorum or --bootstrap-expect)")
	fs.DurationVar(&c.Membership.LeftServerTimeout, "left-server-timeout", c.Membership.LeftServerTimeout, "how long a server that left gracefully may stay away before the leader removes it")
	fs.DurationVar(&c.API.Resolver.PinTTL, "pin-ttl", c.API.Resolver.PinTTL, "lease taken on each resolve target")
	fs.BoolVar(&c.API.SharePins, "share-pins", c.API.SharePins, "concurrent resolves of one object share one pin (one Raft write per object per pin-ttl)")
	fs.DurationVar(&c.API.DefaultTimeout, "default-timeout", c.API.DefaultTimeout, "deadline for calls that carry none")
	fs.DurationVar(&c.API.MaxTimeout, "max-timeout", c.API.MaxTimeout, "largest deadline a call may have")
	fs.IntVar(&c.API.MaxObjectStreams, "max-object-streams", c.API.MaxObjectStreams, "streams one stream-set object (CommitObject) may append to")
	fs.Uint64Var(&c.DiskReserve, "disk-reserve", c.DiskReserve, "free bytes on the data dir's filesystem below which writes that grow the state (appends, new streams, generations, objects) are refused with DISK_FULL, until space is freed; 0 turns the check off")
	fs.IntVar(&c.API.MaxCommandBytes, "max-command-bytes", c.API.MaxCommandBytes, "encoded bytes one stream-set object's command (CommitObject) may take in the raft log")
	fs.IntVar(&c.API.Watch.History, "watch-history", c.API.Watch.History, "recent events kept per stream for watchers that resume")
	fs.IntVar(&c.API.Watch.MaxWatchers, "watch-max-watchers", c.API.Watch.MaxWatchers, "watchers (Watch RPCs and DescribeStream long polls) a node serves at once")
	fs.IntVar(&c.API.Watch.Buffer, "watch-buffer", c.API.Watch.Buffer, "events queued per watcher before it is cut off as a slow consumer")
	fs.DurationVar(&c.API.Watch.StaleAfter, "watch-stale-after", c.API.Watch.StaleAfter, "a node without a leader this long ends its watches so that clients resume at another member")
	fs.DurationVar(&c.GC.Interval, "gc-interval", c.GC.Interval, "pause between garbage-collection passes")
	fs.DurationVar(&c.GC.MinIdle, "gc-min-idle", c.GC.MinIdle, "how long an object must be unreferenced before GC deletes it")
	fs.DurationVar(&c.Repair.ScanInterval, "repair-scan-interval", c.Repair.ScanInterval, "pause between periodic repair scans")
	fs.DurationVar(&c.Backup.Interval, "backup-interval", 0, "take a backup of the state this often, on the leader (0: off; at least 1s)")
	fs.StringVar(&c.Backup.To, "backup-to", "", "where backups go: file:///DIR, DIR or s3://BUCKET[/PREFIX] (reached with the --s3-* settings)")
	fs.IntVar(&c.Backup.Retain, "backup-retain", c.Backup.Retain, "how many of this cluster's newest backups to keep")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", c.ShutdownTimeout, "bound on a graceful shutdown")
	registerSecurityFlags(fs, &c.Security)
	fs.StringSliceVar(&f.dialMap, "dial-map", nil, "ADDR=VIA: dial VIA whenever a peer address ADDR is dialled (fault-injection proxies)")
	_ = fs.MarkHidden("dial-map")
}

// resolve turns the flags into a complete, validated node configuration.
// It writes nothing: a start refused here leaves the data dir untouched
// (node.Start stores the node id once everything is claimed). Every
// problem is reported at once, as bad usage.
func (f *serverFlags) resolve(fs *pflag.FlagSet) (node.Config, error) {
	c := f.cfg
	errs := f.checkFlags(fs)
	if len(f.dialMap) > 0 {
		c.DialMap = map[string]string{}
		for _, kv := range f.dialMap {
			from, to, ok := strings.Cut(kv, "=")
			if !ok {
				errs = append(errs, fmt.Errorf("dial-map %q: want ADDR=VIA", kv))
				continue
			}
			c.DialMap[from] = to
		}
	}
	// Alone, with no peers to wait for, a node forms its own cluster: that
	// is what `metad server` with no flags promises.
	if c.Membership.BootstrapExpect == 0 && len(c.Membership.Join) == 0 && !fs.Changed("bootstrap-expect") {
		c.Membership.BootstrapExpect = 1
	}
	// systemd's notify socket, for Type=notify units (examples/metad.service).
	c.NotifySocket = os.Getenv("NOTIFY_SOCKET")
	id, err := node.ChooseNodeID(c.DataDir, c.NodeID)
	if err != nil {
		errs = append(errs, err)
		// Validate the rest with a stand-in id, so the real error is not
		// followed by "NodeID: required" lines from every sub-config.
		id = "unknown"
	}
	c.NodeID = id
	c.Complete()
	errs = append(errs, validateNode(fs, c)...)
	if len(errs) > 0 {
		return c, usageError{errors.Join(errs...)}
	}
	return c, nil
}

// validateServer is `metad server --validate`: the checks of a start up to
// the point where it would write the data dir, and no further. Any
// problem is bad usage (exit 2): these settings do not make a server that
// starts, whatever part of them is at fault.
func validateServer(f *serverFlags, fs *pflag.FlagSet, stdout, stderr io.Writer) error {
	cfg, err := f.resolve(fs)
	if err != nil {
		return usageError{err}
	}
	if err := node.Validate(cfg, newLogger(stderr, f.logFormat, f.logLevel)); err != nil {
		return usageError{refusedStart(err)}
	}
	_, err = fmt.Fprintf(stdout, "the settings are valid: node %s, data dir %s, object store %s; nothing was written\n",
		cfg.NodeID, cfg.DataDir, cfg.Objects.URL)
	return err
}

func runServer(ctx context.Context, f *serverFlags, fs *pflag.FlagSet, stderr io.Writer) error {
	cfg, err := f.resolve(fs)
	if err != nil {
		// A configuration the server refuses is bad usage: exit 2.
		return usageError{err}
	}
	log := newLogger(stderr, f.logFormat, f.logLevel)
	if n := cfg.Membership.BootstrapExpect; n > 1 && n%2 == 0 {
		log.Warn(fmt.Sprintf("bootstrap-expect %d is even: %d voters tolerate as many failures as %d (quorum %d); prefer 3 or 5", n, n, n-1, n/2+1))
	}
	logEffective(log, fs, map[string]string{
		// Settings resolve derives rather than reads: log what is used.
		"node-id":          cfg.NodeID,
		"bootstrap-expect": strconv.Itoa(cfg.Membership.BootstrapExpect),
		"object-dir":       cfg.ObjectDir,
		"object-store":     cfg.Objects.URL,
	})
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	warnInsecure(log, cfg)
	hup := catchSIGHUP()
	n, err := node.Start(cfg, log, reg)
	if err != nil {
		return refusedStart(err)
	}
	reloadOnSIGHUP(ctx, hup, n)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var fatal error // a serving failure: the process exits non-zero
	select {
	case <-ctx.Done():
		log.Info("shutting down gracefully; a second signal stops at once", "reason", "signal")
	case fatal = <-n.Err():
		log.Error("shutting down", "reason", fatal)
	}
	// From here SIGINT and SIGTERM have their default effect again: an
	// operator who does not want to wait for the drain signals twice.
	stop()
	if err := n.Shutdown(); err != nil {
		log.Warn("shutdown", "err", err)
	}
	log.Info("stopped")
	return fatal
}

// logEffective logs every setting once at start: the flag's value, or the
// value derived from it where derived says so.
func logEffective(log *slog.Logger, fs *pflag.FlagSet, derived map[string]string) {
	var attrs []any
	fs.VisitAll(func(fl *pflag.Flag) {
		if v, ok := derived[fl.Name]; ok {
			attrs = append(attrs, fl.Name, v)
		} else if fl.Name != "dial-map" || fl.Changed {
			attrs = append(attrs, fl.Name, fl.Value.String())
		}
	})
	log.Info("effective configuration", attrs...)
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

func newLogger(w io.Writer, format, level string) *slog.Logger {
	l, _ := parseLevel(level)
	opts := &slog.HandlerOptions{Level: l}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
