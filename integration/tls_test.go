package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/auth"
	"github.com/metad/metad/client"
	"github.com/metad/metad/internal/proc"
	"github.com/metad/metad/tlsconfig"

	"github.com/metad/metad/internal/waitfor"
)

// TestNonLoopbackWithoutTLSExits2: a server asked to bind a network
// address without TLS refuses to start, exit 2, naming both ways out;
// with --insecure it starts (and warns).
func TestNonLoopbackWithoutTLSExits2(t *testing.T) {
	bin := proc.Binary(t)
	port := strings.TrimPrefix(proc.FreePort(t), "127.0.0.1:")
	dir := t.TempDir()
	cmd := exec.Command(bin, "server", "--grpc-addr", "0.0.0.0:"+port, "--data-dir", filepath.Join(dir, "d"),
		"--raft-addr", proc.FreePort(t), "--gossip-addr", proc.FreePort(t), "--http-addr", proc.FreePort(t))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	code := -1
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	if code != 2 {
		t.Fatalf("exit %d (%v), want 2; stderr:\n%s", code, err, stderr.String())
	}
	for _, want := range []string{"--tls-cert-file", "--insecure", "0.0.0.0:" + port} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not name %s:\n%s", want, stderr.String())
		}
	}

	c := proc.New(t, 1, "--insecure")
	c.Nodes[0].Args = append(c.Nodes[0].Args, "--grpc-addr", "0.0.0.0:"+port, "--grpc-advertise", "127.0.0.1:"+port)
	c.Nodes[0].GRPC = "127.0.0.1:" + port
	c.StartAll()
	c.WaitFor("a leader", 30*time.Second, func() bool { return c.Leader(0) == 0 })
	if log := c.Log(0); !strings.Contains(log, "level=WARN") || !strings.Contains(log, "--insecure") {
		t.Errorf("an --insecure server must warn; log:\n%s", log)
	}
}

// pki is a CA, its bundle file and certificates issued under it, in dir.
type pki struct {
	t   *testing.T
	dir string
	ca  *tlsconfig.KeyPair
}

