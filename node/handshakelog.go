package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"

	"google.golang.org/grpc/credentials"

	"github.com/metad/metad/auth"
)

// loggedCreds are the gRPC server's TLS credentials with every refused
// handshake logged at WARN (caller's address and cause): gRPC itself
// drops the error, so a client with a certificate from a foreign CA, an
// expired one, or no TLS at all would fail with nothing in the server's
// log.
type loggedCreds struct {
	credentials.TransportCredentials
	log   *slog.Logger
	limit *auth.RefusalLimiter
}

func newLoggedCreds(c credentials.TransportCredentials, log *slog.Logger) credentials.TransportCredentials {
	return &loggedCreds{TransportCredentials: c, log: log, limit: &auth.RefusalLimiter{}}
}

func (c *loggedCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := c.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		c.refused(raw.RemoteAddr(), err)
	}
	return conn, info, err
}

// Clone keeps the logging (gRPC clones credentials it is given).
func (c *loggedCreds) Clone() credentials.TransportCredentials {
	return &loggedCreds{TransportCredentials: c.TransportCredentials.Clone(), log: c.log, limit: c.limit}
}

func (c *loggedCreds) refused(remote net.Addr, err error) {
	why := handshakeRefusal(err)
	if why == "" {
		// Closed before saying anything: a TCP probe (a load balancer's,
		// Kubernetes' tcpSocket), not a caller with the wrong settings.
		c.log.Debug("TLS handshake not begun: the caller closed the connection", "remote", remote.String())
		return
	}
	ok, suppressed := c.limit.Allow(serverClock.Now())
	if !ok {
		return
	}
	c.log.LogAttrs(context.Background(), slog.LevelWarn, "TLS handshake refused",
		slog.String("remote", remote.String()), slog.String("why", why), slog.String("error", err.Error()),
		slog.Int("suppressed", suppressed))
}

// handshakeRefusal names what was wrong with a refused handshake, or ""
// for a connection closed before any TLS record (nothing to report).
func handshakeRefusal(err error) string {
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var record tls.RecordHeaderError
	var op *net.OpError
	switch {
	case errors.Is(err, io.EOF):
		return ""
	case errors.As(err, &unknown):
		return "the client's certificate is signed by an authority not in --tls-ca-file"
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		return "the client's certificate has expired (or is not valid yet)"
	case errors.As(err, &invalid):
		return "the client's certificate is not valid here: " + invalid.Error()
	case errors.As(err, &record):
		return "the client does not speak TLS (a clear-text client?)"
	case errors.As(err, &op) && op.Op == "remote error":
		// The client's alert: it refused this server's certificate.
		return "the client refused this server's certificate (is this server's CA in the client's --tls-ca-file?)"
	}
	return "the handshake failed"
}
