package tlsconfig

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/internal/fakeclock"
	"github.com/metad/metad/internal/waitfor"
)

type files struct{ dir, cert, key, ca string }

func writeFiles(t *testing.T, dir string, ca, leaf *KeyPair) files {
	t.Helper()
	f := files{dir: dir, cert: filepath.Join(dir, "c.pem"), key: filepath.Join(dir, "k.pem"), ca: filepath.Join(dir, "ca.pem")}
	for path, b := range map[string][]byte{f.cert: leaf.CertPEM, f.key: leaf.KeyPEM, f.ca: ca.CertPEM} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func mustCA(t *testing.T, name string) *KeyPair {
	t.Helper()
	ca, err := CreateCA(name, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func mustLeaf(t *testing.T, ca *KeyPair, name string) *KeyPair {
	t.Helper()
	kp, err := CreateCert(ca, LeafSpec{Name: name, Role: "peer", Server: true, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

func TestValidateNamesMissingFlags(t *testing.T) {
	err := Config{CertFile: "c"}.Validate()
	for _, want := range []string{"tls-key-file", "tls-ca-file"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want it to name %s", err, want)
		}
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("%v does not wrap ErrInvalid", err)
	}
}

func TestNewRefusesMismatchedKey(t *testing.T) {
	ca := mustCA(t, "ca")
	a, b := mustLeaf(t, ca, "a"), mustLeaf(t, ca, "b")
	f := writeFiles(t, t.TempDir(), ca, a)
	if err := os.WriteFile(f.key, b.KeyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{CertFile: f.cert, KeyFile: f.key, CAFile: f.ca}, nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("mismatched key: %v, want ErrInvalid", err)
	}
}

// handshake runs a TLS handshake between a server and a client config
// over a pipe and returns the server's leaf name as the client saw it.
func handshake(t *testing.T, server, clientCfg *tls.Config) (string, error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	srv := tls.Server(a, server)
	errc := make(chan error, 1)
	go func() { errc <- srv.Handshake() }()
	cl := tls.Client(b, clientCfg)
	err := cl.Handshake()
	if err != nil {
		a.Close()
		<-errc
		return "", err
	}
	if err := <-errc; err != nil {
		return "", err
	}
	return cl.ConnectionState().PeerCertificates[0].Subject.CommonName, nil
}

// TestReloadServesNewMaterialToNewHandshakes: after the files change and
// Reload runs, new handshakes present the new certificate and trust the
// new CA; a failed reload (half-written file) keeps the old material.
func TestReloadServesNewMaterialToNewHandshakes(t *testing.T) {
	ca1 := mustCA(t, "ca1")
	dir := t.TempDir()
	f := writeFiles(t, dir, ca1, mustLeaf(t, ca1, "first"))
	r, err := New(Config{CertFile: f.cert, KeyFile: f.key, CAFile: f.ca}, nil)
	if err != nil {
		t.Fatal(err)
	}
	name, err := handshake(t, r.ServerConfig(tls.RequireAndVerifyClientCert, nil), r.ClientConfig(true, nil))
	if err != nil || name != "first" {
		t.Fatalf("handshake: %q, %v", name, err)
	}
	// A half-written key: the reload fails, the old material stays.
	if err := os.WriteFile(f.key, []byte("-----BEGIN"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reload(); err == nil {
		t.Fatal("reload of a broken key succeeded")
	}
	if name, err := handshake(t, r.ServerConfig(tls.RequireAndVerifyClientCert, nil), r.ClientConfig(true, nil)); err != nil || name != "first" {
		t.Fatalf("after a failed reload: %q, %v", name, err)
	}
	// A new CA and certificate.
	ca2 := mustCA(t, "ca2")
	writeFiles(t, dir, ca2, mustLeaf(t, ca2, "second"))
	changed, err := r.Reload()
	if err != nil || !changed {
		t.Fatalf("Reload: %v, %v", changed, err)
	}
	if name, err := handshake(t, r.ServerConfig(tls.RequireAndVerifyClientCert, nil), r.ClientConfig(true, nil)); err != nil || name != "second" {
		t.Fatalf("after rotation: %q, %v", name, err)
	}
	// A client still on the old CA's material is refused by the server.
	old := writeFiles(t, t.TempDir(), ca1, mustLeaf(t, ca1, "old-client"))
	oldR, err := New(Config{CertFile: old.cert, KeyFile: old.key, CAFile: old.ca}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(t, r.ServerConfig(tls.RequireAndVerifyClientCert, nil), oldR.ClientConfig(false, nil)); err == nil {
		t.Fatal("a certificate of the retired CA was accepted")
	}
}

// TestWatchPicksUpChangedFiles: Watch reloads on its own when the files
// change.
func TestWatchPicksUpChangedFiles(t *testing.T) {
	ca := mustCA(t, "ca")
	dir := t.TempDir()
	f := writeFiles(t, dir, ca, mustLeaf(t, ca, "first"))
	r, err := New(Config{CertFile: f.cert, KeyFile: f.key, CAFile: f.ca, PollInterval: 10 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fc := watching(t, r)
	writeFiles(t, dir, ca, mustLeaf(t, ca, "second-with-a-longer-name"))
	if err := leafNamed(r, "first")(); err != nil {
		t.Fatalf("reloaded before the next poll: %v", err)
	}
	fc.Advance(10 * time.Millisecond) // the next poll
	waitfor.Cond(t, 10*time.Second, "Watch reloading the changed files", leafNamed(r, "second-with-a-longer-name"))
}

func TestClientConfigChecksLeafAndHost(t *testing.T) {
	ca := mustCA(t, "ca")
	f := writeFiles(t, t.TempDir(), ca, mustLeaf(t, ca, "n1"))
	r, err := New(Config{CertFile: f.cert, KeyFile: f.key, CAFile: f.ca}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cc := r.ClientConfig(true, nil)
	cc.ServerName = "not-in-the-certificate.example"
	if _, err := handshake(t, r.ServerConfig(tls.RequireAndVerifyClientCert, nil), cc); err == nil {
		t.Error("a server certificate for another host was accepted")
	}
	veto := errors.New("vetoed")
	if _, err := handshake(t, r.ServerConfig(tls.RequireAndVerifyClientCert, nil), r.ClientConfig(false, func(*x509.Certificate) error { return veto })); err == nil {
		t.Error("checkLeaf's refusal was ignored")
	}
}

// TestWatchRetriesWhenBrokenFilesChange: a broken file is not re-read at
// every poll, but its repair is picked up.
func TestWatchRetriesWhenBrokenFilesChange(t *testing.T) {
	ca := mustCA(t, "ca")
	dir := t.TempDir()
	f := writeFiles(t, dir, ca, mustLeaf(t, ca, "first"))
	r, err := New(Config{CertFile: f.cert, KeyFile: f.key, CAFile: f.ca, PollInterval: 10 * time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	fc := watching(t, r)
	if err := os.WriteFile(f.key, []byte("half a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	fc.Advance(10 * time.Millisecond) // a poll reads the broken files and keeps "first"
	waitfor.Cond(t, 10*time.Second, "the poll reading the broken files", func() error {
		r.mu.RLock()
		stamp := r.stamp
		r.mu.RUnlock()
		if stamp != r.statStamp() {
			return errors.New("the broken files' stamp is not recorded yet")
		}
		return leafNamed(r, "first")()
	})
	writeFiles(t, dir, ca, mustLeaf(t, ca, "repaired-certificate"))
	fc.Advance(10 * time.Millisecond) // the next poll sees them change again
	waitfor.Cond(t, 10*time.Second, "the repaired files reloaded", leafNamed(r, "repaired-certificate"))
}

// watching runs r.Watch on a fake clock until the test ends, and returns
// the clock once Watch's first poll is done and it waits for the next.
func watching(t *testing.T, r *Reloader) *fakeclock.Clock {
	t.Helper()
	fc := fakeclock.New(time.Unix(0, 0))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.Watch(ctx, fc) }()
	t.Cleanup(func() { cancel(); <-done })
	fc.BlockUntil(1)
	return fc
}

// leafNamed is the condition that r serves the leaf named cn.
func leafNamed(r *Reloader, cn string) func() error {
	return func() error {
		if got := r.Leaf().Subject.CommonName; got != cn {
			return fmt.Errorf("serving %q", got)
		}
		return nil
	}
}
