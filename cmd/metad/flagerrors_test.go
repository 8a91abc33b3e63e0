package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/metad/metad/internal/proc"
	"github.com/metad/metad/tlsconfig"
)

// badServerValues holds, for every server flag, a value the server refuses;
// after it, other flags the value is refused with; nil marks a flag no
// value of which is refused (the reason beside it). {ca}, {cert} and {key}
// are a valid CA, server certificate and key.
var badServerValues = map[string][]string{
	"config":                    nil, // read before the others; TestConfigFileErrors
	"validate":                  nil, // a bool: any parsed value is valid
	"pprof":                     nil,
	"otlp-insecure":             nil,
	"verify-objects":            nil,
	"share-pins":                nil,
	"s3-path-style":             nil,
	"insecure":                  nil,
	"dial-map":                  {"nonsense"},
	"node-id":                   {"bad id!"},
	"data-dir":                  nil, // any directory will be created
	"grpc-addr":                 {"nonsense"},
	"grpc-advertise":            {"nonsense"},
	"raft-addr":                 {"nonsense"},
	"raft-advertise":            {"nonsense"},
	"gossip-addr":               {"nonsense"},
	"gossip-advertise":          {"nonsense"},
	"http-addr":                 {"nonsense"},
	"bootstrap-expect":          {"-1"},
	"join":                      {"nonsense"},
	"object-dir":                nil, // created
	"object-store":              {"ftp://x"},
	"s3-endpoint":               nil, // used only with an s3:// --object-store, checked by reaching it
	"s3-region":                 nil, // any name
	"s3-ca-file":                nil, // as --s3-endpoint
	"otlp-endpoint":             nil, // the exporter dials it lazily, and reports
	"trace-sample-ratio":        {"2"},
	"log-format":                {"xml"},
	"log-level":                 {"loud"},
	"raft-heartbeat-timeout":    {"-5s"},
	"raft-election-timeout":     {"-5s"},
	"raft-leader-lease-timeout": {"-5s"},
	"raft-log-store":            {"tape"},
	"raft-snapshot-threshold":   {"0"},
	"raft-snapshot-interval":    {"-5s"},
	"raft-trailing-logs":        {"0"},
	"dead-server-timeout":       {"-5s"},
	"left-server-timeout":       {"-5s"},
	"pin-ttl":                   {"-5s"},
	"default-timeout":           {"-5s"},
	"max-timeout":               {"-5s"},
	"max-object-streams":        {"-1"},
	"max-command-bytes":         {"-1"},
	"disk-reserve":              {"-1"},
	"state-cache":               {"1000"},
	"watch-history":             {"-1"},
	"watch-max-watchers":        {"-1"},
	"watch-buffer":              {"-1"},
	"watch-stale-after":         {"-5s"},
	"gc-interval":               {"-5s"},
	"gc-min-idle":               {"-5s"},
	"repair-scan-interval":      {"-5s"},
	"backup-interval":           {"-5s"},
	"backup-to":                 {"ftp://x"},
	"backup-retain":             {"-1", "--backup-interval", "1h", "--backup-to", "/nonexistent/backups"},
	"shutdown-timeout":          {"-5s"},
	"tls-cert-file":             {"/nonexistent/tls-cert-file.pem", "--tls-key-file", "{key}", "--tls-ca-file", "{ca}"},
	"tls-key-file":              {"/nonexistent/tls-key-file.pem", "--tls-cert-file", "{cert}", "--tls-ca-file", "{ca}"},
	"tls-ca-file":               {"/nonexistent/tls-ca-file.pem", "--tls-cert-file", "{cert}", "--tls-key-file", "{key}"},
	"auth-tokens-file":          {"/nonexistent/tokens.yaml"},
	"peer-secret-file":          {"/nonexistent/secret"},
	"gossip-key-file":           {"/nonexistent/gossip.key"},
	"tls-reload-interval":       {"-5s"},
}

// TestEveryBadServerFlagIsNamed: every server flag given a value the
// server refuses is refused with exit 2 by a message that names the flag
// (--pin-ttl -5s ...), not a package's field (resolver: PinTTL).
func TestEveryBadServerFlagIsNamed(t *testing.T) {
	var names []string
	newServerCmd().Flags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	sort.Strings(names)
	pki := writePKI(t)
	for _, name := range names {
		vals, ok := badServerValues[name]
		if !ok {
			t.Errorf("--%s has no entry in badServerValues", name)
			continue
		}
		if vals == nil {
			continue
		}
		bad := vals[0]
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			args := validateArgs(t, filepath.Join(dir, "data"), "--"+name+"="+bad)
			for _, v := range vals[1:] {
				args = append(args, pki.Replace(v))
			}
			msg, err := executeCLI(args)
			if code := exitCode(err); code != exitUsage {
				t.Errorf("--%s=%s: exit %d, want %d: %s", name, bad, code, exitUsage, msg)
			}
			if !strings.Contains(msg, "--"+name) {
				t.Errorf("--%s=%s: the message does not name --%s:\n%s", name, bad, name, msg)
			}
			if field := internalField.FindString(msg); field != "" {
				t.Errorf("--%s=%s: the message names the field %s:\n%s", name, bad, field, msg)
			}
			if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
				t.Errorf("--%s=%s: the data dir was written", name, bad)
			}
		})
	}
}

