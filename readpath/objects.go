package readpath

import (
	"context"
	"errors"
	"fmt"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/objectstore"
	"github.com/metad/metad/resolver"
)

// Objects checks an object's bytes in the object store for both readers
// of them: the resolver's Verifier (Verify, before a target is returned,
// with --verify-objects) and repair's Verifier (Intact, before a
// quarantine is lifted).
type Objects struct{ Store objectstore.Store }

// Verify checks physical identity: a definite mismatch or absence wraps
// resolver.ErrPhysicalMismatch; any other error means the store could not
// be asked.
func (o Objects) Verify(ctx context.Context, obj fsm.ObjectRef) error {
	err := objectstore.Verify(ctx, o.Store, obj.Key, obj.Identity)
	if errors.Is(err, objectstore.ErrIdentityMismatch) || errors.Is(err, objectstore.ErrNotFound) {
		return fmt.Errorf("%w: %w", resolver.ErrPhysicalMismatch, err)
	}
	return err
}

// Intact reports whether the bytes are there and hash to their identity:
// intact, unusable, or (an error) the store could not say.
func (o Objects) Intact(ctx context.Context, obj fsm.ObjectRef) (bool, error) {
	err := objectstore.Check(ctx, o.Store, obj.Key, obj.Identity)
	switch {
	case err == nil:
		return true, nil
	case objectstore.Unusable(err):
		return false, nil
	}
	return false, err
}
