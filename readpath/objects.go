package readpath

import (
	"context"
	"errors"
	"fmt"

	"github.com/metad/metad/checksum"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/objectstore"
	"github.com/metad/metad/resolver"
)

// Objects checks an object's bytes in the object store for both readers
// of them: the resolver's Verifier (Verify, before a target is returned,
// with --verify-objects) and repair's Verifier (Intact, before a
// quarantine is lifted).
type Objects struct{ Store objectstore.Store }

// Verify checks physical identity, and the record's byte range against its
// data checksum (a Stat cannot see a slice that does not hold the bytes
// the writer committed): a definite mismatch or absence wraps
// resolver.ErrPhysicalMismatch, bytes there but wrong
// resolver.ErrPhysicalCorrupt; any other error means the store could not
// be asked.
func (o Objects) Verify(ctx context.Context, rec fsm.RecordInfo) error {
	obj := rec.Object
	err := objectstore.Verify(ctx, o.Store, obj.Key, obj.Identity)
	if err == nil {
		err = objectstore.CheckRange(ctx, o.Store, obj.Key, obj.Identity, int64(rec.Bytes.Offset), int64(rec.Bytes.Length), rec.Data)
	}
	switch {
	case errors.Is(err, objectstore.ErrCorrupt):
		return fmt.Errorf("%w: %w", resolver.ErrPhysicalCorrupt, err)
	case errors.Is(err, objectstore.ErrIdentityMismatch) || errors.Is(err, objectstore.ErrNotFound):
		return fmt.Errorf("%w: %w", resolver.ErrPhysicalMismatch, err)
	}
	return err
}

// Intact is repair's Verifier: whether the version is there and hashes to
// its identity, and its byte range b matches the data checksum committed
// with it (absent: the object alone is judged): intact, unusable, or (an
// error) the store could not say.
func (o Objects) Intact(ctx context.Context, obj fsm.ObjectRef, b fsm.ByteRange, data checksum.Data) (bool, error) {
	err := checkBytes(ctx, o.Store, obj, b, data)
	switch {
	case err == nil:
		return true, nil
	case objectstore.Unusable(err):
		return false, nil
	}
	return false, err
}

// checkBytes is the server's verdict on a record's bytes: the version as
// objectstore.Check sees it, then the byte range against its data checksum
// (nothing more when the record carries none).
func checkBytes(ctx context.Context, s objectstore.Store, obj fsm.ObjectRef, b fsm.ByteRange, data checksum.Data) error {
	if err := objectstore.Check(ctx, s, obj.Key, obj.Identity); err != nil {
		return err
	}
	return objectstore.CheckRange(ctx, s, obj.Key, obj.Identity, int64(b.Offset), int64(b.Length), data)
}
