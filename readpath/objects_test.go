package readpath

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/metad/metad/checksum"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/objectstore"
	"github.com/metad/metad/resolver"
)

// checkedWorld is a file:// store holding one 24-byte object, and a record
// naming its bytes [8, 16).
func checkedWorld(t *testing.T) (*objectstore.Local, fsm.RecordInfo) {
	t.Helper()
	s, err := objectstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Put(context.Background(), "seg-1", strings.NewReader("header--payload!trailer."))
	if err != nil {
		t.Fatal(err)
	}
	return s, fsm.RecordInfo{
		Object: fsm.ObjectRef{Key: info.Key, Identity: info.Identity},
		Bytes:  fsm.ByteRange{Offset: 8, Length: 8},
		Data:   checksum.Of([]byte("payload!")),
	}
}

// TestServerChecksTheRecordsRange: --verify-objects (Verify) and the
// repair and report checks (Intact, checkBytes) judge a record by its
// byte range against its data checksum, not by the object alone — here
// the object is intact, but its range is not the bytes the writer
// committed, which only the data checksum can see.
func TestServerChecksTheRecordsRange(t *testing.T) {
	ctx := context.Background()
	s, rec := checkedWorld(t)
	o := Objects{Store: s}
	if err := o.Verify(ctx, rec); err != nil {
		t.Fatalf("Verify of intact bytes: %v", err)
	}
	if ok, err := o.Intact(ctx, rec.Object, rec.Bytes, rec.Data); !ok || err != nil {
		t.Fatalf("Intact of intact bytes: %v, %v", ok, err)
	}

	wrong := rec
	wrong.Data = checksum.Of([]byte("PAYLOAD!"))
	err := o.Verify(ctx, wrong)
	if !errors.Is(err, resolver.ErrPhysicalCorrupt) || !errors.Is(err, checksum.ErrMismatch) {
		t.Fatalf("Verify of a range failing its checksum: %v, want ErrPhysicalCorrupt", err)
	}
	if ok, err := o.Intact(ctx, wrong.Object, wrong.Bytes, wrong.Data); ok || err != nil {
		t.Fatalf("Intact of a range failing its checksum: %v, %v; want unusable", ok, err)
	}
	if err := checkBytes(ctx, s, wrong.Object, wrong.Bytes, wrong.Data); !errors.Is(err, objectstore.ErrCorrupt) {
		t.Fatalf("checkBytes (ConfirmFailure's verdict): %v, want ErrCorrupt", err)
	}

	// A record from before data checksums is judged by its object alone.
	old := wrong
	old.Data = checksum.Data{}
	if err := o.Verify(ctx, old); err != nil {
		t.Fatalf("Verify without a data checksum: %v", err)
	}
	if ok, err := o.Intact(ctx, old.Object, old.Bytes, old.Data); !ok || err != nil {
		t.Fatalf("Intact: %v, %v", ok, err)
	}
}

// TestVerifyReportsBytesRewrittenInPlaceAsCorrupt: a file:// version
// rewritten in place fails its digest; Verify says CORRUPT (the resolver
// then reports it so), not a store that could not be asked.
func TestVerifyReportsBytesRewrittenInPlaceAsCorrupt(t *testing.T) {
	ctx := context.Background()
	s, rec := checkedWorld(t)
	path, _ := s.VersionPath(rec.Object.Key, rec.Object.Identity)
	if err := os.WriteFile(path, []byte("header--PAYLOAD!trailer."), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, data := range []checksum.Data{rec.Data, {}} {
		rec.Data = data
		if err := (Objects{Store: s}).Verify(ctx, rec); !errors.Is(err, resolver.ErrPhysicalCorrupt) {
			t.Fatalf("Verify (data checksum %v): %v, want ErrPhysicalCorrupt", data, err)
		}
	}
}
