package main

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
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
			args := []string{"server", "--validate", "--data-dir", filepath.Join(dir, "data"),
				"--grpc-addr", proc.FreePort(t), "--raft-addr", proc.FreePort(t), "--gossip-addr", proc.FreePort(t), "--http-addr", proc.FreePort(t),
				"--" + name + "=" + bad}
			for _, v := range vals[1:] {
				args = append(args, pki.Replace(v))
			}
			root := newRootCmd()
			var out bytes.Buffer
			root.SetArgs(args)
			root.SetOut(&out)
			root.SetErr(&out)
			err := root.Execute()
			msg := ""
			if err != nil {
				msg = errorLine(err)
			}
			if code := exitCode(err); code != exitUsage {
				t.Errorf("--%s=%s: exit %d, want %d: %s", name, bad, code, exitUsage, msg)
			}
			if !strings.Contains(msg, "--"+name) {
				t.Errorf("--%s=%s: the message does not name --%s:\n%s", name, bad, name, msg)
			}
			if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
				t.Errorf("--%s=%s: the data dir was written", name, bad)
			}
		})
	}
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
