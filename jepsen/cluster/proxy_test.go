package cluster

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// echo serves one line back per line on TCP and echoes UDP packets.
func echo(t *testing.T) string {
	t.Helper()
	l, u, err := listenBoth()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close(); u.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					s, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(s))
				}
			}()
		}
	}()
	return l.Addr().String()
}

func roundTrip(addr string) (time.Duration, error) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	start := time.Now()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return 0, err
	}
	_, err = bufio.NewReader(c).ReadString('\n')
	return time.Since(start), err
}

func TestProxyForwardsBlocksAndDelays(t *testing.T) {
	p, err := NewProxy("a>b/raft", echo(t), true)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := roundTrip(p.Addr()); err != nil {
		t.Fatalf("open link: %v", err)
	}
	// An open stream is cut when the link is blocked, and new ones fail.
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p.SetBlocked(true)
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Fatal("stream survived the block")
	}
	if _, err := roundTrip(p.Addr()); err == nil {
		t.Fatal("blocked link carried a round trip")
	}
	p.SetBlocked(false)
	p.SetDelay(150 * time.Millisecond)
	d, err := roundTrip(p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	// Both directions are delayed; a lower bound cannot fail on a slow machine.
	if d < 300*time.Millisecond {
		t.Fatalf("delayed round trip took only %s", d)
	}
}
