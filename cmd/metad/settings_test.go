package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/metad/metad/node"
	"github.com/metad/metad/raftstore"
)

// flags returns a fresh server flag set with its bound settings.
func flags(t *testing.T) (*pflag.FlagSet, *serverFlags) {
	t.Helper()
	fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
	f := &serverFlags{cfg: node.DefaultConfig()}
	f.register(fs)
	return fs, f
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "metad.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSettingsPrecedence: flag > environment > file > default, for every
// kind of setting (string, int, duration, list).
func TestSettingsPrecedence(t *testing.T) {
	file := writeFile(t, strings.Join([]string{
		"data-dir: /from/file",
		"grpc-addr: 127.0.0.1:1111",
		"bootstrap-expect: 5",
		"pin-ttl: 45s",
		"join: [10.0.0.1:7422, 10.0.0.2:7422]",
	}, "\n"))
	t.Setenv("METAD_GRPC_ADDR", "127.0.0.1:2222")
	t.Setenv("METAD_PIN_TTL", "50s")
	fs, f := flags(t)
	if err := fs.Parse([]string{"--pin-ttl", "55s"}); err != nil {
		t.Fatal(err)
	}
	if err := applyLayers(fs, file); err != nil {
		t.Fatal(err)
	}
	c := f.cfg
	for _, tc := range []struct{ name, got, want string }{
		{"data-dir from the file", c.DataDir, "/from/file"},
		{"grpc-addr: env beats file", c.GRPCAddr, "127.0.0.1:2222"},
		{"pin-ttl: flag beats env and file", c.API.Resolver.PinTTL.String(), (55 * time.Second).String()},
		{"bootstrap-expect from the file", strconv.Itoa(c.Membership.BootstrapExpect), "5"},
		{"join list from the file", strings.Join(c.Membership.Join, ","), "10.0.0.1:7422,10.0.0.2:7422"},
		{"raft-addr default", c.Raft.BindAddr, "127.0.0.1:7421"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}

func TestSettingsRefuseUnknownKeysAndBadValues(t *testing.T) {
	file := writeFile(t, "data-dir: x\nbogus-setting: 1\npin-ttl: soon\nraft: {heartbeat: 1s}\n")
	fs, _ := flags(t)
	if err := applyLayers(fs, file); err == nil {
		t.Fatal("accepted a file with a nested map")
	}
	file = writeFile(t, "data-dir: x\nbogus-setting: 1\npin-ttl: soon\n")
	t.Setenv("METAD_BOOTSTRAP_EXPECT", "three")
	fs, _ = flags(t)
	err := applyLayers(fs, file)
	if err == nil {
		t.Fatal("accepted bad settings")
	}
	for _, want := range []string{"bogus-setting", "pin-ttl", "METAD_BOOTSTRAP_EXPECT"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s:\n%v", want, err)
		}
	}
}

// TestServerConfigValidatedBeforeStart: every invalid setting is reported
// at once, before anything starts.
func TestServerConfigValidatedBeforeStart(t *testing.T) {
	fs, f := flags(t)
	dir := t.TempDir()
	if err := fs.Parse([]string{"--data-dir", dir, "--grpc-addr", "nonsense", "--pin-ttl", "1ms",
		"--raft-election-timeout", "-1s", "--log-level", "loud"}); err != nil {
		t.Fatal(err)
	}
	_, err := f.resolve(fs)
	if err == nil {
		t.Fatal("invalid configuration accepted")
	}
	for _, want := range []string{"grpc-addr", "--pin-ttl", "--raft-election-timeout -1s", "log-level"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "Config.ElectionTimeout") {
		t.Errorf("the flag's error is echoed under the package's field name:\n%v", err)
	}
}

// TestRaftLogStoreSetting: --raft-log-store has all three spellings, and a
// bad value is reported under the flag's name only.
func TestRaftLogStoreSetting(t *testing.T) {
	t.Setenv("METAD_RAFT_LOG_STORE", "wal")
	fs, f := flags(t)
	if err := applyLayers(fs, ""); err != nil {
		t.Fatal(err)
	}
	if f.cfg.Raft.LogStore != raftstore.LogStoreWAL {
		t.Errorf("METAD_RAFT_LOG_STORE=wal gave %q", f.cfg.Raft.LogStore)
	}
	t.Setenv("METAD_RAFT_LOG_STORE", "")
	os.Unsetenv("METAD_RAFT_LOG_STORE")
	fs, f = flags(t)
	if err := applyLayers(fs, writeFile(t, "raft-log-store: wal\n")); err != nil {
		t.Fatal(err)
	}
	if f.cfg.Raft.LogStore != raftstore.LogStoreWAL {
		t.Errorf("raft-log-store: wal in the file gave %q", f.cfg.Raft.LogStore)
	}
	fs, f = flags(t)
	if f.cfg.Raft.LogStore != raftstore.LogStoreAuto {
		t.Errorf("default log store %q, want auto", f.cfg.Raft.LogStore)
	}
	if err := fs.Parse([]string{"--data-dir", t.TempDir(), "--raft-log-store", "rocks"}); err != nil {
		t.Fatal(err)
	}
	_, err := f.resolve(fs)
	if err == nil || !strings.Contains(err.Error(), `--raft-log-store "rocks": want auto, bolt or wal`) || strings.Contains(err.Error(), "Config.LogStore") {
		t.Fatalf("bad log store: %v", err)
	}
}
