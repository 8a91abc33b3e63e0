package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/metad/metad/auth"
	"github.com/metad/metad/clock"
	"github.com/metad/metad/raftstore"
	"github.com/metad/metad/tlsconfig"
)

// ErrInsecure is wrapped by the refusal to serve a network without TLS.
var ErrInsecure = errors.New("refusing to serve without TLS")

// Security is a node's TLS and authentication settings (README "Securing a cluster").
type Security struct {
	// TLS names the certificate, key and CA bundle. With none named the
	// node serves in clear text, which it does only on loopback addresses
	// unless Insecure.
	TLS tlsconfig.Config
	// AuthTokensFile holds hashed bearer tokens with roles (auth.Tokens).
	// With it, clients may identify by token instead of certificate.
	AuthTokensFile string
	// PeerSecretFile holds the secret nodes of a multi-node cluster without
	// TLS share to call each other's node-to-node service; required for
	// such a node. A node alone without it makes one up (the service is
	// closed to all but itself).
	PeerSecretFile string
	// GossipKeyFile holds the gossip encryption keys, base64, one a line,
	// the first the primary (gossipkey.go). Without it gossip is clear
	// text. Reloaded like the TLS files.
	GossipKeyFile string
	// Insecure allows non-loopback addresses without TLS.
	Insecure bool
	// ReloadInterval is how often the TLS files and the tokens file are
	// checked for changes. Default 10s; range [10ms, 1h].
	ReloadInterval time.Duration
}

// multiNode reports whether the node is configured to be one of several.
func (c Config) multiNode() bool {
	return c.Membership.BootstrapExpect > 1 || len(c.Membership.Join) > 0
}

// validateSecurity reports what the security settings refuse: a network
// address without TLS (unless Insecure), and TLS files that are not all
// named.
func (c Config) validateSecurity() error {
	var errs []error
	s := c.Security
	if s.TLS.Enabled() {
		if err := s.TLS.Validate(); err != nil {
			errs = append(errs, err)
		}
	} else {
		if exposed := c.nonLoopbackAddrs(); len(exposed) > 0 && !s.Insecure {
			errs = append(errs, fmt.Errorf("%w: %s: not loopback: give --tls-cert-file, --tls-key-file and --tls-ca-file "+
				"(metad tls ca create; metad tls cert create --role server), or --insecure to serve in clear text anyway",
				ErrInsecure, strings.Join(exposed, ", ")))
		}
		if c.multiNode() && s.PeerSecretFile == "" {
			errs = append(errs, fmt.Errorf("%w: a node of a cluster (--bootstrap-expect above 1, or --join) without TLS needs "+
				"--peer-secret-file, the same file on every node (for example: head -c 32 /dev/urandom | base64 > peer.secret): "+
				"without it anyone who reaches the gRPC port could call the node-to-node service", ErrInsecure))
		}
	}
	if s.GossipKeyFile != "" {
		if _, err := LoadGossipKeys(s.GossipKeyFile); err != nil {
			errs = append(errs, err)
		}
	}
	if s.ReloadInterval != 0 && (s.ReloadInterval < 10*time.Millisecond || s.ReloadInterval > time.Hour) {
		errs = append(errs, fmt.Errorf("tls-reload-interval %s outside [10ms, 1h]", s.ReloadInterval))
	}
	return errors.Join(errs...)
}

// nonLoopbackAddrs lists the flags whose address is reachable from other
// machines, as "--flag addr".
func (c Config) nonLoopbackAddrs() []string {
	var out []string
	for _, a := range []struct{ flag, addr string }{
		{"grpc-addr", c.GRPCAddr}, {"grpc-advertise", c.GRPCAdvertise},
		{"raft-addr", c.Raft.BindAddr}, {"raft-advertise", c.Raft.AdvertiseAddr},
		{"gossip-addr", c.Membership.BindAddr}, {"gossip-advertise", c.Membership.AdvertiseAddr},
		{"http-addr", c.HTTPAddr},
	} {
		if a.addr != "" && !isLoopback(a.addr) {
			out = append(out, "--"+a.flag+" "+a.addr)
		}
	}
	return out
}

// isLoopback: localhost, 127.0.0.0/8 or ::1. An empty host means every
// interface, which is not loopback.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// security is a running node's TLS material, tokens and peer secret.
type security struct {
	cfg      Security
	tls      *tlsconfig.Reloader // nil without TLS
	settings auth.Settings
	log      *slog.Logger
}

