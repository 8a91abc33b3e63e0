package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/metad/metad/api"
	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/auth"
	"github.com/metad/metad/tlsconfig"
)

// testPKI is a CA and the files of a server certificate and its tokens.
type testPKI struct {
	dir    string
	ca     *tlsconfig.KeyPair
	tokens map[auth.Role]string // plaintext, for the tests to send
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	ca, err := tlsconfig.CreateCA("test CA", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p := &testPKI{dir: t.TempDir(), ca: ca, tokens: map[auth.Role]string{}}
	p.write(t, "ca.pem", ca.CertPEM)
	p.issue(t, "server", tlsconfig.LeafSpec{Name: "n1", Role: "peer", Server: true, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	var yaml strings.Builder
	yaml.WriteString("tokens:\n")
	for _, r := range []auth.Role{auth.Reader, auth.Writer, auth.Operator} {
		tok := "token-of-" + r.String() + "-0123456789"
		p.tokens[r] = tok
		yaml.WriteString("  - {name: " + r.String() + "-app, role: " + r.String() + ", sha256: " + auth.HashToken(tok) + "}\n")
	}
	p.write(t, "tokens.yaml", []byte(yaml.String()))
	return p
}

func (p *testPKI) write(t *testing.T, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// issue writes name.pem and name-key.pem signed by the CA.
func (p *testPKI) issue(t *testing.T, name string, spec tlsconfig.LeafSpec) tls.Certificate {
	t.Helper()
	kp, err := tlsconfig.CreateCert(p.ca, spec)
	if err != nil {
		t.Fatal(err)
	}
	p.write(t, name+".pem", kp.CertPEM)
	p.write(t, name+"-key.pem", kp.KeyPEM)
	c, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (p *testPKI) security(tokens bool) Security {
	s := Security{TLS: tlsconfig.Config{
		CertFile: filepath.Join(p.dir, "server.pem"), KeyFile: filepath.Join(p.dir, "server-key.pem"), CAFile: filepath.Join(p.dir, "ca.pem"),
	}}
	if tokens {
		s.AuthTokensFile = filepath.Join(p.dir, "tokens.yaml")
	}
	return s
}

// dial connects over TLS, with cert if given and token if not "".
func (p *testPKI) dial(t *testing.T, addr string, cert *tls.Certificate, token string) *grpc.ClientConn {
	t.Helper()
	tc, err := tlsconfig.StaticClientConfig(filepath.Join(p.dir, "ca.pem"), true)
	if err != nil {
		t.Fatal(err)
	}
	if cert != nil {
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cert, nil }
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(tc))}
	if token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(auth.BearerCredentials{Token: token}))
	}
	conn, err := grpc.NewClient("passthrough:///"+addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// identity is one way of calling: who, and with what role.
type identity struct {
	name string
	role auth.Role // None: no role
	conn *grpc.ClientConn
	// known: the caller is someone (a verified certificate without a
	// role): refused with PermissionDenied, not Unauthenticated.
	known bool
}

// TestEveryRPCForEveryIdentity calls every RPC of every service, as no one
// and as each role (by certificate and by token), on a node with TLS and
// tokens. Each answer is the role table's, and a refused call leaves the
// replicated state (hash and applied index) unchanged.
func TestEveryRPCForEveryIdentity(t *testing.T) {
	pki := newTestPKI(t)
	n := startTestNode(t, func(c *Config) { c.Security = pki.security(true) })
	addr := n.cfg.GRPCAddr
	ids := []identity{{name: "no identity", role: auth.None, conn: pki.dial(t, addr, nil, "")}}
	for _, r := range []auth.Role{auth.Reader, auth.Writer, auth.Operator, auth.Peer} {
		cert := pki.issue(t, "client-"+r.String(), tlsconfig.LeafSpec{Name: r.String() + "-cert", Role: r.String()})
		ids = append(ids, identity{name: r.String() + " certificate", role: r, conn: pki.dial(t, addr, &cert, "")})
		if tok, ok := pki.tokens[r]; ok {
			ids = append(ids, identity{name: r.String() + " token", role: r, conn: pki.dial(t, addr, nil, tok)})
		}
	}
	noRole := pki.issue(t, "norole", tlsconfig.LeafSpec{Name: "norole", Role: "nonsense"})
	ids = append(ids, identity{name: "certificate without a role", role: auth.None, conn: pki.dial(t, addr, &noRole, ""), known: true},
		identity{name: "unknown token", role: auth.None, conn: pki.dial(t, addr, nil, "not-a-known-token-0123")})

	calls := 0
	for _, desc := range []grpc.ServiceDesc{metadpb.Metad_ServiceDesc, metadpb.Cluster_ServiceDesc, metadpb.Peer_ServiceDesc} {
		sd := serviceDescriptor(t, desc.ServiceName)
		for i := range sd.Methods().Len() {
			md := sd.Methods().Get(i)
			method := "/" + desc.ServiceName + "/" + string(md.Name())
			need, peerToo, ok := api.RoleFor(method)
			if !ok {
				t.Fatalf("%s not in the role table", method)
			}
			for _, id := range ids {
				allowed := id.role != auth.None && (id.role.Satisfies(need) || (peerToo && id.role == auth.Peer))
				before := stateOf(t, n)
				err := invoke(id.conn, method, md)
				calls++
				code := status.Code(err)
				switch {
				case allowed && (code == codes.Unauthenticated || code == codes.PermissionDenied):
					t.Errorf("%s as %s: refused (%v), the table allows it", method, id.name, err)
				case !allowed && id.role == auth.None && !id.known && code != codes.Unauthenticated:
					t.Errorf("%s as %s: got %v, want Unauthenticated", method, id.name, err)
				case !allowed && (id.role != auth.None || id.known) && code != codes.PermissionDenied:
					t.Errorf("%s as %s: got %v, want PermissionDenied", method, id.name, err)
				}
				if !allowed {
					if after := stateOf(t, n); after != before {
						t.Errorf("%s as %s: refused, yet the state moved from %v to %v", method, id.name, before, after)
					}
				}
			}
		}
	}
	if calls < 28*len(ids) {
		t.Fatalf("made only %d calls", calls)
	}
}

func serviceDescriptor(t *testing.T, name string) protoreflect.ServiceDescriptor {
	t.Helper()
	d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(name))
	if err != nil {
		t.Fatal(err)
	}
	return d.(protoreflect.ServiceDescriptor)
}

// invoke calls method with an empty request of its type.
func invoke(conn *grpc.ClientConn, method string, md protoreflect.MethodDescriptor) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, resp := dynamicpb.NewMessage(md.Input()), dynamicpb.NewMessage(md.Output())
	if !md.IsStreamingServer() && !md.IsStreamingClient() {
		return conn.Invoke(ctx, method, req, resp)
	}
	s, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: md.IsStreamingServer(), ClientStreams: md.IsStreamingClient()}, method)
	if err != nil {
		return err
	}
	if err := s.SendMsg(req); err != nil {
		return err
	}
	if err := s.CloseSend(); err != nil {
		return err
	}
	for {
		if err := s.RecvMsg(resp); err != nil {
			if err.Error() == "EOF" {
				return nil
			}
			return err
		}
	}
}

