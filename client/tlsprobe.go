package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"reflect"
	"time"

	"github.com/metad/metad/clock"
)

// ErrTLSHandshake matches a *HandshakeError: the client and a server could
// not agree on TLS. It is not ErrUnavailable: the same settings fail the
// same way on every retry, until one side's certificates or flags change.
var ErrTLSHandshake = errors.New("metad: TLS handshake failed")

// HandshakeError says why the TLS handshake with Addr failed, and which
// setting to look at.
type HandshakeError struct {
	Addr  string
	Cause string // what went wrong, e.g. "the server's certificate is signed by an unknown authority"
	Hint  string // the setting to check, e.g. "check --tls-ca-file"
	Err   error  // the handshake's own error, if any
}

func (e *HandshakeError) Error() string {
	return fmt.Sprintf("TLS handshake with %s failed: %s — %s", e.Addr, e.Cause, e.Hint)
}

func (e *HandshakeError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrTLSHandshake) true.
func (e *HandshakeError) Is(target error) bool { return target == ErrTLSHandshake }

// TLS alert numbers (RFC 8446 §6) a server sends when it refuses the
// client's certificate.
const (
	alertBadCertificate      = 42
	alertCertificateExpired  = 45
	alertUnknownCA           = 48
	alertCertificateRequired = 116
)

// DiagnoseTLS finds out whether a connection failure at addr is a TLS
// mismatch: it handshakes once with the settings t (nil: the client dials
// in clear text, and it checks whether the server speaks TLS). It returns a
// *HandshakeError naming the cause, or nil when the handshake succeeds or
// fails for another reason (nobody listening, a timeout): gRPC reports
// every such failure as UNAVAILABLE, and this tells the ones no retry can
// mend. Flag names in the hints are the metad CLI's.
func DiagnoseTLS(ctx context.Context, addr string, t *TLS) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	} else {
		_ = conn.SetDeadline(clock.Real.Now().Add(5 * time.Second))
	}
	host, _, _ := net.SplitHostPort(addr)
	if t == nil {
		return diagnosePlaintext(ctx, conn, addr, host)
	}
	tc, _, err := t.config()
	if err != nil {
		return nil // New reports bad TLS settings before any call
	}
	tc = tc.Clone()
	tc.ServerName, tc.NextProtos = host, []string{"h2"}
	tconn := tls.Client(conn, tc)
	if err := tconn.HandshakeContext(ctx); err != nil {
		return classifyHandshake(addr, t, err)
	}
	// With TLS 1.3 the server checks the client's certificate after the
	// client's side of the handshake is done: its refusal is the first
	// thing read. A server that accepted sends its HTTP/2 settings.
	if _, err := tconn.Read(make([]byte, 1)); err != nil {
		return classifyHandshake(addr, t, err)
	}
	return nil
}

// diagnosePlaintext: a clear-text client failed; if the server answers a
// TLS handshake, that is why.
func diagnosePlaintext(ctx context.Context, conn net.Conn, addr, host string) error {
	tconn := tls.Client(conn, &tls.Config{ServerName: host, NextProtos: []string{"h2"}, InsecureSkipVerify: true}) //nolint:gosec // only asks whether the server speaks TLS; nothing is sent over it
	err := tconn.HandshakeContext(ctx)
	if _, alerted := remoteAlert(err); err != nil && !alerted {
		return nil // not TLS either (or gone): not a TLS mismatch
	}
	return &HandshakeError{Addr: addr, Cause: "the server speaks TLS and this client dialled in clear text",
		Hint: "give --tls-ca-file (and --tls-cert-file/--tls-key-file or --token)"}
}

// classifyHandshake names the cause of a failed handshake (or of the
// server's refusal read after it), or returns nil for a failure that is
// not TLS's (a timeout, a reset).
func classifyHandshake(addr string, t *TLS, err error) error {
	he := &HandshakeError{Addr: addr, Err: err}
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	var record tls.RecordHeaderError
	code, alerted := remoteAlert(err)
	switch {
	case errors.As(err, &unknown):
		he.Cause, he.Hint = "the server's certificate is signed by an authority not in the CA bundle", "check --tls-ca-file "+t.CAFile
	case errors.As(err, &invalid) && invalid.Reason == x509.Expired:
		he.Cause, he.Hint = "the server's certificate has expired or is not valid yet ("+invalid.Detail+")", "renew the server's --tls-cert-file"
	case errors.As(err, &host):
		he.Cause, he.Hint = "the server's certificate does not name "+host.Host, "dial an address the certificate names (--addr)"
	case errors.As(err, &invalid):
		he.Cause, he.Hint = "the server's certificate is not valid for a server: "+invalid.Error(), "check the server's --tls-cert-file"
	case errors.As(err, &record):
		he.Cause, he.Hint = "the server does not speak TLS", "drop --tls-ca-file, or enable TLS on the server"
	case alerted && code == alertCertificateExpired:
		he.Cause, he.Hint = "the server refused this client's certificate: it has expired", "renew --tls-cert-file "+t.CertFile
	case alerted && code == alertUnknownCA:
		he.Cause, he.Hint = "the server refused this client's certificate: signed by an authority the server does not trust", "check --tls-cert-file "+t.CertFile
	case alerted && code == alertCertificateRequired:
		he.Cause, he.Hint = "the server requires a client certificate", "give --tls-cert-file and --tls-key-file, or --token"
	case alerted && code == alertBadCertificate:
		he.Cause, he.Hint = "the server refused this client's certificate", "check --tls-cert-file "+t.CertFile+" (its role, its dates)"
	case alerted:
		he.Cause, he.Hint = "the server sent "+err.Error(), "check the --tls-* flags"
	default:
		return nil
	}
	return he
}

// remoteAlert returns the number of the TLS alert the server sent, if err
// is one. crypto/tls reports it as a *net.OpError "remote error" around an
// unexported uint8 type; the number is the wire protocol's, so it is read
// rather than the message.
func remoteAlert(err error) (uint8, bool) {
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "remote error" || op.Err == nil {
		return 0, false
	}
	if v := reflect.ValueOf(op.Err); v.Kind() == reflect.Uint8 {
		return uint8(v.Uint()), true
	}
	return 0, false
}
