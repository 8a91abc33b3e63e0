package membership

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

// recordingTransport records the destinations it is asked to use.
type recordingTransport struct {
	mu    sync.Mutex
	dests []string
}

func (r *recordingTransport) rec(kind, addr string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.dests = append(r.dests, kind+" "+addr)
}

func (r *recordingTransport) FinalAdvertiseAddr(string, int) (net.IP, int, error) {
	return net.IPv4(127, 0, 0, 1), 7, nil
}
func (r *recordingTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	r.rec("packet", addr)
	return time.Time{}, nil
}
func (r *recordingTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	r.rec("packet", a.Name+"@"+a.Addr)
	return time.Time{}, nil
}
func (r *recordingTransport) PacketCh() <-chan *memberlist.Packet { return nil }
func (r *recordingTransport) DialTimeout(addr string, _ time.Duration) (net.Conn, error) {
	r.rec("stream", addr)
	return nil, errors.New("recording only")
}
func (r *recordingTransport) DialAddressTimeout(a memberlist.Address, _ time.Duration) (net.Conn, error) {
	r.rec("stream", a.Name+"@"+a.Addr)
	return nil, errors.New("recording only")
}
func (r *recordingTransport) StreamCh() <-chan net.Conn { return nil }
func (r *recordingTransport) Shutdown() error           { return nil }

func TestDialTransportRewritesEveryDestination(t *testing.T) {
	inner := &recordingTransport{}
	tr := &dialTransport{inner: inner, dial: func(addr string) string { return "proxy-for-" + addr }}
	tr.WriteTo(nil, "p:1")
	tr.WriteToAddress(nil, memberlist.Address{Addr: "p:2", Name: "n2"})
	tr.DialTimeout("p:3", time.Second)
	tr.DialAddressTimeout(memberlist.Address{Addr: "p:4", Name: "n4"}, time.Second)
	want := "packet proxy-for-p:1|packet n2@proxy-for-p:2|stream proxy-for-p:3|stream n4@proxy-for-p:4"
	if got := strings.Join(inner.dests, "|"); got != want {
		t.Fatalf("destinations\n got %s\nwant %s", got, want)
	}
	if ip, port, err := tr.FinalAdvertiseAddr("", 0); err != nil || !ip.Equal(net.IPv4(127, 0, 0, 1)) || port != 7 {
		t.Fatalf("advertise address not passed through: %v %d %v", ip, port, err)
	}
}

// linkProxy forwards one directed link's UDP packets and TCP streams to a
// target, and can be blocked (drop packets, refuse and cut streams).
type linkProxy struct {
	target  string
	udp     *net.UDPConn // clients send here
	up      *net.UDPConn // and we forward from here
	tcp     net.Listener
	blocked atomic.Bool
	packets atomic.Int64
	streams atomic.Int64

	mu         sync.Mutex
	conns      []net.Conn
	lastClient net.Addr

	wg sync.WaitGroup
}

func newLinkProxy(t *testing.T, target string) *linkProxy {
	t.Helper()
	p := &linkProxy{target: target}
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		u, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(l.Addr().(*net.TCPAddr).AddrPort()))
		if err != nil {
			l.Close()
			continue
		}
		p.tcp, p.udp = l, u
		break
	}
	if p.tcp == nil {
		t.Fatal("no port free for TCP and UDP")
	}
	up, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	p.up = up
	p.wg.Add(3)
	go func() { defer p.wg.Done(); p.forwardPackets() }()
	go func() { defer p.wg.Done(); p.returnPackets() }()
	go func() { defer p.wg.Done(); p.acceptStreams() }()
	t.Cleanup(p.close)
	return p
}

func (p *linkProxy) addr() string { return p.tcp.Addr().String() }

func (p *linkProxy) forwardPackets() {
	dst, _ := net.ResolveUDPAddr("udp", p.target)
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
		p.packets.Add(1)
		p.up.WriteTo(buf[:n], dst)
	}
}

// returnPackets relays replies sent to the proxy's upstream socket back to
// the last client. memberlist addresses acks to the sender's advertised
// address, so this rarely carries anything; a generic proxy needs it.
func (p *linkProxy) returnPackets() {
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
			p.udp.WriteTo(buf[:n], client)
		}
	}
}

