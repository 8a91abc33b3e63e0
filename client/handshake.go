package client

import (
	"context"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
)

// A failed TLS handshake reaches a gRPC caller as UNAVAILABLE, the code of
// every failed connection, which Call retries until the deadline. No retry
// mends a certificate from a foreign CA, an expired one, or TLS on one side
// only, so the client watches its own connections: handshakes records the
// last handshake failure of each member, and Call returns it, definite and
// not retryable, when a call finds no member to send to and every member's
// last connection failed that way. A member merely down keeps the call
// retryable, as it may come back.

// handshakes holds, per configured member address, the last TLS handshake
// failure of a connection to it.
type handshakes struct {
	addrs []string // the configured members, as dialled

	// mu guards failed.
	mu sync.Mutex
	// failed is keyed by address. Invariant: an entry is deleted once a
	// connection to the address has read the server's first bytes.
	failed map[string]*HandshakeError
}

func newHandshakes(addrs []string) *handshakes {
	return &handshakes{addrs: addrs, failed: map[string]*HandshakeError{}}
}

func (h *handshakes) fail(addr string, he *HandshakeError) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.failed[addr] = he
}

func (h *handshakes) succeed(addr string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.failed, addr)
}

// everywhere returns the first member's handshake failure when every
// configured member's last connection failed its handshake, else nil.
func (h *handshakes) everywhere() *HandshakeError {
	h.mu.Lock()
	defer h.mu.Unlock()
	var first *HandshakeError
	for _, a := range h.addrs {
		he, ok := h.failed[a]
		if !ok {
			return nil
		}
		if first == nil {
			first = he
		}
	}
	return first
}

// definite replaces a call's UNAVAILABLE by the handshake failure that
// caused it, if any (see above). A nil h (a Client not made by New) knows
// of none.
func (h *handshakes) definite(err error) error {
	if h == nil {
		return err
	}
	e, ok := AsError(err)
	if !ok || e.Code != codes.Unavailable || e.Reason != ReasonUnavailable {
		return err
	}
	if he := h.everywhere(); he != nil {
		return he
	}
	return err
}

// dialOptions make every connection of the client report to h: a dialer
// that remembers the address dialled, and creds wrapped to classify what
// their handshake, or the server's first answer, says.
func (h *handshakes) dialOptions(creds credentials.TransportCredentials, t *TLS) []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			conn, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			return &dialledConn{Conn: conn, addr: addr}, nil
		}),
		grpc.WithTransportCredentials(&watchedCreds{TransportCredentials: creds, tls: t, seen: h}),
	}
}

// dialledConn is a connection that knows the address it was dialled at
// (RemoteAddr is the resolved one).
type dialledConn struct {
	net.Conn
	addr string
}

// watchedCreds are the client's transport credentials, reporting each
// handshake's outcome to seen.
type watchedCreds struct {
	credentials.TransportCredentials
	tls  *TLS // nil: clear text
	seen *handshakes
}

func (w *watchedCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	addr := raw.RemoteAddr().String()
	if dc, ok := raw.(*dialledConn); ok {
		addr = dc.addr
	}
	conn, info, err := w.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil {
		if he := w.classify(addr, err); he != nil {
			return nil, nil, he
		}
		return nil, nil, err
	}
	return &firstRead{Conn: conn, check: func(n int, err error) error { return w.firstRead(addr, n, err) }}, info, nil
}

func (w *watchedCreds) Clone() credentials.TransportCredentials {
	return &watchedCreds{TransportCredentials: w.TransportCredentials.Clone(), tls: w.tls, seen: w.seen}
}

// classify records err if it is a TLS mismatch.
func (w *watchedCreds) classify(addr string, err error) *HandshakeError {
	if w.tls == nil {
		return nil
	}
	var he *HandshakeError
	if !errors.As(classifyHandshake(addr, w.tls, err), &he) {
		return nil
	}
	w.seen.fail(addr, he)
	return he
}

// firstRead judges the first read of a connection whose handshake passed.
// With TLS 1.3 the server refuses the client's certificate after the
// client's side of the handshake: the refusal is what is read first,
// unless the connection was reset before it could be. A clear-text client
// whose server speaks TLS reads nothing but the close. So a connection
// that ends before the server said anything asks the server, once, with
// a handshake of its own (DiagnoseTLS); a healthy connection never does.
func (w *watchedCreds) firstRead(addr string, n int, err error) error {
	if n > 0 || err == nil {
		w.seen.succeed(addr)
		return err
	}
	if he := w.classify(addr, err); he != nil {
		return he
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var he *HandshakeError
	if errors.As(DiagnoseTLS(ctx, addr, w.tls), &he) {
		w.seen.fail(addr, he)
		return he
	}
	return err
}

// firstRead is a connection that hands its first read's outcome to check,
// which may replace the error.
type firstRead struct {
	net.Conn
	done  atomic.Bool
	check func(n int, err error) error
}

func (c *firstRead) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if !c.done.Swap(true) {
		err = c.check(n, err)
	}
	return n, err
}
