package cluster

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/metad/metad/clock"
)

// Proxy carries one directed link (node i dialling node j) of one
// protocol: TCP streams, and for gossip also UDP packets on the same port.
// Blocking it refuses new streams, cuts open ones and drops packets — a
// partition without root or iptables. Delaying it holds every chunk for a
// while before forwarding, in order — a slow network.
type Proxy struct {
	name   string
	target string
	tcp    net.Listener
	udp    *net.UDPConn // clients send here (gossip only)
	up     *net.UDPConn // and packets leave from here
	// Controls, read on every accept, chunk and packet.
	blocked atomic.Bool
	delay   atomic.Int64 // nanoseconds
	// Guarded by mu: open streams (to cut them) and the last UDP sender.
	mu         sync.Mutex
	conns      map[net.Conn]struct{}
	lastClient net.Addr
	closed     bool
	// wg joins every goroutine the proxy starts.
	wg sync.WaitGroup
}

// NewProxy listens on a fresh loopback port (TCP, and UDP on the same port
// when withUDP) and forwards to target.
func NewProxy(name, target string, withUDP bool) (*Proxy, error) {
	p := &Proxy{name: name, target: target, conns: map[net.Conn]struct{}{}}
	var err error
	if withUDP {
		p.tcp, p.udp, err = listenBoth()
		if err == nil {
			p.up, err = net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		}
	} else {
		p.tcp, err = net.Listen("tcp", "127.0.0.1:0")
	}
	if err != nil {
		p.Close()
		return nil, err
	}
	p.goRun(p.acceptStreams)
	if withUDP {
		p.goRun(p.forwardPackets)
		p.goRun(p.returnPackets)
	}
	return p, nil
}

// listenBoth finds a port free for TCP and UDP at once (gossip uses both).
func listenBoth() (net.Listener, *net.UDPConn, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, err
		}
		u, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(l.Addr().(*net.TCPAddr).AddrPort()))
		if err == nil {
			return l, u, nil
		}
		l.Close()
	}
	return nil, nil, errors.New("no port free for both TCP and UDP")
}

func (p *Proxy) goRun(f func()) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		f()
	}()
}

// Addr is where the dialling node is told to connect.
func (p *Proxy) Addr() string { return p.tcp.Addr().String() }

// SetBlocked blocks or unblocks the link; blocking cuts open streams.
func (p *Proxy) SetBlocked(b bool) {
	p.blocked.Store(b)
	if b {
		p.cutAll()
	}
}

// SetDelay delays every chunk and packet by d (0: none).
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

func (p *Proxy) cutAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c)
}

func (p *Proxy) acceptStreams() {
	for {
		in, err := p.tcp.Accept()
		if err != nil {
			return
		}
		if p.blocked.Load() {
			in.Close()
			continue
		}
		out, err := net.DialTimeout("tcp", p.target, time.Second)
		if err != nil {
			in.Close()
			continue
		}
		if !p.track(in) || !p.track(out) {
			in.Close()
			out.Close()
			return
		}
		p.goRun(func() { p.pipe(out, in) })
		p.goRun(func() { p.pipe(in, out) })
	}
}

// chunk is bytes read at a time, to be written no earlier than due.
type chunk struct {
	data []byte
	due  time.Time
}

// pipe copies src to dst, each chunk held for the link's delay. A reader
// and a writer goroutine share a bounded queue, so a delay does not limit
// throughput to one chunk per delay.
func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.untrack(src)
	defer dst.Close()
	defer src.Close()
	q := make(chan chunk, 256)
	p.goRun(func() {
		defer close(q)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				q <- chunk{data: buf[:n], due: clock.Real.Now().Add(time.Duration(p.delay.Load()))}
			}
			if err != nil {
				return
			}
		}
	})
	for c := range q {
		if d := c.due.Sub(clock.Real.Now()); d > 0 {
			<-clock.After(clock.Real, d) // the delay line: each chunk leaves at its due time
		}
		if p.blocked.Load() {
			break
		}
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	// Unblock the reader (it may be waiting to queue) and drain.
	src.Close()
	for range q {
	}
}

func (p *Proxy) forwardPackets() {
	dst, err := net.ResolveUDPAddr("udp", p.target)
	if err != nil {
		return
	}
	buf := make([]byte, 65536)
	for {
		n, from, err := p.udp.ReadFrom(buf)
		if err != nil {
			return
		}
		if p.blocked.Load() {
			continue
		}
		p.mu.Lock()
		p.lastClient = from
		p.mu.Unlock()
		data := append([]byte(nil), buf[:n]...)
		if d := time.Duration(p.delay.Load()); d > 0 {
			due := clock.After(clock.Real, d)
			p.goRun(func() { <-due; _, _ = p.up.WriteTo(data, dst) })
			continue
		}
		_, _ = p.up.WriteTo(data, dst)
	}
}

// returnPackets relays replies to the proxy's upstream socket back to the
// last sender; memberlist mostly answers the advertised address instead.
func (p *Proxy) returnPackets() {
	buf := make([]byte, 65536)
	for {
		n, _, err := p.up.ReadFrom(buf)
		if err != nil {
			return
		}
		p.mu.Lock()
		client := p.lastClient
		p.mu.Unlock()
		if client != nil && !p.blocked.Load() {
			_, _ = p.udp.WriteTo(buf[:n], client)
		}
	}
}

// Close stops the proxy and waits for its goroutines.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	if p.tcp != nil {
		p.tcp.Close()
	}
	if p.udp != nil {
		p.udp.Close()
	}
	if p.up != nil {
		p.up.Close()
	}
	p.cutAll()
	p.wg.Wait()
}
