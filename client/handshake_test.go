package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/metad/metad/tlsconfig"
)

// pkiFiles writes PEM files into a temporary directory and returns their
// paths by name.
type pkiFiles struct {
	t   *testing.T
	dir string
}

func (p pkiFiles) write(name string, pem []byte) string {
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem, 0o600); err != nil {
		p.t.Fatal(err)
	}
	return path
}

// serveHealth starts a gRPC server with the health service, with TLS when
// tc is set, and returns its address.
func serveHealth(t *testing.T, tc *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var opts []grpc.ServerOption
	if tc != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(tc)))
	}
	s := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(s, health.NewServer())
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return ln.Addr().String()
}

func mustCert(t *testing.T, ca *tlsconfig.KeyPair, spec tlsconfig.LeafSpec) *tlsconfig.KeyPair {
	t.Helper()
	kp, err := tlsconfig.CreateCert(ca, spec)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

func serverTLS(t *testing.T, ca, leaf *tlsconfig.KeyPair) *tls.Config {
	t.Helper()
	cert, err := tls.X509KeyPair(leaf.CertPEM, leaf.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM)
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS13}
}

// TestTLSHandshakeFailureIsDefinite: a call whose TLS handshake fails (a
// foreign CA on either side, an expired certificate on either side, TLS on
// one side only) returns a *HandshakeError at once: it matches
// ErrTLSHandshake, is definite and not retryable, and is not the call's
// deadline, which a retry until the deadline would be.
func TestTLSHandshakeFailureIsDefinite(t *testing.T) {
	mustCA := func(name string) *tlsconfig.KeyPair {
		ca, err := tlsconfig.CreateCA(name, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return ca
	}
	ca, other := mustCA("test CA"), mustCA("another CA")
	local := []net.IP{net.IPv4(127, 0, 0, 1)}
	past := time.Now().Add(-48 * time.Hour)
	server := mustCert(t, ca, tlsconfig.LeafSpec{Name: "n1", Role: "peer", Server: true, IPs: local})
	expiredServer := mustCert(t, ca, tlsconfig.LeafSpec{Name: "n1", Role: "peer", Server: true, IPs: local, NotBefore: past, NotAfter: past.Add(time.Hour)})
	f := pkiFiles{t: t, dir: t.TempDir()}
	files := func(name string, kp *tlsconfig.KeyPair) (string, string) {
		return f.write(name+".pem", kp.CertPEM), f.write(name+"-key.pem", kp.KeyPEM)
	}
	caFile, otherCAFile := f.write("ca.pem", ca.CertPEM), f.write("other-ca.pem", other.CertPEM)
	opCert, opKey := files("op", mustCert(t, ca, tlsconfig.LeafSpec{Name: "op", Role: "operator"}))
	strangerCert, strangerKey := files("stranger", mustCert(t, other, tlsconfig.LeafSpec{Name: "stranger", Role: "operator"}))
	oldCert, oldKey := files("old", mustCert(t, ca, tlsconfig.LeafSpec{Name: "old", Role: "operator", NotBefore: past, NotAfter: past.Add(time.Hour)}))

	tlsAddr := serveHealth(t, serverTLS(t, ca, server))
	expiredAddr := serveHealth(t, serverTLS(t, ca, expiredServer))
	plainAddr := serveHealth(t, nil)
	for _, tc := range []struct {
		what string
		addr string
		tls  *TLS
	}{
		{"server certificate from a foreign CA", tlsAddr, &TLS{CAFile: otherCAFile, CertFile: opCert, KeyFile: opKey}},
		{"expired server certificate", expiredAddr, &TLS{CAFile: caFile, CertFile: opCert, KeyFile: opKey}},
		{"client certificate from a foreign CA", tlsAddr, &TLS{CAFile: caFile, CertFile: strangerCert, KeyFile: strangerKey}},
		{"expired client certificate", tlsAddr, &TLS{CAFile: caFile, CertFile: oldCert, KeyFile: oldKey}},
		{"client without a certificate", tlsAddr, &TLS{CAFile: caFile}},
		{"plaintext client, TLS server", tlsAddr, nil},
		{"TLS client, plaintext server", plainAddr, &TLS{CAFile: caFile, CertFile: opCert, KeyFile: opKey}},
	} {
		t.Run(tc.what, func(t *testing.T) {
			c, err := New(Config{Addrs: []string{tc.addr}, TLS: tc.tls})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err = Call(ctx, c, c.Health.Check, &healthpb.HealthCheckRequest{})
			var he *HandshakeError
			if !errors.As(err, &he) || !errors.Is(err, ErrTLSHandshake) {
				t.Fatalf("err %v, want a *HandshakeError", err)
			}
			if he.Addr != tc.addr {
				t.Errorf("HandshakeError.Addr %q, want %q", he.Addr, tc.addr)
			}
			for _, not := range []error{ErrRetryable, ErrIndeterminate, ErrUnavailable, context.DeadlineExceeded} {
				if errors.Is(err, not) {
					t.Errorf("err %v matches %v", err, not)
				}
			}
		})
	}

	// The same client settings that work are not a handshake failure.
	c, err := New(Config{Addrs: []string{tlsAddr}, TLS: &TLS{CAFile: caFile, CertFile: opCert, KeyFile: opKey}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := Call(context.Background(), c, c.Health.Check, &healthpb.HealthCheckRequest{}); err != nil {
		t.Fatalf("a good handshake: %v", err)
	}
}
