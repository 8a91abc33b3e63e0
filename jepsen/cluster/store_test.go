package cluster

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/metad/metad/objectstore"
)

// Corrupt flips one byte of a local version in place: a ranged read
// returns the changed byte, the store's own check finds the version
// corrupt; RestoreCorrupted writes the byte back and the version checks out.
func TestLocalCorruptAndRestore(t *testing.T) {
	s, err := newObjectStore(StoreLocal, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	local, err := objectstore.NewLocal(s.Dir)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("####[1.0.0][1.1.0]~~")
	info, err := local.Put(ctx, "k", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	read := func() string {
		p := make([]byte, 14)
		if _, err := local.ReadAt(ctx, "k", info.Identity, p, 4); err != nil {
			t.Fatal(err)
		}
		return string(p)
	}
	if err := s.Corrupt("k", info.Identity, 6); err != nil {
		t.Fatal(err)
	}
	if got := read(); got == "[1.0.0][1.1.0]" || !strings.HasPrefix(got, "[1") {
		t.Fatalf("corrupted range reads %q", got)
	}
	if err := objectstore.Check(ctx, local, "k", info.Identity); !errors.Is(err, objectstore.ErrCorrupt) {
		t.Fatalf("corrupted version checks as %v", err)
	}
	if err := s.Corrupt("k", info.Identity, 7); err == nil {
		t.Fatal("a second corruption of one version accepted (its restore would lose the first byte)")
	}
	if err := s.Heal(); err != nil {
		t.Fatal(err)
	}
	if got := read(); got != "[1.0.0][1.1.0]" {
		t.Fatalf("restored range reads %q", got)
	}
	if err := objectstore.Check(ctx, local, "k", info.Identity); err != nil {
		t.Fatalf("restored version: %v", err)
	}
}
