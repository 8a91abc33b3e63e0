package membership

import (
	"net"
	"time"

	"github.com/hashicorp/memberlist"
)

// dialTransport wraps a memberlist transport and sends every outgoing
// packet and stream to dial(addr) instead of the peer's advertised addr.
//
// Why a transport and not a resolver: memberlist learns peers' addresses
// from gossip (alive messages carry the advertised IP and port), and acks
// are addressed to the SourceAddr inside a ping, not to the packet's
// source. Only the transport sees every destination, whatever its origin,
// so rewriting there routes all traffic of a directed link through the
// harness's proxy for that link. Incoming traffic is untouched: it arrives
// from the proxy, and memberlist never answers to a packet's source when
// the message names the sender.
type dialTransport struct {
	inner memberlist.NodeAwareTransport
	dial  func(addr string) string
}

var _ memberlist.NodeAwareTransport = (*dialTransport)(nil)

func (t *dialTransport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	return t.inner.FinalAdvertiseAddr(ip, port)
}

func (t *dialTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.inner.WriteTo(b, t.dial(addr))
}

func (t *dialTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	a.Addr = t.dial(a.Addr)
	return t.inner.WriteToAddress(b, a)
}

func (t *dialTransport) PacketCh() <-chan *memberlist.Packet { return t.inner.PacketCh() }

func (t *dialTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.inner.DialTimeout(t.dial(addr), timeout)
}

func (t *dialTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	a.Addr = t.dial(a.Addr)
	return t.inner.DialAddressTimeout(a, timeout)
}

func (t *dialTransport) StreamCh() <-chan net.Conn { return t.inner.StreamCh() }

func (t *dialTransport) Shutdown() error { return t.inner.Shutdown() }