// internalField matches what a message about a flag must not name: a Go
// field of a package's Config (PinTTL, RaftAddr, GRPCAddr, Config.NodeID,
// TLS.CAFile, Join[0], MaxMessageBytes). Units (MiB) and Go's own functions in a
// flag's parse error (strconv.ParseUint) are not fields.
var internalField = regexp.MustCompile(`(^|[^.\w])([A-Z][A-Za-z]*\.[A-Z]\w*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]+|[A-Z]{2,}[a-z]\w*|[A-Z][a-z]+\[[0-9]+\])`)

// TestAddressFlagsAreNamed: an address the server refuses is refused by a
// message naming its flag — the one given, --raft-advertise or --raft-addr
// for the address peers dial — and no package's field (RaftAddr, GRPCAddr,
// BindAddr, AdvertiseAddr, Join[0], Config.AdvertiseAddr). One value per
// flag in TestEveryBadServerFlagIsNamed could not tell: the first line
// named the flag, the next ones the fields.
func TestAddressFlagsAreNamed(t *testing.T) {
	secret := writeTemp(t.TempDir(), "secret", strings.Repeat("s", 32))
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--raft-addr", "nonsense"}, "--raft-addr"},
		{[]string{"--raft-addr", "127.0.0.1:0"}, "--raft-addr"},
		{[]string{"--raft-advertise", "nonsense"}, "--raft-advertise"},
		{[]string{"--raft-advertise", "127.0.0.1:0"}, "--raft-advertise"},
		{[]string{"--grpc-advertise", "127.0.0.1:0"}, "--grpc-advertise"},
		{[]string{"--gossip-addr", "nonsense"}, "--gossip-addr"},
		{[]string{"--gossip-addr", "0.0.0.0:" + strings.Split(proc.FreePort(t), ":")[1], "--insecure"}, "--gossip-advertise"},
		{[]string{"--gossip-advertise", "nonsense"}, "--gossip-advertise"},
		{[]string{"--join", "127.0.0.1:0", "--peer-secret-file", secret}, "--join"},
	} {
		msg, err := executeCLI(validateArgs(t, filepath.Join(t.TempDir(), "data"), tc.args...))
		if exitCode(err) != exitUsage {
			t.Errorf("%v: exit %d, want %d: %v", tc.args, exitCode(err), exitUsage, err)
			continue
		}
		if !strings.Contains(msg, tc.flag) {
			t.Errorf("%v: the message does not name %s:\n%s", tc.args, tc.flag, msg)
		}
		if field := internalField.FindString(msg); field != "" {
			t.Errorf("%v: the message names the field %s:\n%s", tc.args, field, msg)
		}
	}
}

// validateArgs is `metad server --validate` on dataDir and free ports,
// then extra.
func validateArgs(t *testing.T, dataDir string, extra ...string) []string {
	args := []string{"server", "--validate", "--data-dir", dataDir,
		"--grpc-addr", proc.FreePort(t), "--raft-addr", proc.FreePort(t), "--gossip-addr", proc.FreePort(t), "--http-addr", proc.FreePort(t)}
	return append(args, extra...)
}

// executeCLI runs the CLI in process on args and returns the error's line
// as the user sees it ("" without an error) and the error.
func executeCLI(args []string) (string, error) {
	root := newRootCmd()
	var out bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&out)
	err := root.Execute()
	if err != nil {
		return errorLine(err), err
	}
	return "", nil
}

// writePKI writes a CA and a server certificate for 127.0.0.1 and returns
// the replacer of {ca}, {cert} and {key} by their files.
func writePKI(t *testing.T) *strings.Replacer {
	t.Helper()
	dir := t.TempDir()
	ca, err := tlsconfig.CreateCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := tlsconfig.CreateCert(ca, tlsconfig.LeafSpec{Name: "n1", Role: "peer", Server: true, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"ca": ca.CertPEM, "cert": leaf.CertPEM, "key": leaf.KeyPEM}
	var pairs []string
	for name, pem := range files {
		path := filepath.Join(dir, name+".pem")
		if err := os.WriteFile(path, pem, 0o600); err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, "{"+name+"}", path)
	}
	return strings.NewReplacer(pairs...)
}

// TestClientTLSFlagsAreNamed: client TLS flags that make no client are bad
// usage naming the flags, not the client's Config fields (it said
// "client: TLS.CAFile (--tls-ca-file) is required with TLS" for a
// certificate without its CA bundle).
func TestClientTLSFlagsAreNamed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tls-cert-file", "c.pem", "--tls-key-file", "k.pem"}, "--tls-cert-file needs --tls-ca-file"},
		{[]string{"--tls-cert-file", "c.pem", "--tls-ca-file", "ca.pem"}, "--tls-cert-file and --tls-key-file go together"},
		{[]string{"--tls-key-file", "k.pem", "--tls-ca-file", "ca.pem"}, "--tls-cert-file and --tls-key-file go together"},
	} {
		msg, err := executeCLI(append([]string{"status", "--addr", "127.0.0.1:1"}, tc.args...))
		if exitCode(err) != exitUsage || !strings.Contains(msg, tc.want) {
			t.Errorf("status %v: exit %d, want %d saying %q: %s", tc.args, exitCode(err), exitUsage, tc.want, msg)
		}
		if field := internalField.FindString(msg); field != "" {
			t.Errorf("status %v: the message names the field %s: %s", tc.args, field, msg)
		}
	}
}
