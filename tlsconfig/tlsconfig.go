package tlsconfig

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/metad/metad/clock"
)

// ErrInvalid is wrapped by every error about unusable TLS material.
var ErrInvalid = errors.New("tlsconfig: invalid TLS material")

// Config names the PEM files. All three are required: metad's TLS is
// always mutual.
type Config struct {
	CertFile, KeyFile, CAFile string
	// PollInterval is how often Watch checks the files. Default 10s;
	// range [10ms, 1h].
	PollInterval time.Duration
}

// Enabled reports whether any file is named.
func (c Config) Enabled() bool { return c.CertFile != "" || c.KeyFile != "" || c.CAFile != "" }

// Validate reports a missing file name or a bad interval, naming the flag.
func (c Config) Validate() error {
	var errs []error
	for _, f := range []struct{ name, val string }{
		{"tls-cert-file", c.CertFile}, {"tls-key-file", c.KeyFile}, {"tls-ca-file", c.CAFile},
	} {
		if f.val == "" {
			errs = append(errs, fmt.Errorf("%w: %s is required with TLS", ErrInvalid, f.name))
		}
	}
	if c.PollInterval != 0 && (c.PollInterval < 10*time.Millisecond || c.PollInterval > time.Hour) {
		errs = append(errs, fmt.Errorf("%w: poll interval %s outside [10ms, 1h]", ErrInvalid, c.PollInterval))
	}
	return errors.Join(errs...)
}

// material is one consistent load of the three files.
type material struct {
	cert    *tls.Certificate
	leaf    *x509.Certificate
	pool    *x509.CertPool
	version [sha256.Size]byte // hash of the three files' bytes
}

// Reloader serves the current TLS material.
type Reloader struct {
	cfg Config
	log *slog.Logger

	mu  sync.RWMutex
	cur *material
	// stamp is the files' size and mtime at the last check, to skip the
	// hash when nothing changed.
	stamp string
}

// New loads the files once; an error means they are unusable now.
func New(cfg Config, log *slog.Logger) (*Reloader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 10 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Reloader{cfg: cfg, log: log}
	m, err := load(cfg)
	if err != nil {
		return nil, err
	}
	r.cur, r.stamp = m, r.statStamp()
	return r, nil
}

func load(cfg Config) (*material, error) {
	certPEM, err := os.ReadFile(cfg.CertFile)
	if err != nil {
		return nil, fmt.Errorf("%w: tls-cert-file: %w", ErrInvalid, err)
	}
	keyPEM, err := os.ReadFile(cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("%w: tls-key-file: %w", ErrInvalid, err)
	}
	caPEM, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("%w: tls-ca-file: %w", ErrInvalid, err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: tls-cert-file/tls-key-file: %w", ErrInvalid, err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("%w: tls-cert-file: %w", ErrInvalid, err)
	}
	cert.Leaf = leaf
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%w: tls-ca-file %s: no PEM certificate in it", ErrInvalid, cfg.CAFile)
	}
	h := sha256.New()
	for _, b := range [][]byte{certPEM, keyPEM, caPEM} {
		h.Write(b)
	}
	m := &material{cert: &cert, leaf: leaf, pool: pool}
	copy(m.version[:], h.Sum(nil))
	return m, nil
}

// statStamp summarizes the files' size and mtime ("" parts for missing).
func (r *Reloader) statStamp() string {
	var b bytes.Buffer
	for _, f := range []string{r.cfg.CertFile, r.cfg.KeyFile, r.cfg.CAFile} {
		if st, err := os.Stat(f); err == nil {
			fmt.Fprintf(&b, "%d/%d;", st.Size(), st.ModTime().UnixNano())
		} else {
			b.WriteString("-;")
		}
	}
	return b.String()
}

