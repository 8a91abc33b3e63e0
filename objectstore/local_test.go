package objectstore

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

func TestLocalPutReadReplaceDelete(t *testing.T) {
	ctx := context.Background()
	s, err := NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	v1, err := s.Put(ctx, "streams/a/seg-1", strings.NewReader("hello, world"))
	if err != nil {
		t.Fatal(err)
	}
	if v1.Size != 12 || !strings.HasPrefix(v1.Identity, "sha256:") {
		t.Fatalf("info %+v", v1)
	}
	p := make([]byte, 5)
	if n, err := s.ReadAt(ctx, v1.Key, v1.Identity, p, 7); err != nil || string(p[:n]) != "world" {
		t.Fatalf("ranged read %q %v", p[:n], err)
	}
	if err := Verify(ctx, s, v1.Key, v1.Identity); err != nil {
		t.Fatal(err)
	}

	// New bytes under the same key get a new identity; the old identity
	// can no longer be read, and the new bytes are never returned for it.
	v2, err := s.Put(ctx, "streams/a/seg-1", strings.NewReader("HELLO, WORLD"))
	if err != nil || v2.Identity == v1.Identity {
		t.Fatalf("replace: %+v %v", v2, err)
	}
	if _, err := s.ReadAt(ctx, v1.Key, v1.Identity, p, 7); !errors.Is(err, ErrIdentityMismatch) {
		t.Fatalf("read under the stale identity: %v", err)
	}
	if err := Verify(ctx, s, v1.Key, v1.Identity); !errors.Is(err, ErrIdentityMismatch) {
		t.Fatalf("verify stale identity: %v", err)
	}
	if n, err := s.ReadAt(ctx, v2.Key, v2.Identity, p, 7); err != nil || string(p[:n]) != "WORLD" {
		t.Fatalf("read new identity %q %v", p[:n], err)
	}

	// Deleting the old identity leaves the new bytes alone.
	if err := s.Delete(ctx, v1.Key, v1.Identity); err != nil {
		t.Fatal(err)
	}
	if h, err := s.Head(ctx, v1.Key); err != nil || h.Identity != v2.Identity {
		t.Fatalf("head after deleting the old identity: %+v %v", h, err)
	}
	if err := s.Delete(ctx, v2.Key, v2.Identity); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Head(ctx, v2.Key); !errors.Is(err, ErrNotFound) {
		t.Fatalf("head after delete: %v", err)
	}
	if _, err := s.ReadAt(ctx, v2.Key, v2.Identity, p, 0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("read after delete: %v", err)
	}
	if err := s.Delete(ctx, v2.Key, v2.Identity); err != nil {
		t.Fatalf("deleting twice: %v", err)
	}
}

func TestLocalRefusesBadKeysAndIdentities(t *testing.T) {
	ctx := context.Background()
	s, _ := NewLocal(t.TempDir())
	for _, key := range []string{"", "a/../b", "./x", "nul\x00", strings.Repeat("k", 1025)} {
		if _, err := s.Put(ctx, key, bytes.NewReader(nil)); err == nil {
			t.Errorf("Put(%q) accepted", key)
		}
	}
	info, _ := s.Put(ctx, "k", strings.NewReader("x"))
	for _, id := range []string{"", "etag:123", "sha256:zz", "sha256:" + strings.Repeat("0", 64)} {
		if _, err := s.ReadAt(ctx, "k", id, make([]byte, 1), 0); !errors.Is(err, ErrIdentityMismatch) {
			t.Errorf("ReadAt with identity %q: %v", id, err)
		}
	}
	if n, err := s.ReadAt(ctx, "k", info.Identity, make([]byte, 1), 0); n != 1 || err != nil {
		t.Fatalf("good read %d %v", n, err)
	}
}

func TestLocalHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, _ := NewLocal(t.TempDir())
	if _, err := s.Put(ctx, "k", strings.NewReader("x")); !errors.Is(err, context.Canceled) {
		t.Fatalf("put: %v", err)
	}
	if _, err := s.Head(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("head: %v", err)
	}
}
