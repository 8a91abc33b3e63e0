package client

import (
	"crypto/tls"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/metad/metad/auth"
	"github.com/metad/metad/tlsconfig"
)

// TLS says how a client reaches a cluster that serves TLS (README
// "Securing a cluster").
type TLS struct {
	// CAFile is the PEM CA bundle the servers' certificates chain to.
	// Required.
	CAFile string
	// CertFile and KeyFile are the client's certificate (its role is in
	// the certificate: metad tls cert create --role client). Optional
	// when a Token identifies the client instead.
	CertFile, KeyFile string
	// SkipHostnameCheck accepts a server whose certificate does not name
	// the dialled address (the chain is still verified). Default false.
	SkipHostnameCheck bool
	// ReloadInterval is how often the files are checked for changes, so a
	// long-lived client follows a rotation without a restart. Default 10s.
	ReloadInterval time.Duration
}

// dialCredentials are the transport and per-call credentials of cfg, with
// every handshake reported to seen (handshake.go), and the watcher of the
// TLS files (nil without a client certificate).
func (cfg Config) dialCredentials(seen *handshakes) ([]grpc.DialOption, *tlsconfig.Reloader, error) {
	var opts []grpc.DialOption
	var watch *tlsconfig.Reloader
	if cfg.TLS == nil {
		opts = append(opts, seen.dialOptions(insecure.NewCredentials(), nil)...)
	} else {
		tc, r, err := cfg.TLS.config()
		if err != nil {
			return nil, nil, err
		}
		watch = r
		opts = append(opts, seen.dialOptions(credentials.NewTLS(tc), cfg.TLS)...)
	}
	if cfg.Token != "" {
		// Without TLS the token travels in clear text: allowed only so that
		// a loopback test setup works, as the server then is open anyway.
		opts = append(opts, grpc.WithPerRPCCredentials(auth.BearerCredentials{Token: cfg.Token, AllowInsecure: cfg.TLS == nil}))
	}
	return opts, watch, nil
}

func (t *TLS) config() (*tls.Config, *tlsconfig.Reloader, error) {
	if t.CAFile == "" {
		return nil, nil, errors.New("client: TLS.CAFile (--tls-ca-file) is required with TLS")
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, nil, errors.New("client: TLS.CertFile and TLS.KeyFile (--tls-cert-file, --tls-key-file) go together")
	}
	if t.CertFile == "" {
		tc, err := tlsconfig.StaticClientConfig(t.CAFile, !t.SkipHostnameCheck)
		return tc, nil, err
	}
	r, err := tlsconfig.New(tlsconfig.Config{CertFile: t.CertFile, KeyFile: t.KeyFile, CAFile: t.CAFile, PollInterval: t.ReloadInterval}, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("client: %w", err)
	}
	return r.ClientConfig(!t.SkipHostnameCheck, nil), r, nil
}