// newSecurity loads the material. multiNode: the node is configured to be
// one of several (--join, or --bootstrap-expect above 1).
func newSecurity(cfg Security, multiNode bool, log *slog.Logger) (*security, error) {
	s := &security{cfg: cfg, log: log}
	if cfg.ReloadInterval == 0 {
		s.cfg.ReloadInterval = 10 * time.Second
	}
	if cfg.TLS.Enabled() {
		tcfg := cfg.TLS
		tcfg.PollInterval = s.cfg.ReloadInterval
		r, err := tlsconfig.New(tcfg, log)
		if err != nil {
			return nil, err
		}
		if role := auth.RoleFromCert(r.Leaf()); role != auth.Peer {
			return nil, fmt.Errorf("tls-cert-file %s: a server's certificate must carry role peer (metad tls cert create --role server), it has %s",
				cfg.TLS.CertFile, role)
		}
		// Outside its validity every client and peer refuses the
		// certificate: a server started with it could serve no one.
		if leaf, now := r.Leaf(), serverClock.Now(); now.Before(leaf.NotBefore) || now.After(leaf.NotAfter) {
			return nil, fmt.Errorf("tls-cert-file %s: the certificate is valid from %s to %s, not now (%s): every client and peer would refuse it; renew it (metad tls cert create --role server)",
				cfg.TLS.CertFile, leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
		}
		s.tls = r
		s.settings.TLS = true
	}
	if cfg.AuthTokensFile != "" {
		t, err := auth.LoadTokens(cfg.AuthTokensFile, log)
		if err != nil {
			return nil, err
		}
		s.settings.Tokens = t
	}
	if !s.settings.TLS {
		if err := s.choosePeerSecret(multiNode); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// choosePeerSecret decides how peers are told apart without TLS: by the
// shared secret of --peer-secret-file; a node alone makes one up, so the
// node-to-node service is closed to every caller but itself. Nodes of a
// cluster must be given one: without it anyone who reaches the gRPC port
// could rewrite the replicated state through metad.v1.Peer.
func (s *security) choosePeerSecret(multiNode bool) error {
	switch {
	case s.cfg.PeerSecretFile != "":
		secret, err := loadPeerSecret(s.cfg.PeerSecretFile)
		if err != nil {
			return err
		}
		s.settings.PeerSecret = secret
	case multiNode:
		return fmt.Errorf("%w: a node of a cluster without TLS needs --peer-secret-file", ErrInsecure)
	default:
		s.settings.PeerSecret = auth.NewPeerSecret()
	}
	return nil
}

// loadPeerSecret reads the shared secret.
func loadPeerSecret(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("peer-secret-file: %w", err)
	}
	secret := strings.TrimSpace(string(b))
	if len(secret) < 16 {
		return "", fmt.Errorf("peer-secret-file %s: the secret must be at least 16 characters", path)
	}
	return secret, nil
}

// serverOption is the gRPC server's transport: mutual TLS (a certificate
// required unless tokens may identify clients instead), or clear text.
func (s *security) serverOption() grpc.ServerOption {
	if s.tls == nil {
		return grpc.Creds(insecure.NewCredentials())
	}
	mode := tls.RequireAndVerifyClientCert
	if s.settings.Tokens != nil {
		mode = tls.VerifyClientCertIfGiven
	}
	return grpc.Creds(newLoggedCreds(credentials.NewTLS(s.tls.ServerConfig(mode, nil)), s.log))
}

// peerDialOptions carry this node's identity to other nodes: its
// certificate (whose chain and peer role the other side checks), or the
// peer secret with the node's id (so that a node of another secret can
// say whom it refused).
func (s *security) peerDialOptions(nodeID string) []grpc.DialOption {
	if s.tls == nil {
		opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithPerRPCCredentials(auth.CallerNode(nodeID))}
		if s.settings.PeerSecret != "" {
			opts = append(opts, grpc.WithPerRPCCredentials(auth.PeerSecretCredentials(s.settings.PeerSecret)))
		}
		return opts
	}
	return []grpc.DialOption{grpc.WithTransportCredentials(credentials.NewTLS(s.tls.ClientConfig(false, requirePeerRole)))}
}

// poll re-reads the TLS files if they changed and the tokens file (its
// reload changes nothing when the tokens are the same).
func (s *security) poll() {
	if s.tls != nil {
		s.tls.Poll()
	}
	if s.settings.Tokens != nil {
		s.settings.Tokens.ReloadAndLog("poll")
	}
}

// reload re-reads everything now (SIGHUP).
func (s *security) reload(why string) {
	if s.tls != nil {
		s.tls.ReloadAndLog(why)
	}
	if s.settings.Tokens != nil {
		s.settings.Tokens.ReloadAndLog(why)
	}
}

// watchFiles re-reads the TLS files, the tokens file and the gossip key
// file every ReloadInterval until ctx ends; a file that does not load is
// logged and what is in use stays.
func (n *Server) watchFiles(ctx context.Context) {
	clock.Every(ctx, serverClock, n.sec.cfg.ReloadInterval, func() bool {
		n.sec.poll()
		if n.gossipKeys != nil {
			n.gossipKeys.reload("file changed")
		}
		return true
	})
}

// Reload re-reads the TLS certificate, key and CA bundle, the tokens file
// and the gossip key file now (cmd/metad calls it on SIGHUP). New connections use what it
// read; established ones continue.
func (n *Server) Reload() {
	n.sec.reload("SIGHUP")
	if n.gossipKeys != nil {
		n.gossipKeys.reload("SIGHUP")
	}
}

// requirePeerRole accepts only a server whose certificate says peer: a
// node talks to nodes, not to anything else the CA signed.
func requirePeerRole(leaf *x509.Certificate) error {
	if r := auth.RoleFromCert(leaf); r != auth.Peer {
		return fmt.Errorf("the server's certificate %q has role %s, not peer", leaf.Subject.CommonName, r)
	}
	return nil
}

// raftTLS is the Raft transport's mutual TLS: only peers connect, either
// way. Nil without TLS.
func (s *security) raftTLS() *raftstore.TransportTLS {
	if s.tls == nil {
		return nil
	}
	return &raftstore.TransportTLS{
		Server: s.tls.ServerConfig(tls.RequireAndVerifyClientCert, requirePeerRole),
		Client: s.tls.ClientConfig(false, requirePeerRole),
	}
}

// httpTLS is the admin address's TLS: a client certificate is verified if
// given but not required, so that probes (/healthz, /readyz) and
// Prometheus reach it with only the CA; /metrics and pprof expose no
// state that a client could change.
func (s *security) httpTLS() *tls.Config {
	if s.tls == nil {
		return nil
	}
	tc := s.tls.ServerConfig(tls.VerifyClientCertIfGiven, nil)
	perConn := tc.GetConfigForClient
	tc.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		c, err := perConn(hello)
		if c != nil {
			c.NextProtos = []string{"http/1.1"} // served by net/http over a TLS listener: HTTP/1.1 only
		}
		return c, err
	}
	return tc
}
