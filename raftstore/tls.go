package raftstore

import (
	"crypto/tls"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// TransportTLS runs the Raft transport over mutual TLS. Both configs come
// from the node's reloading TLS material (tlsconfig), so a rotated
// certificate is used from the next connection on; established
// connections (raft pools them) continue on what they negotiated.
type TransportTLS struct {
	// Server must require and verify a client certificate; Client must
	// present one and verify the server's.
	Server, Client *tls.Config
	// Handshake, if set, runs on every connection after the TLS handshake
	// (both sides, in the order accept/dial): the seam for checks beyond
	// the certificate, such as a cluster id. An error closes the
	// connection.
	Handshake func(conn *tls.Conn, accepted bool) error
}

// tlsStreamLayer wraps the TCP stream layer: accepted connections are TLS
// servers, dialled ones TLS clients.
type tlsStreamLayer struct {
	raft.StreamLayer
	cfg TransportTLS
}

func newTLSStreamLayer(inner raft.StreamLayer, cfg TransportTLS) raft.StreamLayer {
	return &tlsStreamLayer{StreamLayer: inner, cfg: cfg}
}

// Accept returns the next connection without handshaking it: raft's accept
// loop must not wait on one slow or hostile dialler. The handshake runs on
// the connection's first read (in raft's per-connection goroutine); a
// failed one is a read error, and raft closes the connection.
func (t *tlsStreamLayer) Accept() (net.Conn, error) {
	c, err := t.StreamLayer.Accept()
	if err != nil {
		return nil, err
	}
	tc := tls.Server(c, t.cfg.Server)
	if t.cfg.Handshake == nil {
		return tc, nil
	}
	return &hookedConn{Conn: tc, hook: func() error { return t.cfg.Handshake(tc, true) }}, nil
}

// Dial connects and completes the handshake within timeout, so a peer that
// refuses this node's certificate fails the dial, not a later RPC.
func (t *tlsStreamLayer) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	c, err := t.StreamLayer.Dial(address, timeout)
	if err != nil {
		return nil, err
	}
	tc := tls.Client(c, t.cfg.Client)
	_ = tc.SetDeadline(wall.Now().Add(timeout))
	if err := tc.Handshake(); err != nil {
		tc.Close()
		return nil, err
	}
	if t.cfg.Handshake != nil {
		if err := t.cfg.Handshake(tc, false); err != nil {
			tc.Close()
			return nil, err
		}
	}
	_ = tc.SetDeadline(time.Time{})
	return tc, nil
}

// hookedConn runs hook once, after the handshake, before the first read.
type hookedConn struct {
	net.Conn
	hook func() error
	done bool
	err  error
}

func (h *hookedConn) Read(p []byte) (int, error) {
	if !h.done {
		h.done = true
		if tc, ok := h.Conn.(*tls.Conn); ok {
			h.err = tc.Handshake()
		}
		if h.err == nil {
			h.err = h.hook()
		}
	}
	if h.err != nil {
		return 0, h.err
	}
	return h.Conn.Read(p)
}
