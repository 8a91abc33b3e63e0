package cluster

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// S3Proxy passes S3 requests through to weed mini unchanged (the Host
// header too, so SigV4 signatures still verify), except reads of a hidden
// key: GET and HEAD of it answer 404 NoSuchVersion (NoSuchKey without a
// versionId), as S3 does for a version that is gone; and GETs of a
// corrupted key, whose body comes back with its middle byte flipped (bytes
// rotting on the way, or in the store, for every version of the key). Every
// metad server and the harness's own store client use it, so a hidden or
// corrupted object is so for everyone at once and back for everyone at once.
type S3Proxy struct {
	ln     net.Listener
	srv    *http.Server
	prefix string // "/bucket/prefix/"
	mu     sync.Mutex
	// hidden and corrupt are object keys (without the store's prefix).
	hidden  map[string]bool
	corrupt map[string]bool
}

// NewS3Proxy listens on a free loopback port and forwards to target.
func NewS3Proxy(target, bucket, prefix string) (*S3Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &S3Proxy{ln: ln, prefix: "/" + bucket + "/" + prefix + "/", hidden: map[string]bool{}, corrupt: map[string]bool{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0) // a stopped weed is the point, not news
	p.srv = &http.Server{Handler: p.handler(rp)}
	go func() { _ = p.srv.Serve(ln) }() // ends with Close
	return p, nil
}

func (p *S3Proxy) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && p.is(p.hidden, r.URL.Path) {
			notFound(w, r)
			return
		}
		if r.Method == http.MethodGet && p.is(p.corrupt, r.URL.Path) {
			w = &flipWriter{ResponseWriter: w, at: -1}
		}
		next.ServeHTTP(w, r)
	})
}

func (p *S3Proxy) is(set map[string]bool, path string) bool {
	key, ok := strings.CutPrefix(path, p.prefix)
	if !ok {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return set[key]
}

// flipWriter flips the middle byte of a successful response's body (by its
// Content-Length), wherever the chunk that holds it falls.
type flipWriter struct {
	http.ResponseWriter
	wrote bool
	at, n int64 // the body offset to flip (-1: none), bytes written so far
}

func (f *flipWriter) WriteHeader(code int) {
	if !f.wrote && (code == http.StatusOK || code == http.StatusPartialContent) {
		if n, err := strconv.ParseInt(f.Header().Get("Content-Length"), 10, 64); err == nil && n > 0 {
			f.at = n / 2
		}
	}
	f.wrote = true
	f.ResponseWriter.WriteHeader(code)
}

func (f *flipWriter) Write(b []byte) (int, error) {
	if !f.wrote {
		f.WriteHeader(http.StatusOK)
	}
	if f.at >= f.n && f.at < f.n+int64(len(b)) {
		b = slices.Clone(b)
		b[f.at-f.n] ^= 0x20
	}
	n, err := f.ResponseWriter.Write(b)
	f.n += int64(n)
	return n, err
}

// Unwrap lets the reverse proxy flush through the wrapper.
func (f *flipWriter) Unwrap() http.ResponseWriter { return f.ResponseWriter }

// notFound answers as S3 does for a missing version or key.
func notFound(w http.ResponseWriter, r *http.Request) {
	code := "NoSuchKey"
	if r.URL.Query().Get("versionId") != "" {
		code = "NoSuchVersion"
	}
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusNotFound)
	if r.Method == http.MethodGet {
		fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>hidden by the jepsen flapping nemesis</Message><Resource>%s</Resource></Error>`, code, r.URL.Path)
	}
}

// Endpoint is the proxy's base URL.
func (p *S3Proxy) Endpoint() string { return "http://" + p.ln.Addr().String() }

// Hide makes reads of key answer 404 until RestoreAll.
func (p *S3Proxy) Hide(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.hidden[key] = true
}

// RestoreAll passes reads of every hidden key through again.
func (p *S3Proxy) RestoreAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.hidden)
}

// Corrupt makes GETs of key return a body with one byte flipped until
// Uncorrupt.
func (p *S3Proxy) Corrupt(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.corrupt[key] = true
}

// Uncorrupt passes the bodies of every key through unchanged again.
func (p *S3Proxy) Uncorrupt() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.corrupt)
}

// Close stops the proxy.
func (p *S3Proxy) Close() { _ = p.srv.Close() }
