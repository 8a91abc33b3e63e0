package objectstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metad/metad/checksum"
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
	if _, err := s.Stat(ctx, "k", "sha256:"+strings.Repeat("0", 64)); !errors.Is(err, context.Canceled) {
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

// TestLocalRangeRewrittenInPlaceIsRefused is the defect of issue 22: a
// record names bytes [8, 16) of a 24-byte object, and the object's bytes
// are rewritten in place. A ranged ReadAt cannot see it (only a whole read
// checks the digest), so ReadRange, checking the record's data checksum,
// must refuse the slice as corrupt — and still serve it once the right
// bytes are back.
func TestLocalRangeRewrittenInPlaceIsRefused(t *testing.T) {
	ctx := context.Background()
	s, err := objectstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const original = "header--payload!trailer."
	info, err := s.Put(ctx, "k", strings.NewReader(original))
	if err != nil {
		t.Fatal(err)
	}
	sum := checksum.Of([]byte(original[8:16]))
	path := versionFile(s.Dir(), info)
	if err := os.WriteFile(path, []byte("header--PAYLOAD!trailer."), 0o644); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 8)
	if _, err := s.ReadAt(ctx, "k", info.Identity, p, 8); err != nil || string(p) != "PAYLOAD!" {
		t.Fatalf("the store's own ranged read: %q, %v (the premise: it checks nothing)", p, err)
	}
	got, err := objectstore.ReadRange(ctx, s, "k", info.Identity, 8, 8, sum)
	if !errors.Is(err, objectstore.ErrCorrupt) || !errors.Is(err, checksum.ErrMismatch) || got != nil {
		t.Fatalf("ReadRange of a slice rewritten in place: %q, %v; want ErrCorrupt", got, err)
	}
	if err := objectstore.CheckRange(ctx, s, "k", info.Identity, 8, 8, sum); !errors.Is(err, objectstore.ErrCorrupt) {
		t.Fatalf("CheckRange of a slice rewritten in place: %v; want ErrCorrupt", err)
	}
	if err := os.WriteFile(path, []byte(original), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := objectstore.ReadRange(ctx, s, "k", info.Identity, 8, 8, sum); err != nil || string(got) != "payload!" {
		t.Fatalf("restored: %q, %v", got, err)
	}
}

// TestCheckRangeReadsInChunks: a range longer than one chunk is checked
// across chunks (the CRC carried over), and a flipped byte in a later
// chunk is found.
func TestCheckRangeReadsInChunks(t *testing.T) {
	ctx := context.Background()
	s, err := objectstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 3<<20+17)
	for i := range data {
		data[i] = byte(i * 7)
	}
	info, err := s.Put(ctx, "big", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	off, length := int64(5), int64(len(data)-10)
	sum := checksum.Of(data[off : off+length])
	if err := objectstore.CheckRange(ctx, s, "big", info.Identity, off, length, sum); err != nil {
		t.Fatalf("intact range: %v", err)
	}
	data[len(data)-6] ^= 1
	if err := os.WriteFile(versionFile(s.Dir(), info), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := objectstore.CheckRange(ctx, s, "big", info.Identity, off, length, sum); !errors.Is(err, checksum.ErrMismatch) {
		t.Fatalf("flipped byte in the last chunk: %v, want ErrMismatch", err)
	}
}

// BenchmarkReadRange is the read-side cost of the data checksum: the same
// ranged read from a file:// store, checked and unchecked.
func BenchmarkReadRange(b *testing.B) {
	ctx := context.Background()
	s, err := objectstore.NewLocal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	data := make([]byte, 1<<20)
	for i := range data {
		data[i] = byte(i * 31)
	}
	info, err := s.Put(ctx, "obj", bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	for _, size := range []int64{4 << 10, 64 << 10} {
		off := int64(4096)
		for _, c := range []struct {
			name string
			sum  checksum.Data
		}{{"unchecked", checksum.Data{}}, {"crc32c", checksum.Of(data[off : off+size])}} {
			b.Run(fmt.Sprintf("%dKiB/%s", size>>10, c.name), func(b *testing.B) {
				b.SetBytes(size)
				for b.Loop() {
					if _, err := objectstore.ReadRange(ctx, s, "obj", info.Identity, off, size, c.sum); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		// The checksum alone, without the read: what checking adds.
		b.Run(fmt.Sprintf("%dKiB/check-only", size>>10), func(b *testing.B) {
			p, sum := data[off:off+size], checksum.Of(data[off:off+size])
			b.SetBytes(size)
			for b.Loop() {
				if err := sum.Check(p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
