package readpath

import (
	"context"
	"errors"
	"fmt"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/objectstore"
)

// ConfirmFailure checks a reader's report of candidate failure (G10):
// nothing a client reports may make a committed offset unreadable while
// intact bytes for it exist. It checks the record (key, version)'s bytes
// (and its byte range, against the record's data checksum) in the object
// store, and returns the failure kind the store shows, or
// FailureUnspecified with the reason the report cannot be confirmed: the
// bytes verify, the store could not answer, the kind is transient, or the
// record is no longer at that version (the report is stale).
func (r *Resolver) ConfirmFailure(ctx context.Context, key fsm.IndexKey, version uint64, reported fsm.FailureKind) (fsm.FailureKind, string, error) {
	if reported == fsm.FailureIOError {
		return fsm.FailureUnspecified, "a transient failure changes nothing", nil
	}
	var rec fsm.RecordInfo
	err := r.store.Read(ctx, func(m *fsm.Machine) error {
		got, ok := m.RecordFrom(key.Stream, key.View, key.Generation, key.Start)
		if ok && got.Key == key && got.Version == version {
			rec = got
		}
		return nil
	})
	obj := rec.Object
	switch {
	case err != nil:
		return fsm.FailureUnspecified, "", err
	case obj.Key == "":
		return fsm.FailureUnspecified, fmt.Sprintf("stale: no record %v at version %d", key, version), nil
	}
	// The record's range is checked too: a reader's CORRUPT may be a data
	// checksum failing on a slice of an object whose whole still hashes
	// to its identity (or is too large for Check to read).
	cerr := checkBytes(ctx, r.objects, obj, rec.Bytes, rec.Data)
	switch {
	case cerr == nil:
		return fsm.FailureUnspecified, fmt.Sprintf("not confirmed: the store holds the bytes of %s intact", obj), nil
	case errors.Is(cerr, objectstore.ErrNotFound):
		return fsm.FailureObjectMissing, cerr.Error(), nil
	case errors.Is(cerr, objectstore.ErrIdentityMismatch):
		return fsm.FailureIdentityMismatch, cerr.Error(), nil
	case errors.Is(cerr, objectstore.ErrCorrupt):
		return fsm.FailureCorrupt, cerr.Error(), nil
	}
	return fsm.FailureUnspecified, fmt.Sprintf("not confirmed: the store could not check %s: %v", obj, cerr), nil
}