func newPKI(t *testing.T, dir, name string) *pki {
	ca, err := tlsconfig.CreateCA(name, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return &pki{t: t, dir: dir, ca: ca}
}

// issue returns cert and key PEM under p's CA.
func (p *pki) issue(spec tlsconfig.LeafSpec) *tlsconfig.KeyPair {
	kp, err := tlsconfig.CreateCert(p.ca, spec)
	if err != nil {
		p.t.Fatal(err)
	}
	return kp
}

// writeAtomic replaces path's content in one rename, as a rotation tool
// should (a reader never sees half a file).
func writeAtomic(t *testing.T, path string, b []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func serverSpec(name string) tlsconfig.LeafSpec {
	return tlsconfig.LeafSpec{Name: name, Role: "peer", Server: true, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}
}

// rawConn dials addr over TLS trusting caPEM, presenting cert if given.
func rawConn(t *testing.T, addr string, caPEM []byte, cert *tlsconfig.KeyPair) *grpc.ClientConn {
	t.Helper()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	tc, err := tlsconfig.StaticClientConfig(caFile, true)
	if err != nil {
		t.Fatal(err)
	}
	if cert != nil {
		c, err := tls.X509KeyPair(cert.CertPEM, cert.KeyPEM)
		if err != nil {
			t.Fatal(err)
		}
		tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &c, nil }
	}
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(credentials.NewTLS(tc)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestTLSClusterRefusesStrangersAndRotates: three TLS servers form with
// --bootstrap-expect 3 --join; callers without a certificate, with one
// from another CA, with an expired one, and with a client certificate
// calling metad.v1.Peer are refused; rotating every node's certificate and
// the CA bundle (old+new CA, then new only) under a write load loses no
// acknowledged write and needs no restart.
func TestTLSClusterRefusesStrangersAndRotates(t *testing.T) {
	dir := t.TempDir()
	ca1 := newPKI(t, dir, "CA one")
	c := proc.New(t, 3, "--tls-reload-interval", "100ms")
	caFile := filepath.Join(dir, "ca.pem")
	writeAtomic(t, caFile, ca1.ca.CertPEM)
	for _, nd := range c.Nodes {
		kp := ca1.issue(serverSpec(nd.ID))
		writeAtomic(t, filepath.Join(dir, nd.ID+".pem"), kp.CertPEM)
		writeAtomic(t, filepath.Join(dir, nd.ID+"-key.pem"), kp.KeyPEM)
		nd.Args = append(nd.Args, "--tls-cert-file", filepath.Join(dir, nd.ID+".pem"),
			"--tls-key-file", filepath.Join(dir, nd.ID+"-key.pem"), "--tls-ca-file", caFile)
	}
	op := ca1.issue(tlsconfig.LeafSpec{Name: "op", Role: "operator"})
	writeAtomic(t, filepath.Join(dir, "op.pem"), op.CertPEM)
	writeAtomic(t, filepath.Join(dir, "op-key.pem"), op.KeyPEM)
	// The test's client trusts a bundle file of its own and follows its
	// certificate's rotation like a broker would.
	clientCA := filepath.Join(dir, "client-ca.pem")
	writeAtomic(t, clientCA, ca1.ca.CertPEM)
	c.ClientTLS = &client.TLS{CAFile: clientCA, CertFile: filepath.Join(dir, "op.pem"), KeyFile: filepath.Join(dir, "op-key.pem"),
		ReloadInterval: 100 * time.Millisecond}
	c.StartAll()
	formed(t, c, 3)

	addr := c.Nodes[0].GRPC
	refused := func(what string, conn *grpc.ClientConn, want ...codes.Code) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err := metadpb.NewClusterClient(conn).Status(ctx, &metadpb.StatusRequest{})
		for _, w := range want {
			if status.Code(err) == w {
				return
			}
		}
		t.Errorf("%s: got %v, want one of %v", what, err, want)
	}
	// Without a client certificate the handshake fails (no tokens file:
	// certificates are the only identity).
	refused("no client certificate", rawConn(t, addr, ca1.ca.CertPEM, nil), codes.Unavailable)
	other := newPKI(t, dir, "another CA")
	refused("certificate from another CA", rawConn(t, addr, ca1.ca.CertPEM, other.issue(tlsconfig.LeafSpec{Name: "x", Role: "operator"})), codes.Unavailable)
	expired := ca1.issue(tlsconfig.LeafSpec{Name: "old", Role: "operator",
		NotBefore: time.Now().Add(-48 * time.Hour), NotAfter: time.Now().Add(-24 * time.Hour)})
	refused("expired certificate", rawConn(t, addr, ca1.ca.CertPEM, expired), codes.Unavailable)
	// A valid operator certificate gets Status but no Peer call.
	opConn := rawConn(t, addr, ca1.ca.CertPEM, op)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	if _, err := metadpb.NewClusterClient(opConn).Status(ctx, &metadpb.StatusRequest{}); err != nil {
		t.Fatalf("operator certificate refused Status: %v", err)
	}
	peer := metadpb.NewPeerClient(opConn)
	for name, call := range map[string]func() error{
		"Propose":           func() error { _, err := peer.Propose(ctx, &metadpb.ProposeRequest{}); return err },
		"ReadIndex":         func() error { _, err := peer.ReadIndex(ctx, &metadpb.ReadIndexRequest{}); return err },
		"ConfirmLeadership": func() error { _, err := peer.ConfirmLeadership(ctx, &metadpb.ConfirmLeadershipRequest{}); return err },
		"LocalStatus":       func() error { _, err := peer.LocalStatus(ctx, &metadpb.LocalStatusRequest{}); return err },
		"Repair":            func() error { _, err := peer.Repair(ctx, &metadpb.RepairRequest{}); return err },
	} {
		if err := call(); status.Code(err) != codes.PermissionDenied {
			t.Errorf("client certificate calling Peer/%s: got %v, want PermissionDenied", name, err)
		}
	}
	cancel()

	// Rotation under a write load.
	cl := c.Client()
	load := startWriteLoad(t, cl)
	ca2 := newPKI(t, dir, "CA two")
	bundle := append(append([]byte{}, ca1.ca.CertPEM...), ca2.ca.CertPEM...)
	writeAtomic(t, clientCA, bundle)
	writeAtomic(t, caFile, bundle)
	waitReloads(c, 1)
	load.waitMore(t, 20)
	for _, nd := range c.Nodes {
		kp := ca2.issue(serverSpec(nd.ID))
		writeAtomic(t, filepath.Join(dir, nd.ID+"-key.pem"), kp.KeyPEM)
		writeAtomic(t, filepath.Join(dir, nd.ID+".pem"), kp.CertPEM)
	}
	op2 := ca2.issue(tlsconfig.LeafSpec{Name: "op", Role: "operator"})
	writeAtomic(t, filepath.Join(dir, "op-key.pem"), op2.KeyPEM)
	writeAtomic(t, filepath.Join(dir, "op.pem"), op2.CertPEM)
	waitReloads(c, 2)
	load.waitMore(t, 20)
	writeAtomic(t, caFile, ca2.ca.CertPEM)
	writeAtomic(t, clientCA, ca2.ca.CertPEM)
	// The servers now refuse the old CA's certificates on new connections
	// and serve the new one's.
	c.WaitFor("the old CA refused", 10*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_, err := metadpb.NewClusterClient(rawConn(t, addr, bundle, op)).Status(ctx, &metadpb.StatusRequest{})
		return status.Code(err) == codes.Unavailable
	})
	ctx, cancel = context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := metadpb.NewClusterClient(rawConn(t, addr, ca2.ca.CertPEM, op2)).Status(ctx, &metadpb.StatusRequest{}); err != nil {
		t.Fatalf("a certificate of the new CA is refused after rotation: %v", err)
	}
	waitReloads(c, 3)
	load.waitMore(t, 20)
	// A node restarted now joins the others over Raft and gRPC with only
	// new material: they accept it without having been restarted.
	c.Stop(2)
	load.waitMore(t, 10)
	c.Start(2)
	formed(t, c, 3)
	acked := load.stop(t)
	checkAcked(t, c, acked)
}

// waitReloads waits until every server has logged n reloads of its TLS
// material: the bundle, the certificate, the new CA alone.
func waitReloads(c *proc.Cluster, n int) {
	c.WaitFor(fmt.Sprintf("%d TLS reloads on every server", n), 10*time.Second, func() bool {
		for i := range c.Nodes {
			if strings.Count(c.Log(i), "tls: reloaded certificate") < n {
				return false
			}
		}
		return true
	})
}

// writeLoad creates streams until stopped, remembering the acknowledged.
type writeLoad struct {
	cl     *client.Client
	mu     sync.Mutex
	acked  []string
	failed int
	stopCh chan struct{}
	done   chan struct{}
}

func startWriteLoad(t *testing.T, cl *client.Client) *writeLoad {
	w := &writeLoad{cl: cl, stopCh: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; ; i++ {
			select {
			case <-w.stopCh:
				return
			default:
			}
			name := fmt.Sprintf("rot-%d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := client.Call(ctx, cl, cl.Metad.CreateStream, &metadpb.CreateStreamRequest{Name: name, RequestId: client.NewRequestID()})
			cancel()
			w.mu.Lock()
			if err == nil {
				w.acked = append(w.acked, name)
			} else {
				w.failed++
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// waitMore waits until n more writes were acknowledged: the cluster is
// still taking writes.
func (w *writeLoad) waitMore(t *testing.T, n int) {
	t.Helper()
	w.mu.Lock()
	target := len(w.acked) + n
	w.mu.Unlock()
	waitfor.Cond(t, 30*time.Second, "writes acknowledged", func() error {
		w.mu.Lock()
		got, failed := len(w.acked), w.failed
		w.mu.Unlock()
		if got >= target {
			return nil
		}
		return fmt.Errorf("writes stalled: %d acknowledged, want %d (%d failed)", got, target, failed)
	})
}

func (w *writeLoad) stop(t *testing.T) []string {
	close(w.stopCh)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("write load: %d acknowledged, %d failed", len(w.acked), w.failed)
	return w.acked
}

// checkAcked: every acknowledged stream is there on every node.
func checkAcked(t *testing.T, c *proc.Cluster, acked []string) {
	t.Helper()
	for i := range c.Nodes {
		cl := c.Client(i)
		names := map[string]bool{}
		var after uint64
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			resp, err := client.Call(ctx, cl, cl.Metad.ListStreams, &metadpb.ListStreamsRequest{AfterId: after})
			cancel()
			if err != nil {
				t.Fatalf("node %d: list: %v", i, err)
			}
			for _, s := range resp.Streams {
				names[s.Name] = true
				after = max(after, s.Id)
			}
			if len(resp.Streams) == 0 {
				break
			}
		}
		for _, n := range acked {
			if !names[n] {
				t.Errorf("node %d: acknowledged stream %s is missing", i, n)
			}
		}
	}
}

// TestSIGHUPReloadsCertificate: with a reload interval too long to matter,
// SIGHUP makes the server re-read its certificate at once; new
// connections see it, and the process keeps running.
func TestSIGHUPReloadsCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := newPKI(t, dir, "CA")
	c := proc.New(t, 1, "--tls-reload-interval", "1h")
	nd := c.Nodes[0]
	certFile, keyFile, caFile := filepath.Join(dir, "n.pem"), filepath.Join(dir, "n-key.pem"), filepath.Join(dir, "ca.pem")
	writeAtomic(t, caFile, ca.ca.CertPEM)
	first := ca.issue(serverSpec("first"))
	writeAtomic(t, certFile, first.CertPEM)
	writeAtomic(t, keyFile, first.KeyPEM)
	nd.Args = append(nd.Args, "--tls-cert-file", certFile, "--tls-key-file", keyFile, "--tls-ca-file", caFile)
	op := ca.issue(tlsconfig.LeafSpec{Name: "op", Role: "operator"})
	c.StartAll()
	served := func() string {
		conn, err := tls.Dial("tcp", nd.GRPC, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"},
			Certificates: []tls.Certificate{mustPair(t, op)}})
		if err != nil {
			return ""
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	c.WaitFor("the server to serve TLS", 30*time.Second, func() bool { return served() == "first" })
	second := ca.issue(serverSpec("second"))
	writeAtomic(t, keyFile, second.KeyPEM)
	writeAtomic(t, certFile, second.CertPEM)
	if got := served(); got != "first" {
		t.Fatalf("before SIGHUP the server already serves %q (the poll is 1h)", got)
	}
	c.Reload(0)
	// Serving the new certificate also shows SIGHUP did not end the process.
	c.WaitFor("the new certificate after SIGHUP", 10*time.Second, func() bool { return served() == "second" })
	if !strings.Contains(c.Log(0), "why=SIGHUP") {
		t.Errorf("the reload is not logged with its cause")
	}
}

func mustPair(t *testing.T, kp *tlsconfig.KeyPair) tls.Certificate {
	t.Helper()
	c, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestPeerAttackWithGrpcurl replays issue 10's attack exactly as reported,
// with grpcurl against a real server in the default insecure loopback
// mode, and with a client certificate against a TLS server: both refused,
// the registered object still live. .ci/run installs grpcurl; without it
// the same calls are made by the Go tests (node package).
func TestPeerAttackWithGrpcurl(t *testing.T) {
	grpcurl, err := exec.LookPath("grpcurl")
	if err != nil {
		t.Skip("grpcurl not installed (.ci/run installs it); node.TestPeerProposeAttack* make the same calls in Go")
	}
	// A raw Trim command (fsmpb.Command{trim{stream_id:1}}), base64 as
	// protojson encodes bytes.
	const trimCmd = `{"command":"egIIAQ=="}`

	plain := proc.New(t, 1)
	plain.StartAll()
	plain.WaitFor("a leader", 30*time.Second, func() bool { return plain.Leader(0) == 0 })
	out, err := exec.Command(grpcurl, "-plaintext", "-d", trimCmd, plain.Nodes[0].GRPC, "metad.v1.Peer/Propose").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Unauthenticated") {
		t.Errorf("insecure mode: grpcurl Peer/Propose: %v\n%s", err, out)
	}

	dir := t.TempDir()
	ca := newPKI(t, dir, "CA")
	c := proc.New(t, 1)
	files := map[string][]byte{"ca.pem": ca.ca.CertPEM}
	srv := ca.issue(serverSpec("n1"))
	files["n1.pem"], files["n1-key.pem"] = srv.CertPEM, srv.KeyPEM
	op := ca.issue(tlsconfig.LeafSpec{Name: "op", Role: "operator"})
	files["op.pem"], files["op-key.pem"] = op.CertPEM, op.KeyPEM
	for name, b := range files {
		writeAtomic(t, filepath.Join(dir, name), b)
	}
	c.Nodes[0].Args = append(c.Nodes[0].Args, "--tls-cert-file", filepath.Join(dir, "n1.pem"),
		"--tls-key-file", filepath.Join(dir, "n1-key.pem"), "--tls-ca-file", filepath.Join(dir, "ca.pem"))
	c.ClientTLS = &client.TLS{CAFile: filepath.Join(dir, "ca.pem"), CertFile: filepath.Join(dir, "op.pem"), KeyFile: filepath.Join(dir, "op-key.pem")}
	c.StartAll()
	c.WaitFor("a leader", 30*time.Second, func() bool { return c.Leader(0) == 0 })
	tlsArgs := []string{"-cacert", filepath.Join(dir, "ca.pem"), "-cert", filepath.Join(dir, "op.pem"), "-key", filepath.Join(dir, "op-key.pem")}
	out, err = exec.Command(grpcurl, append(tlsArgs, "-d", trimCmd, c.Nodes[0].GRPC, "metad.v1.Peer/Propose")...).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "PermissionDenied") {
		t.Errorf("TLS, operator certificate: grpcurl Peer/Propose: %v\n%s", err, out)
	}
	out, err = exec.Command(grpcurl, "-cacert", filepath.Join(dir, "ca.pem"), c.Nodes[0].GRPC, "list").CombinedOutput()
	if err == nil {
		t.Errorf("TLS, no client certificate: grpcurl list succeeded:\n%s", out)
	}
}

// TestTokensFromTheCLI: a TLS server with a tokens file takes bearer
// tokens from `--token` and METAD_TOKEN (with only the CA on the client
// side), refuses a call without identity or with too weak a role, and
// follows a change of the tokens file without a restart.
func TestTokensFromTheCLI(t *testing.T) {
	dir := t.TempDir()
	ca := newPKI(t, dir, "CA")
	srv := ca.issue(serverSpec("n1"))
	caFile, tokens := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "tokens.yaml")
	writeAtomic(t, caFile, ca.ca.CertPEM)
	writeAtomic(t, filepath.Join(dir, "n1.pem"), srv.CertPEM)
	writeAtomic(t, filepath.Join(dir, "n1-key.pem"), srv.KeyPEM)
	tokenFile := func(writer string) []byte {
		return []byte("tokens:\n" +
			"  - {name: broker, role: writer, sha256: " + auth.HashToken(writer) + "}\n" +
			"  - {name: dashboard, role: reader, sha256: " + auth.HashToken("reader-token-0123456789") + "}\n")
	}
	writeAtomic(t, tokens, tokenFile("writer-token-0123456789"))
	c := proc.New(t, 1, "--tls-reload-interval", "100ms")
	c.Nodes[0].Args = append(c.Nodes[0].Args, "--tls-cert-file", filepath.Join(dir, "n1.pem"),
		"--tls-key-file", filepath.Join(dir, "n1-key.pem"), "--tls-ca-file", caFile, "--auth-tokens-file", tokens)
	c.StartAll()
	cli := func(env []string, args ...string) (string, error) {
		cmd := exec.Command(proc.Binary(t), append(args, "--addr", c.Nodes[0].GRPC, "--tls-ca-file", caFile, "--timeout", "5s")...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	c.WaitFor("the server to answer a token", 30*time.Second, func() bool {
		_, err := cli(nil, "status", "--token", "reader-token-0123456789")
		return err == nil
	})
	if out, err := cli(nil, "stream", "create", "s1", "--token", "writer-token-0123456789"); err != nil {
		t.Fatalf("writer token: %v\n%s", err, out)
	}
	if out, err := cli([]string{"METAD_TOKEN=writer-token-0123456789"}, "stream", "create", "s2"); err != nil {
		t.Fatalf("METAD_TOKEN: %v\n%s", err, out)
	}
	if out, err := cli(nil, "stream", "create", "s3", "--token", "reader-token-0123456789"); err == nil || !strings.Contains(out, "PERMISSION_DENIED") {
		t.Errorf("reader token creating a stream: %v\n%s", err, out)
	}
	if out, err := cli(nil, "status"); err == nil || !strings.Contains(out, "UNAUTHENTICATED") {
		t.Errorf("no token: %v\n%s", err, out)
	}
	writeAtomic(t, tokens, tokenFile("rotated-writer-token-0123"))
	c.WaitFor("the rotated token to work", 10*time.Second, func() bool {
		_, err := cli(nil, "stream", "create", "s4", "--token", "rotated-writer-token-0123")
		return err == nil
	})
	if out, err := cli(nil, "stream", "create", "s5", "--token", "writer-token-0123456789"); err == nil || !strings.Contains(out, "UNAUTHENTICATED") {
		t.Errorf("a removed token still works: %v\n%s", err, out)
	}
}

// TestClusterNodeWithoutTLSNeedsPeerSecret: a node of a cluster without TLS
// and without --peer-secret-file would leave the node-to-node service open
// to anyone reaching its gRPC port: it refuses to start, exit 2, naming the
// flag, and writes nothing.
func TestClusterNodeWithoutTLSNeedsPeerSecret(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "d")
	cmd := exec.Command(proc.Binary(t), "server", "--data-dir", dir, "--bootstrap-expect", "3",
		"--grpc-addr", proc.FreePort(t), "--raft-addr", proc.FreePort(t), "--gossip-addr", proc.FreePort(t), "--http-addr", proc.FreePort(t))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "--peer-secret-file") {
		t.Fatalf("exit %v, stderr:\n%s\nwant exit 2 naming --peer-secret-file", err, stderr.String())
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("the refused start created %s", dir)
	}
}
