package node

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/metad/metad/clock"
)

// notifier speaks systemd's notify protocol (sd_notify(3)): one datagram
// per message, "KEY=VALUE" lines, to the unix socket systemd names in
// $NOTIFY_SOCKET ("@name" is the abstract namespace, which package net
// maps for us). With Type=notify, systemd considers the unit started at
// READY=1; metad sends it when the node first serves (a leader is known
// and this node has caught up, as /readyz says), and STOPPING=1 when a
// graceful shutdown begins. An empty socket disables it.
type notifier struct {
	socket string
	log    *slog.Logger

	mu       sync.Mutex // guards ready and stopping, and orders the sends
	ready    bool
	stopping bool
}

// send writes one message; failures are logged, never fatal: the service
// manager is a spectator.
func (n *notifier) send(state string) {
	if n.socket == "" {
		return
	}
	if err := sdNotify(n.socket, state); err != nil {
		n.log.Warn("sd_notify failed", "socket", n.socket, "err", err)
	}
}

// sdNotify sends state to the notify socket.
func sdNotify(socket, state string) error {
	conn, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: socket, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetWriteDeadline(clock.Real.Now().Add(time.Second))
	_, err = conn.Write([]byte(state))
	return err
}

// status reports progress while not ready yet (shown by systemctl status).
func (n *notifier) status(s string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.stopping {
		n.send("STATUS=" + s)
	}
}

// markReady sends READY=1 once, unless stopping began.
func (n *notifier) markReady(s string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ready || n.stopping {
		return
	}
	n.ready = true
	n.send("READY=1\nSTATUS=" + s)
}

// markStopping sends STOPPING=1 once; READY=1 is never sent after it.
func (n *notifier) markStopping() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopping {
		return
	}
	n.stopping = true
	n.send("STOPPING=1\nSTATUS=shutting down")
}

// announceReady waits until the node serves, then tells the service
// manager, once. It polls the health verdict every interval until ctx ends.
func (n *Server) announceReady(ctx context.Context, interval time.Duration) {
	waiting := ""
	clock.Every(ctx, serverClock, interval, func() bool {
		if n.api.Serving() {
			id, _ := n.store.Leader()
			n.notify.markReady(fmt.Sprintf("serving; leader %s", id))
			return false
		}
		if s := n.waitingFor(); s != waiting {
			n.notify.status(s)
			waiting = s
		}
		return true
	})
}

// waitingFor says what keeps the node from serving.
func (n *Server) waitingFor() string {
	st := n.store.Status()
	if st.LeaderID == "" {
		return "waiting for a leader"
	}
	return fmt.Sprintf("catching up with leader %s (applied %d of %d)", st.LeaderID, st.AppliedIndex, st.CommitIndex)
}
