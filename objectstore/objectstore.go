package objectstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

var (
	// ErrNotFound: nothing is stored under the key.
	ErrNotFound = errors.New("object not found")
	// ErrIdentityMismatch: the key holds other bytes than the identity names.
	ErrIdentityMismatch = errors.New("object identity mismatch")
)

// Info describes the bytes currently stored under a key.
type Info struct {
	Key      string
	Identity string // "sha256:<hex>" of the content
	Size     int64
}

// Store is immutable-object storage addressed by (key, identity). Every
// read names the identity it expects and fails rather than return other
// bytes: a key may be reused, an identity may not.
type Store interface {
	// Put stores the bytes read from r under key and returns their identity.
	// Bytes already under the key are replaced.
	Put(ctx context.Context, key string, r io.Reader) (Info, error)
	// ReadAt reads len(p) bytes at off of the object (key, identity).
	ReadAt(ctx context.Context, key, identity string, p []byte, off int64) (int, error)
	// Head describes what the key holds now.
	Head(ctx context.Context, key string) (Info, error)
	// Delete removes (key, identity); other bytes under the key are kept.
	// Deleting what is not there is not an error.
	Delete(ctx context.Context, key, identity string) error
}

// Verify checks that key holds exactly the bytes identity names: HEAD with
// the identity, for the resolver's optional physical check.
func Verify(ctx context.Context, s Store, key, identity string) error {
	info, err := s.Head(ctx, key)
	if err != nil {
		return err
	}
	if info.Identity != identity {
		return fmt.Errorf("%w: %q holds %s, not %s", ErrIdentityMismatch, key, info.Identity, identity)
	}
	return nil
}

// ValidKey reports whether key is acceptable: non-empty, at most 1024
// bytes, no NUL, and no "." or ".." path element.
func ValidKey(key string) error {
	switch {
	case key == "":
		return errors.New("object key is empty")
	case len(key) > 1024:
		return errors.New("object key is longer than 1024 bytes")
	case strings.ContainsRune(key, 0):
		return errors.New("object key contains NUL")
	}
	for _, part := range strings.Split(key, "/") {
		if part == "." || part == ".." {
			return fmt.Errorf("object key %q has a %q element", key, part)
		}
	}
	return nil
}
