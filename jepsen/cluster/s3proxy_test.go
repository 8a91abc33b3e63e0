package cluster

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The proxy passes requests through, Host header included (SigV4 signs
// it), and answers reads of a hidden key 404 until it is restored.
func TestS3ProxyHidesAKey(t *testing.T) {
	var hosts []string
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts = append(hosts, r.Host)
		_, _ = io.WriteString(w, "bytes of "+r.URL.Path)
	}))
	defer backend.Close()
	p, err := NewS3Proxy(backend.URL, "b", "pre")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	get := func(method, path string) (int, string) {
		req, _ := http.NewRequest(method, p.Endpoint()+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("GET", "/b/pre/k/1?versionId=v"); code != 200 || body != "bytes of /b/pre/k/1" {
		t.Fatalf("pass-through: %d %q", code, body)
	}
	if hosts[0] != strings.TrimPrefix(p.Endpoint(), "http://") {
		t.Fatalf("Host header rewritten to %q: signatures would break", hosts[0])
	}
	p.Hide("k/1")
	if code, body := get("GET", "/b/pre/k/1?versionId=v"); code != 404 || !strings.Contains(body, "<Code>NoSuchVersion</Code>") {
		t.Fatalf("hidden GET: %d %q", code, body)
	}
	if code, _ := get("HEAD", "/b/pre/k/1"); code != 404 {
		t.Fatalf("hidden HEAD: %d", code)
	}
	if code, _ := get("PUT", "/b/pre/k/1"); code != 200 {
		t.Fatalf("PUT of a hidden key blocked: %d", code)
	}
	if code, _ := get("GET", "/b/pre/k/2"); code != 200 {
		t.Fatalf("another key hidden: %d", code)
	}
	p.RestoreAll()
	if code, _ := get("GET", "/b/pre/k/1?versionId=v"); code != 200 {
		t.Fatalf("restored GET: %d", code)
	}
}

// A corrupted key's GET bodies come back with their middle byte flipped,
// other keys' and other methods' unchanged, until Uncorrupt.
func TestS3ProxyCorruptsAKey(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "0123456789")
	}))
	defer backend.Close()
	p, err := NewS3Proxy(backend.URL, "b", "pre")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	get := func(path string) string {
		resp, err := http.Get(p.Endpoint() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	p.Corrupt("k/1")
	if got := get("/b/pre/k/1?versionId=v"); got != "01234\x156789" {
		t.Fatalf("corrupted GET: %q", got)
	}
	if got := get("/b/pre/k/2"); got != "0123456789" {
		t.Fatalf("another key corrupted: %q", got)
	}
	p.Uncorrupt()
	if got := get("/b/pre/k/1"); got != "0123456789" {
		t.Fatalf("after Uncorrupt: %q", got)
	}
}
