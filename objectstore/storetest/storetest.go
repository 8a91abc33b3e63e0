// Package storetest is the behavioural contract every objectstore.Store
// passes, written once and run against each store: file://
// on a temporary directory, s3:// against a real SeaweedFS weed mini. A
// store's test calls Run with a Harness saying how to make a fresh store
// and how to forge the two failures only a store's own format can produce.
package storetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/checksum"
	"github.com/metad/metad/objectstore"
)

// Harness adapts the suite to one store.
type Harness struct {
	// New returns an empty store (a fresh directory, a fresh prefix).
	New func(t *testing.T) objectstore.Store
	// Mismatch returns an identity that names a version of a's key which
	// exists but holds other bytes than the identity says (S3: a's
	// VersionId with b's ETag), or "" if the store cannot express one.
	Mismatch func(a, b objectstore.Info) string
	// Corrupt damages the stored bytes of info (or returns an identity
	// that claims other bytes for the same version) and returns the
	// identity a reader now holds.
	Corrupt func(t *testing.T, s objectstore.Store, info objectstore.Info) string
	// Large is the size of the large-object case: for S3, above the
	// part size, so the object takes a multipart upload. Required.
	Large int
}

// Run runs every case of the contract as a subtest.
func Run(t *testing.T, h Harness) {
	cases := []struct {
		name string
		fn   func(t *testing.T, h Harness, s objectstore.Store)
	}{
		{"PutAndReadByIdentityAndRange", putAndRead},
		{"ReplacedKeyKeepsBothVersions", replacedKey},
		{"DeleteRemovesExactlyOneVersion", deleteOneVersion},
		{"MissingObject", missingObject},
		{"IdentityMismatch", identityMismatch},
		{"CorruptBytes", corruptBytes},
		{"RangeChecksum", rangeChecksum},
		{"ForeignIdentity", foreignIdentity},
		{"LargeObject", largeObject},
		{"StreamingPut", streamingPut},
		{"BadKeys", badKeys},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.fn(t, h, h.New(t)) })
	}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func put(t *testing.T, s objectstore.Store, key, data string) objectstore.Info {
	t.Helper()
	info, err := s.Put(ctx(t), key, strings.NewReader(data))
	if err != nil {
		t.Fatalf("put %q: %v", key, err)
	}
	if info.Key != key || info.Size != int64(len(data)) || info.Identity == "" {
		t.Fatalf("put %q: info %+v", key, info)
	}
	return info
}

func read(t *testing.T, s objectstore.Store, info objectstore.Info, off int64, n int) (string, error) {
	t.Helper()
	p := make([]byte, n)
	got, err := s.ReadAt(ctx(t), info.Key, info.Identity, p, off)
	return string(p[:got]), err
}

func mustRead(t *testing.T, s objectstore.Store, info objectstore.Info, off int64, n int, want string) {
	t.Helper()
	got, err := read(t, s, info, off, n)
	if err != nil && !(errors.Is(err, io.EOF) && got == want) {
		t.Fatalf("read %s @%d+%d: %q, %v", info.Key, off, n, got, err)
	}
	if got != want {
		t.Fatalf("read %s @%d+%d: %q, want %q", info.Key, off, n, got, want)
	}
}

func putAndRead(t *testing.T, _ Harness, s objectstore.Store) {
	v := put(t, s, "streams/1/seg-1", "hello, world")
	mustRead(t, s, v, 0, 12, "hello, world")
	mustRead(t, s, v, 7, 5, "world")
	mustRead(t, s, v, 0, 5, "hello")
	// A range running past the end returns what there is, and io.EOF.
	if got, err := read(t, s, v, 7, 10); got != "world" || !errors.Is(err, io.EOF) {
		t.Fatalf("read past the end: %q, %v", got, err)
	}
	if got, err := read(t, s, v, 12, 1); got != "" || !errors.Is(err, io.EOF) {
		t.Fatalf("read at the end: %q, %v", got, err)
	}
	info, err := s.Stat(ctx(t), v.Key, v.Identity)
	if err != nil || info.Size != 12 || info.Identity != v.Identity {
		t.Fatalf("stat: %+v, %v", info, err)
	}
}

