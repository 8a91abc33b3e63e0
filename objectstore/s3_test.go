package objectstore_test

import (
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/metad/metad/internal/weedtest"
	"github.com/metad/metad/objectstore"
	"github.com/metad/metad/objectstore/storetest"
)

// The S3 store against a real weed mini: the same contract as file://.
func TestS3StoreContract(t *testing.T) {
	weedtest.SetCredentials(t, weedtest.AccessKey, weedtest.SecretKey)
	w := weedtest.Start(t)
	w.Bucket(t, "contract", true)
	var n atomic.Int64
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) objectstore.Store {
			cfg := w.StoreConfig("contract", fmt.Sprintf("case-%d", n.Add(1)))
			cfg.S3.PartSize = 5 << 20
			s, err := objectstore.Open(ctx(t), cfg)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		// a's version, b's ETag: the server's If-Match refuses it (412).
		Mismatch: func(a, b objectstore.Info) string {
			ap, bp := strings.SplitN(a.Identity, ":", 4), strings.SplitN(b.Identity, ":", 4)
			return strings.Join([]string{ap[0], ap[1], bp[2], ap[3]}, ":")
		},
		// Versions cannot be rewritten in place; a reader holding the
		// right version and ETag but another SHA-256 sees bytes that do
		// not hash to its identity.
		Corrupt: func(t *testing.T, _ objectstore.Store, info objectstore.Info) string {
			p := strings.SplitN(info.Identity, ":", 4)
			p[1] = strings.Repeat("0", 64)
			return strings.Join(p, ":")
		},
		Large: 11 << 20, // three parts of 5 MiB
	})
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// Open refuses, in one line naming the bucket, every store it could not
// use: unversioned, missing, wrong endpoint, bad credentials.
func TestS3OpenRefusesUnusableBuckets(t *testing.T) {
	weedtest.SetCredentials(t, weedtest.AccessKey, weedtest.SecretKey)
	w := weedtest.Start(t)
	w.Bucket(t, "plain", false)
	w.Bucket(t, "versioned", true)
	dead := w.StoreConfig("versioned", "")
	dead.S3.Endpoint = "http://127.0.0.1:1" // nothing listens on port 1
	dead.S3.MaxAttempts = 1
	cases := []struct {
		name string
		cfg  objectstore.Config
		env  [2]string
		want string
	}{
		{"unversioned", w.StoreConfig("plain", ""), [2]string{weedtest.AccessKey, weedtest.SecretKey}, "versioning was never enabled"},
		{"missing", w.StoreConfig("nope", ""), [2]string{weedtest.AccessKey, weedtest.SecretKey}, "no such bucket"},
		{"wrong endpoint", dead, [2]string{weedtest.AccessKey, weedtest.SecretKey}, "endpoint unreachable"},
		{"bad credentials", w.StoreConfig("versioned", ""), [2]string{"nobody", "wrong"}, "credentials refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			weedtest.SetCredentials(t, c.env[0], c.env[1])
			_, err := objectstore.Open(ctx(t), c.cfg)
			bucket := strings.TrimPrefix(c.cfg.URL, "s3://")
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "s3://"+bucket) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Open: %v\nwant one line naming s3://%s and saying %q", err, bucket, c.want)
			}
		})
	}
	weedtest.SetCredentials(t, weedtest.AccessKey, weedtest.SecretKey)
	if _, err := objectstore.Open(ctx(t), w.StoreConfig("versioned", "p")); err != nil {
		t.Fatalf("a versioned bucket: %v", err)
	}
}

// A store that stops answering is ErrUnavailable — transient, not a
// candidate failure — for reads, stats and puts alike.
func TestS3UnavailableIsTransient(t *testing.T) {
	weedtest.SetCredentials(t, weedtest.AccessKey, weedtest.SecretKey)
	w := weedtest.Start(t)
	w.Bucket(t, "unavailable", true)
	cfg := w.StoreConfig("unavailable", "")
	cfg.S3.MaxAttempts = 2
	s, err := objectstore.Open(ctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.Put(ctx(t), "k", strings.NewReader("bytes"))
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()
	p := make([]byte, 5)
	if _, err := s.ReadAt(ctx(t), v.Key, v.Identity, p, 0); !errors.Is(err, objectstore.ErrUnavailable) {
		t.Fatalf("read from a stopped store: %v", err)
	}
	if err := objectstore.Verify(ctx(t), s, v.Key, v.Identity); !errors.Is(err, objectstore.ErrUnavailable) {
		t.Fatalf("verify against a stopped store: %v", err)
	}
	if _, err := s.Put(ctx(t), "k2", strings.NewReader("x")); !errors.Is(err, objectstore.ErrUnavailable) {
		t.Fatalf("put to a stopped store: %v", err)
	}
}

// An https endpoint is trusted through S3Config.CAFile: weed mini behind
// a TLS-terminating proxy is refused without it and used with it.
func TestS3HonoursCAFile(t *testing.T) {
	weedtest.SetCredentials(t, weedtest.AccessKey, weedtest.SecretKey)
	w := weedtest.Start(t)
	w.Bucket(t, "over-tls", true)
	target, _ := url.Parse(w.Endpoint)
	srv := httptest.NewTLSServer(httputil.NewSingleHostReverseProxy(target))
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := objectstore.Config{URL: "s3://over-tls", S3: objectstore.S3Config{Endpoint: srv.URL, PathStyle: true, MaxAttempts: 1}}
	if _, err := objectstore.Open(ctx(t), cfg); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("without the CA: %v", err)
	}
	cfg.S3.CAFile = caFile
	s, err := objectstore.Open(ctx(t), cfg)
	if err != nil {
		t.Fatalf("with the CA: %v", err)
	}
	v, err := s.Put(ctx(t), "k", strings.NewReader("over TLS"))
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 8)
	if n, err := s.ReadAt(ctx(t), v.Key, v.Identity, p, 0); err != nil || string(p[:n]) != "over TLS" {
		t.Fatalf("read over TLS: %q %v", p[:n], err)
	}
	cfg.S3.CAFile = filepath.Join(t.TempDir(), "missing.pem")
	if _, err := objectstore.Open(ctx(t), cfg); err == nil || !strings.Contains(err.Error(), "s3 CA file") {
		t.Fatalf("a missing CA file: %v", err)
	}
}
