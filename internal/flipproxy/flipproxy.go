// Package flipproxy is an HTTP proxy for tests that sits in front of an S3
// server and, while switched on, flips bytes of one object's GET response
// bodies: it makes a version's bytes look rewritten in place, for every
// client that goes through it, without touching what the server stores.
//
// Requests pass through unchanged, the Host header included, so SigV4
// signatures made for the proxy's address still verify at the server.
// Offsets are object offsets: a ranged GET (206 with Content-Range) is
// flipped only where its range covers one, so a read of another slice of
// the same object is untouched.
package flipproxy

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/metad/metad/internal/ports"
)

// Proxy is one running proxy.
type Proxy struct {
	ln  net.Listener
	srv *http.Server

	mu      sync.Mutex
	path    string  // URL path of the object whose bodies are flipped; "" when off
	offsets []int64 // object offsets of the bytes flipped
	flipped int     // bytes flipped so far
}

// Start runs a proxy in front of target (an http:// base URL) on a free
// loopback port and stops it when the test ends.
func Start(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// New runs a proxy in front of target on a free loopback port; the caller
// closes it.
func New(target string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	addr, err := ports.Free(20000, 32000)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0) // a stopped server is a test's point, not news
	rp.ModifyResponse = p.modify
	p.srv = &http.Server{Handler: rp}
	go func() { _ = p.srv.Serve(ln) }() // ends with Close
	return p, nil
}

// Endpoint is the proxy's base URL, to give clients instead of the server's.
func (p *Proxy) Endpoint() string { return "http://" + p.ln.Addr().String() }

// Flip switches the proxy on for the object at URL path (for a path-style
// S3 endpoint, "/BUCKET/KEY" with the store's prefix in KEY): from now on
// each byte at one of offsets in a GET body of it is inverted. It replaces
// what an earlier Flip asked for.
func (p *Proxy) Flip(path string, offsets ...int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.path, p.offsets = path, append([]int64(nil), offsets...)
}

// Off passes every body through unchanged again.
func (p *Proxy) Off() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.path, p.offsets = "", nil
}

// Flipped is how many bytes the proxy has inverted so far.
func (p *Proxy) Flipped() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.flipped
}

// Close stops the proxy.
func (p *Proxy) Close() { _ = p.srv.Close() }

func (p *Proxy) modify(resp *http.Response) error {
	req := resp.Request
	if req.Method != http.MethodGet || (resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusPartialContent) {
		return nil
	}
	p.mu.Lock()
	on := p.path != "" && req.URL.Path == p.path
	offsets := p.offsets
	p.mu.Unlock()
	if !on {
		return nil
	}
	start := int64(0)
	if resp.StatusCode == http.StatusPartialContent {
		var ok bool
		if start, ok = rangeStart(resp.Header.Get("Content-Range")); !ok {
			return fmt.Errorf("flipproxy: 206 without a usable Content-Range %q", resp.Header.Get("Content-Range"))
		}
	}
	resp.Body = &flipper{body: resp.Body, pos: start, offsets: offsets, p: p}
	return nil
}

// rangeStart parses the first offset of "bytes A-B/TOTAL".
func rangeStart(cr string) (int64, bool) {
	rest, ok := strings.CutPrefix(cr, "bytes ")
	if !ok {
		return 0, false
	}
	a, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(a, 10, 64)
	return n, err == nil
}

// flipper inverts the bytes at the given object offsets as the body passes.
type flipper struct {
	body    io.ReadCloser
	pos     int64 // object offset of the next byte read
	offsets []int64
	p       *Proxy
}

func (f *flipper) Read(b []byte) (int, error) {
	n, err := f.body.Read(b)
	for _, off := range f.offsets {
		if off >= f.pos && off < f.pos+int64(n) {
			b[off-f.pos] ^= 0xff
			f.p.mu.Lock()
			f.p.flipped++
			f.p.mu.Unlock()
		}
	}
	f.pos += int64(n)
	return n, err
}

func (f *flipper) Close() error { return f.body.Close() }