// Reload re-reads the files. It returns whether the material changed; on
// an error the previous material stays in use.
func (r *Reloader) Reload() (bool, error) {
	stamp := r.statStamp()
	m, err := load(r.cfg)
	if err != nil {
		// Remember the broken files' stamp: Watch retries when they
		// change again, not at every poll.
		r.mu.Lock()
		r.stamp = stamp
		r.mu.Unlock()
		return false, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stamp = stamp
	if m.version == r.cur.version {
		return false, nil
	}
	r.cur = m
	return true, nil
}

// Watch polls the files every PollInterval on c until ctx ends (Poll).
// The server polls them from its own loop (node's file watch); the
// client runs Watch on its clock, a test on one it drives.
func (r *Reloader) Watch(ctx context.Context, c clock.Clock) {
	clock.Every(ctx, c, r.cfg.PollInterval, func() bool { r.Poll(); return true })
}

// Poll reloads, and logs the outcome, if the files' size or mtime changed
// since they were last read.
func (r *Reloader) Poll() {
	r.mu.RLock()
	same := r.stamp == r.statStamp()
	r.mu.RUnlock()
	if !same {
		r.ReloadAndLog("files changed")
	}
}

// ReloadAndLog reloads and logs the outcome, naming why.
func (r *Reloader) ReloadAndLog(why string) {
	changed, err := r.Reload()
	switch {
	case err != nil:
		r.log.Warn("tls: reload failed; keeping the previous certificate", "why", why, "err", err)
	case changed:
		leaf := r.Leaf()
		r.log.Info("tls: reloaded certificate and CA bundle", "why", why,
			"subject", leaf.Subject.String(), "not_after", leaf.NotAfter)
	}
}

func (r *Reloader) current() *material {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.cur
}

// Leaf is the current certificate.
func (r *Reloader) Leaf() *x509.Certificate { return r.current().leaf }

// Pool is the current CA bundle.
func (r *Reloader) Pool() *x509.CertPool { return r.current().pool }

// ServerConfig is a server's config: each handshake gets the current
// certificate and CA bundle. clientAuth is tls.RequireAndVerifyClientCert
// (certificates are the only identity) or tls.VerifyClientCertIfGiven
// (bearer tokens may identify clients instead). checkClient, if not nil,
// also vets a client's verified certificate (the Raft transport admits
// only peers).
func (r *Reloader) ServerConfig(clientAuth tls.ClientAuthType, checkClient func(*x509.Certificate) error) *tls.Config {
	var verify func(tls.ConnectionState) error
	if checkClient != nil {
		verify = func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("tls: the client sent no certificate")
			}
			return checkClient(cs.PeerCertificates[0])
		}
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			m := r.current()
			return &tls.Config{
				MinVersion:   tls.VersionTLS12,
				Certificates: []tls.Certificate{*m.cert},
				ClientAuth:   clientAuth,
				ClientCAs:    m.pool,
				NextProtos:   []string{"h2"}, // gRPC; HTTP servers override it
				// Checked after the chain is verified against ClientCAs.
				VerifyConnection: verify,
			}, nil
		},
	}
}

// ClientConfig is a client's config: it presents the current certificate
// and verifies the server's chain against the current CA bundle. With
// verifyHost the server's certificate must also name the dialled host
// (ServerName, set by gRPC from the target); nodes calling nodes verify
// the chain and the peer role instead (see auth), as their addresses are
// often not in the certificates' SANs behind NAT or proxies.
// checkLeaf, if not nil, also vets the server's verified certificate.
func (r *Reloader) ClientConfig(verifyHost bool, checkLeaf func(*x509.Certificate) error) *tls.Config {
	return clientConfig(r.current, verifyHost, checkLeaf, func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return r.current().cert, nil
	})
}

// clientConfig verifies by hand so that the CA pool is read at each
// handshake (tls.Config.RootCAs is fixed once the config is in use).
func clientConfig(cur func() *material, verifyHost bool, checkLeaf func(*x509.Certificate) error, getCert func(*tls.CertificateRequestInfo) (*tls.Certificate, error)) *tls.Config {
	return &tls.Config{
		MinVersion:           tls.VersionTLS12,
		InsecureSkipVerify:   true, // verified below, against the current pool
		GetClientCertificate: getCert,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if err := verifyServer(cs, cur().pool, verifyHost); err != nil {
				return err
			}
			if checkLeaf != nil {
				return checkLeaf(cs.PeerCertificates[0])
			}
			return nil
		},
	}
}

// verifyServer checks the server's chain against pool, and its name when
// verifyHost.
func verifyServer(cs tls.ConnectionState, pool *x509.CertPool, verifyHost bool) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: server sent no certificate")
	}
	opts := x509.VerifyOptions{Roots: pool, Intermediates: x509.NewCertPool(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	if verifyHost {
		opts.DNSName = cs.ServerName
	}
	for _, c := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err := cs.PeerCertificates[0].Verify(opts)
	return err
}

// StaticClientConfig is ClientConfig for a client with no certificate of
// its own (it identifies itself with a token): it verifies the server
// against the CA file read once.
func StaticClientConfig(caFile string, verifyHost bool) (*tls.Config, error) {
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("%w: tls-ca-file: %w", ErrInvalid, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%w: tls-ca-file %s: no PEM certificate in it", ErrInvalid, caFile)
	}
	m := &material{pool: pool}
	return clientConfig(func() *material { return m }, verifyHost, nil, func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		return &tls.Certificate{}, nil
	}), nil
}
