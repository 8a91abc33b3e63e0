package main

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/internal/proc"
	"github.com/metad/metad/tlsconfig"
)

// runToExit runs the binary and waits for it to exit (a server that does
// not exit within a minute is a failure of the test).
func runToExit(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, proc.Binary(t), args...).CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit) && ctx.Err() == nil:
		return string(out), exit.ExitCode()
	}
	t.Fatalf("metad %v: %v\n%s", args, err, out)
	return "", -1
}

// without returns args minus the flag name and its value.
func without(args []string, name string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == name {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// TestRefusedStartLeavesNoState: a server start that cannot succeed (a bad
// flag, a busy port) fails before it writes anything to its data dir, and
// the corrected command then starts (with an explicit --node-id that a
// stored random id would contradict).
func TestRefusedStartLeavesNoState(t *testing.T) {
	// For the s3:// case: credentials of their own, so the SDK does not
	// look for an instance role first.
	t.Setenv("AWS_ACCESS_KEY_ID", "any")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "any")
	shortSecret := filepath.Join(t.TempDir(), "short-secret")
	if err := os.WriteFile(shortSecret, []byte("too short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A certificate with another certificate's key: TLS that does not load.
	tlsDir := t.TempDir()
	ca, err := tlsconfig.CreateCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"n1", "n2"} {
		kp, err := tlsconfig.CreateCert(ca, tlsconfig.LeafSpec{Name: name, Role: "peer", Server: true, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
		if err != nil {
			t.Fatal(err)
		}
		writeTemp(tlsDir, name+".pem", string(kp.CertPEM))
		writeTemp(tlsDir, name+"-key.pem", string(kp.KeyPEM))
	}
	writeTemp(tlsDir, "ca.pem", string(ca.CertPEM))
	mismatchedTLS := []string{"--tls-cert-file", filepath.Join(tlsDir, "n1.pem"), "--tls-key-file", filepath.Join(tlsDir, "n2-key.pem"),
		"--tls-ca-file", filepath.Join(tlsDir, "ca.pem")}
	expired, err := tlsconfig.CreateCert(ca, tlsconfig.LeafSpec{Name: "old", Role: "peer", Server: true, IPs: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	writeTemp(tlsDir, "old.pem", string(expired.CertPEM))
	writeTemp(tlsDir, "old-key.pem", string(expired.KeyPEM))
	expiredTLS := []string{"--tls-cert-file", filepath.Join(tlsDir, "old.pem"), "--tls-key-file", filepath.Join(tlsDir, "old-key.pem"),
		"--tls-ca-file", filepath.Join(tlsDir, "ca.pem")}
	cases := []struct {
		name     string
		bad      []string // extra flags of the refused start
		busy     func(c *proc.Cluster) string
		wantCode int
		wantMsg  string
		// defaultStore drops --object-dir: the store is <data-dir>/objects.
		defaultStore bool
	}{
		{name: "log level", bad: []string{"--log-level", "verbose"}, wantCode: 2, wantMsg: `log-level "verbose"`},
		{name: "bootstrap-expect", bad: []string{"--bootstrap-expect", "-1"}, wantCode: 2, wantMsg: "bootstrap-expect -1"},
		{name: "heartbeat", bad: []string{"--raft-heartbeat-timeout", "0s"}, wantCode: 2, wantMsg: "--raft-heartbeat-timeout 0s"},
		{name: "snapshot interval", bad: []string{"--raft-snapshot-interval", "1ms"}, wantCode: 2, wantMsg: "--raft-snapshot-interval: 1ms is outside"},
		{name: "log store", bad: []string{"--raft-log-store", "lsm"}, wantCode: 2, wantMsg: `--raft-log-store "lsm": want auto, bolt or wal`},
		{name: "pin ttl", bad: []string{"--pin-ttl", "-5s"}, wantCode: 2, wantMsg: "--pin-ttl -5s outside [1s, 10m0s]"},
		// Security files are read before the data dir is claimed.
		{name: "peer secret missing", bad: []string{"--peer-secret-file", "/nonexistent/peer-secret"}, wantCode: 2, wantMsg: "peer-secret-file"},
		{name: "peer secret short", bad: []string{"--peer-secret-file", shortSecret}, wantCode: 2, wantMsg: "at least 16 characters"},
		{name: "tokens file missing", bad: []string{"--auth-tokens-file", "/nonexistent/tokens"}, wantCode: 2, wantMsg: "auth-tokens-file"},
		{name: "tls key of another certificate", bad: mismatchedTLS, wantCode: 2, wantMsg: "tls-cert-file/tls-key-file: tls: private key does not match public key"},
		// Every client and peer would refuse it (it started, and served no one).
		{name: "tls certificate expired", bad: expiredTLS, wantCode: 2, wantMsg: "--tls-cert-file " + filepath.Join(tlsDir, "old.pem") + ": the certificate is valid from"},
		{name: "grpc port busy", busy: func(c *proc.Cluster) string { return c.Nodes[0].GRPC }, wantCode: 1, wantMsg: "grpc-addr"},
		{name: "http port busy", busy: func(c *proc.Cluster) string { return c.Nodes[0].HTTP }, wantCode: 1, wantMsg: "http-addr"},
		{name: "raft port busy", busy: func(c *proc.Cluster) string { return c.Nodes[0].Raft }, wantCode: 1, wantMsg: "raft-addr"},
		{name: "gossip port busy", busy: func(c *proc.Cluster) string { return c.Nodes[0].Gossip }, wantCode: 1, wantMsg: "gossip-addr"},
		// The default object store lives in the data dir: opened (and
		// checked) before the refusal, it must not have been created.
		{name: "default object store", defaultStore: true, bad: []string{"--backup-interval", "1m", "--backup-to", shortSecret}, wantCode: 2, wantMsg: "backup-to"},
		// An object store the server cannot use is a bad setting, as
		// --validate says (exit 2 naming the flag; it exited 1).
		{name: "object dir is a file", defaultStore: true, bad: []string{"--object-dir", shortSecret}, wantCode: 2,
			wantMsg: "--object-dir " + shortSecret + ": objectstore: " + shortSecret + " is not a directory"},
		{name: "s3 endpoint unreachable", defaultStore: true, bad: []string{"--object-store", "s3://metad/objects",
			"--s3-endpoint", "http://" + proc.FreePort(t), "--s3-path-style"}, wantCode: 2,
			wantMsg: "--object-store s3://metad/objects: object store s3://metad at http://"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := proc.New(t, 1)
			nd := c.Nodes[0]
			var hold net.Listener
			if tc.busy != nil {
				var err error
				if hold, err = net.Listen("tcp", tc.busy(c)); err != nil {
					t.Fatal(err)
				}
			}
			// As the issue found it: no --node-id on the failed start.
			args := without(nd.Args, "--node-id")
			if tc.defaultStore {
				args = without(args, "--object-dir")
			}
			out, code := runToExit(t, append(args, tc.bad...)...)
			if code != tc.wantCode || !strings.Contains(out, tc.wantMsg) {
				t.Fatalf("refused start: exit %d (want %d), output lacks %q:\n%s", code, tc.wantCode, tc.wantMsg, out)
			}
			if strings.Contains(out, "NodeID: required") {
				t.Errorf("echoes of the real error:\n%s", out)
			}
			if _, err := os.Stat(nd.DataDir); !errors.Is(err, os.ErrNotExist) {
				entries, _ := os.ReadDir(nd.DataDir)
				t.Fatalf("the refused start left %s behind: %v", nd.DataDir, entries)
			}
			if hold != nil {
				_ = hold.Close()
			}
			c.Start(0)
			c.WaitFor("the corrected server to lead", time.Minute, func() bool { return c.Leader(0) == 0 })
		})
	}
}

// TestDataDirLock: a second server on a data dir in use is refused with
// the owner's pid, and leaves the first one serving.
func TestDataDirLock(t *testing.T) {
	c := proc.New(t, 1)
	c.Start(0)
	c.WaitFor("a leader", time.Minute, func() bool { return c.Leader(0) == 0 })
	nd := c.Nodes[0]
	second := []string{"server", "--node-id", nd.ID, "--data-dir", nd.DataDir, "--grpc-addr", proc.FreePort(t),
		"--raft-addr", proc.FreePort(t), "--gossip-addr", proc.FreePort(t), "--http-addr", proc.FreePort(t)}
	out, code := runToExit(t, second...)
	if code != 1 || !strings.Contains(out, "data dir "+nd.DataDir+" is in use by pid ") || strings.Contains(out, "open log store") {
		t.Fatalf("second server: exit %d:\n%s", code, out)
	}
	if c.Leader(0) != 0 {
		t.Error("the first server stopped serving")
	}
	// The offline commands respect the lock too.
	if out, code := runToExit(t, "data", "inspect", "--data-dir", nd.DataDir); code != 1 || !strings.Contains(out, "is in use by pid ") {
		t.Errorf("data inspect of a running server's dir: exit %d:\n%s", code, out)
	}
	// Once the first has stopped, the lock is free.
	c.Stop(0)
	if out, code := runToExit(t, "data", "inspect", "--data-dir", nd.DataDir); code != 0 {
		t.Errorf("data inspect of a stopped server's dir: exit %d:\n%s", code, out)
	}
	c.Start(0)
	c.WaitFor("the restarted server to lead", time.Minute, func() bool { return c.Leader(0) == 0 })
}

// TestDataDirKeepsItsRaftLogStore: a node restarted with another
// --raft-log-store than its data dir holds is refused with one line saying
// how to go on (exit 2), and starts again with the one it holds.
func TestDataDirKeepsItsRaftLogStore(t *testing.T) {
	c := proc.New(t, 1, "--raft-log-store", "wal")
	c.Start(0)
	c.WaitFor("a leader", time.Minute, func() bool { return c.Leader(0) == 0 })
	c.Stop(0)
	nd := c.Nodes[0]
	out, code := runToExit(t, append(nd.Args, "--raft-log-store", "bolt")...)
	want := "--raft-log-store bolt: data dir " + nd.DataDir + "/raft holds a wal raft log, which is never converted in place; start with --raft-log-store wal, or switch this node by deleting its data dir"
	if code != 2 || !strings.Contains(out, want) {
		t.Fatalf("restart with bolt: exit %d, want 2 and %q:\n%s", code, want, out)
	}
	c.Start(0)
	c.WaitFor("the node to lead again on its wal", time.Minute, func() bool { return c.Leader(0) == 0 })
	if log := c.Log(0); !strings.Contains(log, "raft_log_store=wal") {
		t.Errorf("no start-up line names the log store:\n%s", log)
	}
}

// TestEvenBootstrapExpectWarns: 2 is accepted, with a warning.
func TestEvenBootstrapExpectWarns(t *testing.T) {
	c := proc.New(t, 2)
	c.Start(0)
	c.WaitFor("the even-size warning", 30*time.Second, func() bool {
		return strings.Contains(c.Log(0), "level=WARN") && strings.Contains(c.Log(0), "bootstrap-expect 2 is even")
	})
	if !c.Running(0) {
		t.Error("an even --bootstrap-expect must be accepted")
	}
}

// TestNormalStartLogsNoErrorAndTheRealSettings: a normal start logs
// nothing at ERROR (the raft store still opening is a wait, not a failed
// bootstrap), and the effective configuration shows the settings in force
// (the TLS files' polling interval, not 0s).
func TestNormalStartLogsNoErrorAndTheRealSettings(t *testing.T) {
	c := proc.New(t, 1)
	c.StartAll()
	c.WaitFor("a leader", 60*time.Second, func() bool { return c.Leader(0) == 0 })
	log := c.Log(0)
	if strings.Contains(log, "level=ERROR") {
		t.Errorf("a normal start logged at ERROR:\n%s", log)
	}
	if !strings.Contains(log, "tls-reload-interval=10s") {
		t.Errorf("the effective configuration does not show the 10s polling in force:\n%s", log)
	}
}

// TestRefusedRestoreLeavesNoState: a `snapshot restore` refused for its
// file (missing, or corrupt) or its servers (an id or address that does
// not parse, one id twice) writes nothing to the data dir — no LOCK, no
// node id — so the corrected command, with the --node-id the operator
// meant, restores into the same dir (it was refused: "node-id r1 differs
// from node-… stored in …").
func TestRefusedRestoreLeavesNoState(t *testing.T) {
	s := startRealServer(t)
	tmp := t.TempDir()
	good := filepath.Join(tmp, "good.snap")
	if out, code := s.run(t, "snapshot", "save", good); code != 0 {
		t.Fatalf("save: exit %d\n%s", code, out)
	}
	b, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(tmp, "corrupt.snap")
	b[len(b)/2] ^= 0x10
	if err := os.WriteFile(corrupt, b, 0o600); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(tmp, "restored")
	for _, file := range []string{filepath.Join(tmp, "missing.snap"), corrupt} {
		// As the issue found it: no --node-id on the failed restore.
		out, code := s.run(t, "snapshot", "restore", file, "--data-dir", dataDir, "--raft-addr", "127.0.0.1:1")
		if code == 0 {
			t.Fatalf("restore of %s: exit 0\n%s", file, out)
		}
		if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
			entries, _ := os.ReadDir(dataDir)
			t.Fatalf("the refused restore of %s left %s behind: %v", file, dataDir, entries)
		}
	}
	// A new cluster the arguments cannot make is bad usage, refused before
	// the data dir is claimed (the LOCK and node id were written, and the
	// exit was 1).
	for _, bad := range []struct{ args []string }{
		{[]string{"--node-id", "bad id", "--raft-addr", "127.0.0.1:1"}},
		{[]string{"--node-id", "r1", "--raft-addr", "nonsense"}},
		{[]string{"--node-id", "r1", "--raft-addr", "127.0.0.1:1", "--server", "r2=nonsense"}},
		{[]string{"--node-id", "r1", "--raft-addr", "127.0.0.1:1", "--server", "r1=127.0.0.1:2"}},
	} {
		args := append([]string{"snapshot", "restore", good, "--data-dir", dataDir}, bad.args...)
		out, code := s.run(t, args...)
		if code != exitUsage || !strings.Contains(out, "--raft-addr") || !strings.Contains(out, "invalid server list") {
			t.Errorf("metad %s: exit %d, want %d naming the flags\n%s", strings.Join(args, " "), code, exitUsage, out)
		}
		if _, err := os.Stat(dataDir); !errors.Is(err, os.ErrNotExist) {
			entries, _ := os.ReadDir(dataDir)
			t.Fatalf("metad %s left %s behind: %v", strings.Join(args, " "), dataDir, entries)
		}
	}
	if out, code := s.run(t, "snapshot", "restore", good, "--data-dir", dataDir, "--node-id", "r1", "--raft-addr", "127.0.0.1:1"); code != 0 {
		t.Fatalf("the corrected restore: exit %d\n%s", code, out)
	}
	// data recover checks its --server list before it touches the data dir.
	out, code := s.run(t, "data", "recover", "--data-dir", dataDir, "--server", "r1=nonsense", "--yes")
	if code != exitUsage || !strings.Contains(out, "--server: raftstore: invalid server list") {
		t.Errorf("data recover --server r1=nonsense: exit %d, want %d naming --server\n%s", code, exitUsage, out)
	}
}
