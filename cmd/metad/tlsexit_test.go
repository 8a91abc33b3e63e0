package main

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/internal/proc"
	"github.com/metad/metad/tlsconfig"
)

// tlsServer is one running metad server serving TLS under a CA of the
// test's, with the files a client needs in dir: ca.pem, op.pem and
// op-key.pem (an operator), and a CA and client of another authority
// (other-ca.pem, stranger.pem, stranger-key.pem) and an expired operator
// certificate (expired.pem, expired-key.pem).
type tlsServer struct {
	*realServer
	dir string
}

func startTLSServer(t *testing.T) *tlsServer {
	t.Helper()
	dir := t.TempDir()
	ca, err := tlsconfig.CreateCA("test CA", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	other, err := tlsconfig.CreateCA("another CA", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	writeTemp(dir, "ca.pem", string(ca.CertPEM))
	writeTemp(dir, "other-ca.pem", string(other.CertPEM))
	writeLeaf(t, dir, ca, "n1", tlsconfig.LeafSpec{Name: "n1", Role: "peer", Server: true, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	writeLeaf(t, dir, ca, "op", tlsconfig.LeafSpec{Name: "op", Role: "operator"})
	writeLeaf(t, dir, other, "stranger", tlsconfig.LeafSpec{Name: "stranger", Role: "operator"})
	writeLeaf(t, dir, ca, "expired", tlsconfig.LeafSpec{Name: "old", Role: "operator",
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})

	c := proc.New(t, 1, "--tls-cert-file", filepath.Join(dir, "n1.pem"), "--tls-key-file", filepath.Join(dir, "n1-key.pem"),
		"--tls-ca-file", filepath.Join(dir, "ca.pem"))
	s := &tlsServer{realServer: &realServer{c: c, bin: proc.Binary(t), addr: c.Nodes[0].GRPC}, dir: dir}
	c.StartAll()
	c.WaitFor("the TLS server to answer", 60*time.Second, func() bool {
		_, code := s.run(t, s.tlsArgs("ca.pem", "op", "status")...)
		return code == 0
	})
	return s
}

// tlsArgs are args with the client's TLS flags: the CA bundle file and the
// certificate named cert ("" for none).
func (s *tlsServer) tlsArgs(caFile, cert string, args ...string) []string {
	args = append(args, "--timeout", "5s", "--tls-ca-file", filepath.Join(s.dir, caFile))
	if cert != "" {
		args = append(args, "--tls-cert-file", filepath.Join(s.dir, cert+".pem"), "--tls-key-file", filepath.Join(s.dir, cert+"-key.pem"))
	}
	return args
}

// TestTLSHandshakeFailuresAreNotRetryable: a handshake that fails because
// of the certificates or because only one side speaks TLS exits 1, not 4
// (no retry can succeed), naming the address, the cause and the flag to
// check; an unreachable server still exits 4.
func TestTLSHandshakeFailuresAreNotRetryable(t *testing.T) {
	s := startTLSServer(t)
	plain := startRealServer(t)
	for _, tc := range []struct {
		what string
		addr string
		args []string
		want []string
	}{
		{"server certificate from a foreign CA", s.addr, s.tlsArgs("other-ca.pem", "op", "status"),
			[]string{"signed by an authority not in the CA bundle", "--tls-ca-file"}},
		{"client certificate from a foreign CA", s.addr, s.tlsArgs("ca.pem", "stranger", "stream", "list"),
			[]string{"refused this client's certificate", "--tls-cert-file"}},
		{"expired client certificate", s.addr, s.tlsArgs("ca.pem", "expired", "status"),
			[]string{"expired", "--tls-cert-file"}},
		{"plaintext client, TLS server", s.addr, []string{"status", "--timeout", "5s"},
			[]string{"speaks TLS", "--tls-ca-file"}},
		{"TLS client, plaintext server", plain.addr, s.tlsArgs("ca.pem", "op", "status"),
			[]string{"does not speak TLS", "--tls-ca-file"}},
	} {
		out, code := s.run(t, append(tc.args, "--addr", tc.addr)...)
		if code != exitFailure {
			t.Errorf("%s: exit %d, want %d\n%s", tc.what, code, exitFailure, out)
		}
		for _, w := range append(tc.want, "TLS handshake with "+tc.addr+" failed") {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output does not say %q:\n%s", tc.what, w, out)
			}
		}
	}
	if out, code := s.run(t, s.tlsArgs("ca.pem", "op", "status", "--addr", proc.FreePort(t))...); code != exitRetryable {
		t.Errorf("unreachable TLS server: exit %d, want %d\n%s", code, exitRetryable, out)
	}
}

// TestServerLogsRefusedHandshakes: a client certificate from a foreign CA
// and an expired one are refused, and the server says so at WARN with the
// caller's address and the cause (gRPC drops the error otherwise).
func TestServerLogsRefusedHandshakes(t *testing.T) {
	s := startTLSServer(t)
	for _, tc := range []struct{ cert, why string }{
		{"stranger", "signed by an authority not in --tls-ca-file"},
		{"expired", "the client's certificate has expired"},
	} {
		// Refusals are logged at most once a second: handshake again until
		// one is.
		var line string
		s.c.WaitFor("the server to log the refused "+tc.cert+" certificate", 30*time.Second, func() bool {
			local := s.handshake(t, tc.cert)
			for _, l := range strings.Split(s.c.Log(0), "\n") {
				if strings.Contains(l, "TLS handshake refused") && strings.Contains(l, "remote="+local) {
					line = l
					return true
				}
			}
			return false
		})
		if !strings.Contains(line, "level=WARN") || !strings.Contains(line, tc.why) {
			t.Errorf("%s: the log line does not say WARN and %q:\n%s", tc.cert, tc.why, line)
		}
	}
}

// handshake makes one TLS connection to the server with the client
// certificate cert, trusting the server's CA, reads the server's answer
// (with TLS 1.3 a refusal of the client's certificate arrives after the
// client's side of the handshake) and returns its own address.
func (s *tlsServer) handshake(t *testing.T, cert string) string {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(s.dir, cert+".pem"), filepath.Join(s.dir, cert+"-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(filepath.Join(s.dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", s.addr,
		&tls.Config{RootCAs: pool, NextProtos: []string{"h2"},
			// Sent even when the server's CA list does not name its issuer
			// (with Certificates, Go would then send none), as metad's client
			// does.
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }})
	if err != nil {
		t.Fatalf("dial %s: %v", s.addr, err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Fatalf("the server accepted the %s certificate", cert)
	}
	return conn.LocalAddr().String()
}

// TestExpiredServerCertificateIsNotRetryable: a server whose certificate
// expires while it serves fails every client's handshake the same way
// until it is renewed: exit 1 (not 4, "try again"), saying so and naming
// the server's --tls-cert-file. (A start with an expired certificate is
// refused: TestRefusedStartLeavesNoState.)
func TestExpiredServerCertificateIsNotRetryable(t *testing.T) {
	dir := t.TempDir()
	ca, err := tlsconfig.CreateCA("test CA", 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	// Long enough for the server to start under load, then it expires.
	notAfter := time.Now().Add(30 * time.Second).Truncate(time.Second)
	for name, spec := range map[string]tlsconfig.LeafSpec{
		"n1": {Name: "n1", Role: "peer", Server: true, IPs: []net.IP{net.IPv4(127, 0, 0, 1)},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter},
		"op": {Name: "op", Role: "operator"},
	} {
		writeLeaf(t, dir, ca, name, spec)
	}
	writeTemp(dir, "ca.pem", string(ca.CertPEM))
	c := proc.New(t, 1, "--tls-cert-file", filepath.Join(dir, "n1.pem"), "--tls-key-file", filepath.Join(dir, "n1-key.pem"),
		"--tls-ca-file", filepath.Join(dir, "ca.pem"))
	s := &tlsServer{realServer: &realServer{c: c, bin: proc.Binary(t), addr: c.Nodes[0].GRPC}, dir: dir}
	c.StartAll()
	c.WaitFor("the TLS server to answer", 25*time.Second, func() bool {
		_, code := s.run(t, s.tlsArgs("ca.pem", "op", "status")...)
		return code == 0
	})
	c.WaitFor("the server's certificate to expire", time.Minute, func() bool { return time.Now().After(notAfter.Add(time.Second)) })
	for _, args := range [][]string{
		s.tlsArgs("ca.pem", "op", "status"),
		s.tlsArgs("ca.pem", "op", "stream", "list"),
		s.tlsArgs("ca.pem", "op", "endpoint", "health"),
	} {
		out, code := s.run(t, append(args, "--addr", s.addr)...)
		if code != exitFailure {
			t.Errorf("%v: exit %d, want %d\n%s", args, code, exitFailure, out)
		}
		for _, w := range []string{"TLS handshake with " + s.addr + " failed", "the server's certificate has expired", "--tls-cert-file"} {
			if !strings.Contains(out, w) {
				t.Errorf("%v: output does not say %q:\n%s", args, w, out)
			}
		}
	}
}

// writeLeaf issues spec's certificate from ca and writes it to dir as
// NAME.pem and NAME-key.pem.
func writeLeaf(t *testing.T, dir string, ca *tlsconfig.KeyPair, name string, spec tlsconfig.LeafSpec) {
	t.Helper()
	kp, err := tlsconfig.CreateCert(ca, spec)
	if err != nil {
		t.Fatal(err)
	}
	writeTemp(dir, name+".pem", string(kp.CertPEM))
	writeTemp(dir, name+"-key.pem", string(kp.KeyPEM))
}