func replacedKey(t *testing.T, _ Harness, s objectstore.Store) {
	v1 := put(t, s, "k", "first bytes")
	v2 := put(t, s, "k", "SECOND BYTES")
	if v1.Identity == v2.Identity {
		t.Fatalf("two puts of different bytes share identity %s", v1.Identity)
	}
	// Both versions stay readable by their identities; the old identity
	// never yields the new bytes.
	mustRead(t, s, v1, 0, 11, "first bytes")
	mustRead(t, s, v2, 0, 12, "SECOND BYTES")
	mustRead(t, s, v1, 6, 5, "bytes")
	for _, v := range []objectstore.Info{v1, v2} {
		if err := objectstore.Verify(ctx(t), s, v.Key, v.Identity); err != nil {
			t.Fatalf("verify %s: %v", v.Identity, err)
		}
	}
}

func deleteOneVersion(t *testing.T, _ Harness, s objectstore.Store) {
	v1 := put(t, s, "k", "old bytes")
	v2 := put(t, s, "k", "new bytes!")
	if err := s.Delete(ctx(t), v1.Key, v1.Identity); err != nil {
		t.Fatal(err)
	}
	if _, err := read(t, s, v1, 0, 9); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("read of the deleted version: %v", err)
	}
	if err := objectstore.Verify(ctx(t), s, v1.Key, v1.Identity); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("verify of the deleted version: %v", err)
	}
	mustRead(t, s, v2, 0, 10, "new bytes!")
	if err := s.Delete(ctx(t), v1.Key, v1.Identity); err != nil {
		t.Fatalf("deleting a deleted version: %v", err)
	}
	if err := s.Delete(ctx(t), v2.Key, v2.Identity); err != nil {
		t.Fatal(err)
	}
	if _, err := read(t, s, v2, 0, 10); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("read after deleting the last version: %v", err)
	}
}

func missingObject(t *testing.T, _ Harness, s objectstore.Store) {
	v := put(t, s, "present", "bytes")
	ghost := objectstore.Info{Key: "never-written", Identity: v.Identity}
	if _, err := read(t, s, ghost, 0, 5); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("read of a key never written: %v", err)
	}
	if _, err := s.Stat(ctx(t), ghost.Key, ghost.Identity); !errors.Is(err, objectstore.ErrNotFound) {
		t.Fatalf("stat of a key never written: %v", err)
	}
	if err := s.Delete(ctx(t), ghost.Key, ghost.Identity); err != nil {
		t.Fatalf("delete of a key never written: %v", err)
	}
}

func identityMismatch(t *testing.T, h Harness, s objectstore.Store) {
	a := put(t, s, "k", "version a")
	b := put(t, s, "k", "version b!")
	forged := h.Mismatch(a, b)
	if forged == "" {
		t.Log("this store's identities cannot name a version holding other bytes (they are content digests)")
		return
	}
	bad := objectstore.Info{Key: a.Key, Identity: forged}
	got, err := read(t, s, bad, 0, 9)
	if !errors.Is(err, objectstore.ErrIdentityMismatch) {
		t.Fatalf("read under a mismatched identity: %q, %v", got, err)
	}
	if err := objectstore.Verify(ctx(t), s, bad.Key, bad.Identity); !errors.Is(err, objectstore.ErrIdentityMismatch) {
		t.Fatalf("verify under a mismatched identity: %v", err)
	}
}

func corruptBytes(t *testing.T, h Harness, s objectstore.Store) {
	v := put(t, s, "k", "intact bytes")
	bad := objectstore.Info{Key: v.Key, Identity: h.Corrupt(t, s, v)}
	if got, err := read(t, s, bad, 0, 12); !errors.Is(err, objectstore.ErrCorrupt) {
		t.Fatalf("whole read of corrupt bytes: %q, %v", got, err)
	}
}