type stateStamp struct {
	hash  [32]byte
	index uint64
}

func stateOf(t *testing.T, n *Server) stateStamp {
	t.Helper()
	h, idx, err := n.store.StateHash()
	if err != nil {
		t.Fatal(err)
	}
	return stateStamp{h, idx}
}

// TestPeerProposeAttackRefusedWithTLS is issue 10's attack with TLS on: a
// client certificate (even an operator's) calling metad.v1.Peer is
// refused with PERMISSION_DENIED and changes nothing.
func TestPeerProposeAttackRefusedWithTLS(t *testing.T) {
	pki := newTestPKI(t)
	n := startTestNode(t, func(c *Config) { c.Security = pki.security(false) })
	testAdmin[n] = func(t *testing.T) *grpc.ClientConn {
		cert := pki.issue(t, "admin", tlsconfig.LeafSpec{Name: "admin", Role: "operator"})
		return pki.dial(t, n.cfg.GRPCAddr, &cert, "")
	}
	for _, role := range []string{"operator", "writer"} {
		cert := pki.issue(t, "attacker-"+role, tlsconfig.LeafSpec{Name: "attacker", Role: role})
		runPeerAttack(t, n, pki.dial(t, n.cfg.GRPCAddr, &cert, ""), codes.PermissionDenied)
	}
}

// TestRaftAndHTTPPortsUseTLS: with TLS the Raft transport admits only
// peer certificates, and the HTTP admin address serves probes over TLS
// to a caller with only the CA.
func TestRaftAndHTTPPortsUseTLS(t *testing.T) {
	pki := newTestPKI(t)
	httpAddr := freeAddr(t)
	n := startTestNode(t, func(c *Config) { c.Security = pki.security(false); c.HTTPAddr = httpAddr })
	clusterID := awaitClusterID(t, n)
	ca, err := os.ReadFile(filepath.Join(pki.dir, "ca.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	raftDial := func(cert *tls.Certificate) error {
		cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		conn, err := tls.Dial("tcp", n.cfg.Raft.BindAddr, cfg)
		if err != nil {
			return err
		}
		defer conn.Close()
		// The server's verdict on our certificate arrives with the first
		// read (TLS 1.3 finishes the client side before the server checks).
		_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
		// At feature level 2 with a cluster id, the node takes raft
		// connections that name its cluster (raftstore's identity
		// preamble: magic, version 1, length, id), then raft's rpc byte.
		hello := append([]byte("MDCI\x01"), byte(len(clusterID)))
		_, err = conn.Write(append(append(hello, clusterID...), 0))
		if err == nil {
			_, err = conn.Read(make([]byte, 1))
		}
		if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
			return nil // accepted: raft waits for the rest of the request
		}
		return err
	}
	if err := raftDial(nil); err == nil {
		t.Error("raft accepted a connection without a client certificate")
	}
	op := pki.issue(t, "raft-op", tlsconfig.LeafSpec{Name: "op", Role: "operator"})
	if err := raftDial(&op); err == nil {
		t.Error("raft accepted an operator certificate")
	}
	peer := pki.issue(t, "raft-peer", tlsconfig.LeafSpec{Name: "p", Role: "peer"})
	if err := raftDial(&peer); err != nil {
		t.Errorf("raft refused a peer certificate: %v", err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := hc.Get("https://" + httpAddr + "/healthz")
	if err != nil {
		t.Fatalf("healthz over TLS: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("healthz: %s", resp.Status)
	}
	if resp, err := http.Get("http://" + httpAddr + "/healthz"); err == nil && resp.StatusCode == http.StatusOK {
		resp.Body.Close()
		t.Error("the admin address answered in clear text")
	}
}
