package cluster

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
)

// S3Proxy passes S3 requests through to weed mini unchanged (the Host
// header too, so SigV4 signatures still verify), except reads of a hidden
// key: GET and HEAD of it answer 404 NoSuchVersion (NoSuchKey without a
// versionId), as S3 does for a version that is gone. Every metad server
// and the harness's own store client use it, so a hidden object is gone
// for everyone at once and back for everyone at once.
type S3Proxy struct {
	ln     net.Listener
	srv    *http.Server
	prefix string // "/bucket/prefix/"
	mu     sync.Mutex
	hidden map[string]bool // object keys (without the store's prefix)
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
	p := &S3Proxy{ln: ln, prefix: "/" + bucket + "/" + prefix + "/", hidden: map[string]bool{}}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0) // a stopped weed is the point, not news
	p.srv = &http.Server{Handler: p.handler(rp)}
	go func() { _ = p.srv.Serve(ln) }() // ends with Close
	return p, nil
}

func (p *S3Proxy) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.Method == http.MethodGet || r.Method == http.MethodHead) && p.isHidden(r.URL.Path) {
			notFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (p *S3Proxy) isHidden(path string) bool {
	key, ok := strings.CutPrefix(path, p.prefix)
	if !ok {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hidden[key]
}

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

// RestoreAll passes reads of every key through again.
func (p *S3Proxy) RestoreAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.hidden)
}

// Close stops the proxy.
func (p *S3Proxy) Close() { _ = p.srv.Close() }
