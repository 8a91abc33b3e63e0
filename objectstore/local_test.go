package objectstore_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metad/metad/objectstore"
	"github.com/metad/metad/objectstore/storetest"
)

func TestLocalStoreContract(t *testing.T) {
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) objectstore.Store {
			s, err := objectstore.Open(context.Background(), objectstore.Config{URL: objectstore.FileURL(t.TempDir())})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		// A file:// identity is the digest of the bytes: it cannot name a
		// version that holds other bytes, only a missing or corrupt one.
		Mismatch: func(a, b objectstore.Info) string { return "" },
		Corrupt: func(t *testing.T, s objectstore.Store, info objectstore.Info) string {
			path := versionFile(s.(*objectstore.Local).Dir(), info)
			if err := os.WriteFile(path, []byte(strings.ToUpper(readFile(t, path))), 0o644); err != nil {
				t.Fatal(err)
			}
			return info.Identity
		},
		Large: 3 << 20,
	})
}

// versionFile is where the documented layout keeps a version.
func versionFile(dir string, info objectstore.Info) string {
	sum := sha256.Sum256([]byte(info.Key))
	return filepath.Join(dir, hex.EncodeToString(sum[:]), "sha256-"+strings.TrimPrefix(info.Identity, "sha256:"))
}

func readFile(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A directory written by an earlier release (same layout, one version per
// key) reads unchanged: the layout is the documented one.
func TestLocalReadsTheDocumentedLayout(t *testing.T) {
	dir := t.TempDir()
	data := "written by an earlier release"
	sum := sha256.Sum256([]byte(data))
	info := objectstore.Info{Key: "streams/1/seg", Identity: "sha256:" + hex.EncodeToString(sum[:]), Size: int64(len(data))}
	path := versionFile(dir, info)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := objectstore.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, len(data))
	if n, err := s.ReadAt(context.Background(), info.Key, info.Identity, p, 0); err != nil || string(p[:n]) != data {
		t.Fatalf("read %q %v", p[:n], err)
	}
	// And a Put lands where the layout says.
	v, err := s.Put(context.Background(), "k", strings.NewReader("new"))
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, versionFile(dir, v)); got != "new" {
		t.Fatalf("put wrote %q at the documented path", got)
	}
}

func TestLocalHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, _ := objectstore.NewLocal(t.TempDir())
	if _, err := s.Put(ctx, "k", strings.NewReader("x")); err == nil {
		t.Fatal("put under a cancelled context succeeded")
	}
	if _, err := s.Stat(ctx, "k", "sha256:"+strings.Repeat("0", 64)); err != context.Canceled {
		t.Fatalf("stat: %v", err)
	}
}

func TestOpenRejectsBadURLs(t *testing.T) {
	for _, u := range []string{"", "objects", "http://x", "file://", "s3://"} {
		_, err := objectstore.Open(context.Background(), objectstore.Config{URL: u})
		if err == nil || !strings.Contains(err.Error(), "object-store") {
			t.Errorf("Open(%q): %v", u, err)
		}
	}
	err := objectstore.Config{URL: "s3://b", S3: objectstore.S3Config{Endpoint: "localhost:9000", PartSize: 1}}.Validate()
	if err == nil || !strings.Contains(err.Error(), "s3-endpoint") || !strings.Contains(err.Error(), "part size") {
		t.Fatalf("validate: %v", err)
	}
}

// TestLocalStatChecksTheBytes: Stat (--verify-objects) and Check fail on
// bytes rotted in place under an intact name, even after a successful Stat
// cached the digest, and pass again once the right bytes are back.
func TestLocalStatChecksTheBytes(t *testing.T) {
	ctx := context.Background()
	s, err := objectstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Put(ctx, "k", strings.NewReader("the right bytes"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, "k", info.Identity); err != nil {
		t.Fatalf("intact: %v", err)
	}
	path := versionFile(s.Dir(), info)
	if err := os.WriteFile(path, []byte("THE WRONG BYTES"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, "k", info.Identity); !errors.Is(err, objectstore.ErrCorrupt) {
		t.Fatalf("rotted: Stat %v, want ErrCorrupt", err)
	}
	if err := objectstore.Check(ctx, s, "k", info.Identity); !errors.Is(err, objectstore.ErrCorrupt) || !objectstore.Unusable(err) {
		t.Fatalf("rotted: Check %v, want ErrCorrupt", err)
	}
	if err := os.WriteFile(path, []byte("the right bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := objectstore.Check(ctx, s, "k", info.Identity); err != nil {
		t.Fatalf("restored: %v", err)
	}
}
