package flipproxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/internal/flipproxy"
)

const object = "0123456789abcdefghij"

func server(t *testing.T) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The proxy must pass the Host header on as the client sent it.
		if want := r.Header.Get("X-Want-Host"); r.Host != want {
			http.Error(w, "Host "+r.Host+", sent "+want, http.StatusBadRequest)
			return
		}
		http.ServeContent(w, r, "obj", time.Time{}, strings.NewReader(object))
	}))
	t.Cleanup(s.Close)
	return s
}

func get(t *testing.T, p *flipproxy.Proxy, path, rng string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, p.Endpoint()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Want-Host", strings.TrimPrefix(p.Endpoint(), "http://"))
	if rng != "" {
		req.Header.Set("Range", rng)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode/100 != 2 {
		t.Fatalf("GET %s %s: %d %q %v", path, rng, resp.StatusCode, b, err)
	}
	return string(b)
}

func flip(s string, at ...int) string {
	b := []byte(s)
	for _, i := range at {
		b[i] ^= 0xff
	}
	return string(b)
}

// TestFlipsObjectOffsetsOfOneKey: while on, the byte at each object offset
// is inverted in whole and ranged GETs of the chosen path that cover it,
// and nowhere else; off, every body passes unchanged; the Host header
// reaches the server as the client sent it (signatures verify).
func TestFlipsObjectOffsetsOfOneKey(t *testing.T) {
	p := flipproxy.Start(t, server(t).URL)
	if got := get(t, p, "/b/k", ""); got != object {
		t.Fatalf("off: %q", got)
	}
	p.Flip("/b/k", 3, 12)
	for _, tc := range []struct{ rng, want string }{
		{"", flip(object, 3, 12)},
		{"bytes=10-14", flip(object[10:15], 2)},
		{"bytes=0-5", flip(object[:6], 3)},
		{"bytes=4-9", object[4:10]}, // covers neither offset
	} {
		if got := get(t, p, "/b/k", tc.rng); got != tc.want {
			t.Errorf("on, range %q: %q, want %q", tc.rng, got, tc.want)
		}
	}
	if got := get(t, p, "/b/other", ""); got != object {
		t.Errorf("another key: %q", got)
	}
	if n := p.Flipped(); n != 4 {
		t.Errorf("Flipped() = %d, want 4", n)
	}
	p.Off()
	if got := get(t, p, "/b/k", "bytes=10-14"); got != object[10:15] {
		t.Errorf("off again: %q", got)
	}
}
