package main

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metad/metad/auth"
)

func runTLSCmd(t *testing.T, args ...string) error {
	t.Helper()
	cmd := newTLSCmd()
	cmd.SetArgs(args)
	cmd.SetOut(&bytes.Buffer{})
	cmd.SetErr(&bytes.Buffer{})
	return cmd.Execute()
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestTLSCommandsMakeRoleCertificates(t *testing.T) {
	dir := t.TempDir()
	if err := runTLSCmd(t, "ca", "create", "--out-dir", dir); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args      []string
		name      string
		role      auth.Role
		serverEKU bool
	}{
		{[]string{"--role", "server", "--name", "n1", "--ip", "10.0.0.1"}, "n1", auth.Peer, true},
		{[]string{"--role", "client", "--name", "ops"}, "ops", auth.Operator, false},
		{[]string{"--role", "client", "--client-role", "reader", "--name", "rd"}, "rd", auth.Reader, false},
		{[]string{"--role", "peer", "--name", "tool"}, "tool", auth.Peer, false},
	} {
		if err := runTLSCmd(t, append([]string{"cert", "create", "--out-dir", dir}, tc.args...)...); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		c := readCert(t, filepath.Join(dir, tc.name+".pem"))
		if r := auth.RoleFromCert(c); r != tc.role {
			t.Errorf("%s: role %s, want %s", tc.name, r, tc.role)
		}
		hasServer := false
		for _, u := range c.ExtKeyUsage {
			hasServer = hasServer || u == x509.ExtKeyUsageServerAuth
		}
		if hasServer != tc.serverEKU {
			t.Errorf("%s: serverAuth %v, want %v", tc.name, hasServer, tc.serverEKU)
		}
		st, err := os.Stat(filepath.Join(dir, tc.name+"-key.pem"))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s key: %v, mode %v; want 0600", tc.name, err, st.Mode().Perm())
		}
	}
	if c := readCert(t, filepath.Join(dir, "n1.pem")); len(c.IPAddresses) != 3 || !c.IPAddresses[0].Equal([]byte{10, 0, 0, 1}) {
		t.Errorf("server IPs %v: want 10.0.0.1 and the loopbacks", c.IPAddresses)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "ops.pem"))
	err := runTLSCmd(t, "cert", "create", "--out-dir", dir, "--role", "client", "--name", "ops")
	if after, _ := os.ReadFile(filepath.Join(dir, "ops.pem")); err == nil || exitCode(err) != 2 || !bytes.Equal(before, after) {
		t.Errorf("overwrite: %v (exit %d); the file must stay", err, exitCode(err))
	}
	for _, bad := range [][]string{
		{"--role", "admin", "--name", "x"},
		{"--role", "client", "--client-role", "peer", "--name", "x"},
		{"--role", "server", "--name", "x", "--ip", "not-an-ip"},
		{"--role", "server"},
	} {
		err := runTLSCmd(t, append([]string{"cert", "create", "--out-dir", dir}, bad...)...)
		if err == nil || exitCode(err) != 2 {
			t.Errorf("%v: %v, want exit 2", bad, err)
		}
		if err != nil && !strings.Contains(err.Error(), "--") {
			t.Errorf("%v: %v does not name the flag", bad, err)
		}
	}
}