func (p *linkProxy) acceptStreams() {
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
		p.streams.Add(1)
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); io.Copy(out, in); out.Close() }()
		go func() { defer p.wg.Done(); io.Copy(in, out); in.Close() }()
	}
}

// setBlocked blocks or unblocks the link; blocking cuts open streams.
func (p *linkProxy) setBlocked(b bool) {
	p.blocked.Store(b)
	if !b {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

func (p *linkProxy) close() {
	p.tcp.Close()
	p.udp.Close()
	p.up.Close()
	p.setBlocked(true)
	p.wg.Wait()
}

// TestDialAddressThroughProxies: three agents whose every directed link
// goes through its own proxy (each agent has its own DialAddress map, as
// the Jepsen harness does) converge; every link carries traffic and no
// destination escapes the maps; blocking all links of one node makes the
// others see it dead and it them; unblocking heals.
func TestDialAddressThroughProxies(t *testing.T) {
	_, log := newLogSink(t)
	ids := []string{"a", "b", "c"}
	addrs := map[string]string{}
	for _, id := range ids {
		addrs[id] = freeAddr(t)
	}
	links := map[string]*linkProxy{} // "a>b" -> proxy for a's traffic to b
	var unmappedMu sync.Mutex
	var unmapped []string
	agents := map[string]*Agent{}
	for i, id := range ids {
		routes := map[string]string{}
		for _, peer := range ids {
			if peer != id {
				p := newLinkProxy(t, addrs[peer])
				links[id+">"+peer] = p
				routes[addrs[peer]] = p.addr()
			}
		}
		cfg := testConfig(id, addrs[id])
		cfg.SuspicionMult = 2
		cfg.Join = []string{addrs[ids[(i+1)%len(ids)]]} // a->b, b->c, c->a
		cfg.DialAddress = func(addr string) string {
			if to, ok := routes[addr]; ok {
				return to
			}
			unmappedMu.Lock()
			unmapped = append(unmapped, id+" -> "+addr)
			unmappedMu.Unlock()
			return addr
		}
		a, err := New(cfg, newFakeRaft(false), fakeHooks(), log)
		if err != nil {
			t.Fatal(err)
		}
		agents[id] = a
		t.Cleanup(func() { a.Close() })
	}
	statusOf := func(observer, id string) Status {
		m, _ := agents[observer].Lookup(id)
		return m.Status
	}
	waitFor(t, 15*time.Second, "all alive and every link used", func() error {
		for _, o := range ids {
			if err := wantStatuses(agents[o], ids, StatusAlive); err != nil {
				return fmt.Errorf("%s: %w", o, err)
			}
		}
		for name, p := range links {
			if p.packets.Load() == 0 {
				return fmt.Errorf("link %s carried no packet", name)
			}
		}
		return nil
	})
	var streams int64
	for _, p := range links {
		streams += p.streams.Load()
	}
	if streams == 0 {
		t.Error("no stream (join / push-pull) went through a proxy")
	}

	for _, name := range []string{"a>c", "b>c", "c>a", "c>b"} {
		links[name].setBlocked(true)
	}
	waitFor(t, 15*time.Second, "c cut off", func() error {
		for _, pair := range [][2]string{{"a", "c"}, {"b", "c"}, {"c", "a"}, {"c", "b"}} {
			if st := statusOf(pair[0], pair[1]); st != StatusDead {
				return fmt.Errorf("%s sees %s %v", pair[0], pair[1], st)
			}
		}
		if st := statusOf("a", "b"); st != StatusAlive {
			return fmt.Errorf("a sees b %v", st)
		}
		return nil
	})

	for _, name := range []string{"a>c", "b>c", "c>a", "c>b"} {
		links[name].setBlocked(false)
	}
	waitFor(t, 15*time.Second, "healed", func() error {
		for _, o := range ids {
			if err := wantStatuses(agents[o], ids, StatusAlive); err != nil {
				return fmt.Errorf("%s: %w", o, err)
			}
		}
		return nil
	})
	unmappedMu.Lock()
	defer unmappedMu.Unlock()
	sort.Strings(unmapped)
	if len(unmapped) > 0 {
		t.Errorf("destinations outside the DialAddress maps: %v", unmapped)
	}
}
