package main

import (
	"errors"
	"regexp"
	"strings"

	"github.com/spf13/pflag"
)

// The packages validate their Config and name its fields ("resolver:
// PinTTL -5s outside [1s, 10m0s]", "raftstore: Config.NodeID: ..."), as
// they should: they know nothing of flags. An operator set a flag, so the
// server command names the flag instead ("--pin-ttl -5s outside [1s,
// 10m0s]"). fieldFlags maps the prefix of each package's message about a
// field to the flag that sets the field; a message already about a flag
// ("log-level ...", "gossip-key-file: open ...") gets the flag's "--".
// TestEveryBadServerFlagIsNamed sets every server flag to a bad value and
// fails when a message does not name its flag, so a field added to a
// Validate without a row here is caught.
var fieldFlags = []struct {
	prefix, flag string
	// advertise, when set and given, is the flag the field took its value
	// from instead of flag (membership's RaftAddr is --raft-advertise, or
	// --raft-addr without it).
	advertise string
}{
	{"api: MaxTimeout ", "max-timeout", ""},
	{"api: DefaultTimeout ", "default-timeout", ""},
	{"api: MaxObjectStreams ", "max-object-streams", ""},
	{"api: MaxCommandBytes ", "max-command-bytes", ""},
	{"resolver: PinTTL ", "pin-ttl", ""},
	{"watch: History ", "watch-history", ""},
	{"watch: MaxWatchers ", "watch-max-watchers", ""},
	{"watch: Buffer ", "watch-buffer", ""},
	{"watch: StaleAfter ", "watch-stale-after", ""},
	{"gc: Interval ", "gc-interval", ""},
	{"gc: MinIdle ", "gc-min-idle", ""},
	{"repair: ScanInterval ", "repair-scan-interval", ""},
	{"membership: invalid config: DeadServerTimeout ", "dead-server-timeout", ""},
	{"membership: invalid config: LeftServerTimeout ", "left-server-timeout", ""},
	{"membership: invalid config: BootstrapExpect ", "bootstrap-expect", ""},
	{"membership: invalid config: NodeID: ", "node-id", ""},
	{"membership: invalid config: BindAddr ", "gossip-addr", ""},
	{"membership: invalid config: AdvertiseAddr: ", "gossip-advertise", ""},
	{"membership: invalid config: AdvertiseAddr ", "gossip-advertise", ""},
	{"membership: invalid config: RaftAddr ", "raft-addr", "raft-advertise"},
	{"membership: invalid config: GRPCAddr ", "grpc-addr", "grpc-advertise"},
	{"membership: invalid config: Join: ", "join", ""},
	{"membership: invalid config: Join ", "join", ""}, // "Join[0] ..." once joinIndex has dropped the index
	{"raftstore: Config.BindAddr: ", "raft-addr", ""},
	{"raftstore: Config.AdvertiseAddr: ", "raft-advertise", ""},
	{"raftstore: Config.NodeID: ", "node-id", ""},
	{"raftstore: Config.SnapshotInterval: ", "raft-snapshot-interval", ""},
	{"raftstore: Config.SnapshotThreshold: ", "raft-snapshot-threshold", ""},
	{"raftstore: Config.TrailingLogs: ", "raft-trailing-logs", ""},
	{"raftstore: Config.StateCacheBytes: ", "state-cache", ""},
	{"tlsconfig: invalid TLS material: ", "", ""}, // the rest names the flag
}

// fieldRefs are field names a range in a message refers to
// ("[100ms, MaxTimeout]").
var fieldRefs = strings.NewReplacer("MaxTimeout]", "--max-timeout]", "required when BindAddr ", "required when --gossip-addr ")

// joinIndex is the index membership gives each --join address ("Join[2]
// ..."); the flag is repeated, so the address itself says which one.
var joinIndex = regexp.MustCompile(`^membership: invalid config: Join\[[0-9]+\] `)

// namedFlagError is a setting's error reworded to name flags; it still
// matches what the original matched.
type namedFlagError struct {
	msg string
	err error
}

func (e namedFlagError) Error() string { return e.msg }
func (e namedFlagError) Unwrap() error { return e.err }

// nameFlags rewords err, line by line, to name the flags of fs in place
// of the fields they set. A usageError stays one.
func nameFlags(fs *pflag.FlagSet, err error) error {
	if err == nil {
		return nil
	}
	lines := strings.Split(err.Error(), "\n")
	for i, l := range lines {
		lines[i] = nameFlagsInLine(fs, l)
	}
	named := namedFlagError{msg: strings.Join(lines, "\n"), err: err}
	var ue usageError
	if errors.As(err, &ue) {
		return usageError{named}
	}
	return named
}

// nameFlagsInLine rewrites one message line.
func nameFlagsInLine(fs *pflag.FlagSet, l string) string {
	indent := l[:len(l)-len(strings.TrimLeft(l, " "))]
	l = strings.TrimPrefix(l, indent)
	for _, p := range []string{"metad: ", "invalid settings:", "invalid setting: ", "auth: bad tokens file: "} {
		if rest, ok := strings.CutPrefix(l, p); ok {
			return indent + p + nameFlagsInLine(fs, rest)
		}
	}
	l = joinIndex.ReplaceAllString(l, "membership: invalid config: Join ")
	for _, ff := range fieldFlags {
		if rest, ok := strings.CutPrefix(l, ff.prefix); ok {
			l = rest
			flag := ff.flag
			if ff.advertise != "" && fs.Changed(ff.advertise) {
				flag = ff.advertise
			}
			if flag != "" {
				sep := " "
				if strings.HasSuffix(ff.prefix, ": ") {
					sep = ": "
				}
				l = "--" + flag + sep + rest
			}
			break
		}
	}
	l = fieldRefs.Replace(l)
	// A message that begins with a flag's name (and so is about it) gets
	// the flag's "--". Only hyphenated names: "config" and "join" are
	// words as well.
	name, _, _ := strings.Cut(l, " ")
	name = strings.TrimSuffix(name, ":")
	if strings.Contains(name, "-") && !strings.HasPrefix(name, "-") && fs.Lookup(name) != nil {
		l = "--" + l
	}
	return indent + l
}