// rangeChecksum: ReadRange and CheckRange return and accept a slice whose
// bytes match its data checksum, and refuse one that does not — bytes that
// are not the ones the writer committed — as ErrCorrupt, on a ranged read
// that the store itself cannot check against the identity.
func rangeChecksum(t *testing.T, _ Harness, s objectstore.Store) {
	v := put(t, s, "k", "header--payload!trailer.")
	right, wrong := checksum.Of([]byte("payload!")), checksum.Of([]byte("PAYLOAD!"))
	got, err := objectstore.ReadRange(ctx(t), s, v.Key, v.Identity, 8, 8, right)
	if err != nil || string(got) != "payload!" {
		t.Fatalf("ReadRange of the right bytes: %q, %v", got, err)
	}
	if err := objectstore.CheckRange(ctx(t), s, v.Key, v.Identity, 8, 8, right); err != nil {
		t.Fatalf("CheckRange of the right bytes: %v", err)
	}
	got, err = objectstore.ReadRange(ctx(t), s, v.Key, v.Identity, 8, 8, wrong)
	if !errors.Is(err, objectstore.ErrCorrupt) || !errors.Is(err, checksum.ErrMismatch) || !objectstore.Unusable(err) || got != nil {
		t.Fatalf("ReadRange against another checksum: %q, %v; want ErrCorrupt and ErrMismatch", got, err)
	}
	if err := objectstore.CheckRange(ctx(t), s, v.Key, v.Identity, 8, 8, wrong); !errors.Is(err, objectstore.ErrCorrupt) || !errors.Is(err, checksum.ErrMismatch) {
		t.Fatalf("CheckRange against another checksum: %v; want ErrCorrupt and ErrMismatch", err)
	}
	// An object ending inside the range cannot hold the committed bytes.
	if _, err := objectstore.ReadRange(ctx(t), s, v.Key, v.Identity, 16, 16, checksum.Data{}); !errors.Is(err, objectstore.ErrCorrupt) {
		t.Fatalf("ReadRange past the end: %v, want ErrCorrupt", err)
	}
	// No checksum (a record from before data checksums): read unchecked.
	if got, err := objectstore.ReadRange(ctx(t), s, v.Key, v.Identity, 8, 8, checksum.Data{}); err != nil || string(got) != "payload!" {
		t.Fatalf("ReadRange without a checksum: %q, %v", got, err)
	}
}

func foreignIdentity(t *testing.T, _ Harness, s objectstore.Store) {
	v := put(t, s, "k", "x")
	for _, id := range []string{"", "etag:123", "sha256:zz", "s3:abc", "s3:" + strings.Repeat("0", 64) + "::"} {
		if _, err := s.ReadAt(ctx(t), v.Key, id, make([]byte, 1), 0); !errors.Is(err, objectstore.ErrIdentityMismatch) {
			t.Errorf("read with identity %q: %v", id, err)
		}
	}
}

func largeObject(t *testing.T, h Harness, s objectstore.Store) {
	data := make([]byte, h.Large)
	_, _ = rand.Read(data)
	v, err := s.Put(ctx(t), "big", bytes.NewReader(data))
	if err != nil || v.Size != int64(len(data)) {
		t.Fatalf("large put: %+v, %v", v, err)
	}
	whole := make([]byte, len(data))
	if n, err := s.ReadAt(ctx(t), v.Key, v.Identity, whole, 0); err != nil || n != len(data) || !bytes.Equal(whole, data) {
		t.Fatalf("large read: %d, %v", n, err)
	}
	off := int64(len(data) - 1000)
	p := make([]byte, 500)
	if n, err := s.ReadAt(ctx(t), v.Key, v.Identity, p, off); err != nil || !bytes.Equal(p[:n], data[off:off+500]) {
		t.Fatalf("ranged read of the last part: %d, %v", n, err)
	}
}

// streamingPut puts from a reader that cannot seek.
func streamingPut(t *testing.T, _ Harness, s objectstore.Store) {
	v, err := s.Put(ctx(t), "streamed", io.MultiReader(strings.NewReader("stream"), strings.NewReader("ed")))
	if err != nil {
		t.Fatal(err)
	}
	mustRead(t, s, v, 0, 8, "streamed")
}

func badKeys(t *testing.T, _ Harness, s objectstore.Store) {
	for _, key := range []string{"", "a/../b", "./x", "nul\x00", strings.Repeat("k", 1025)} {
		if _, err := s.Put(ctx(t), key, bytes.NewReader(nil)); err == nil {
			t.Errorf("Put(%q) accepted", key)
		}
	}
}
