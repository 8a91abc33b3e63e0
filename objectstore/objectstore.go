package objectstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Failures of a read, a Stat or a Put, classified with errors.Is. The first
// three are candidate failures (the reader reports them and excludes the
// candidate); ErrUnavailable is not: the store could not answer now, and
// the same read may succeed later.
var (
	// ErrNotFound: the store holds no such version (OBJECT_MISSING).
	ErrNotFound = errors.New("object not found")
	// ErrIdentityMismatch: the version exists but is not the bytes the
	// identity names, or the identity is not one of this store's
	// (IDENTITY_MISMATCH).
	ErrIdentityMismatch = errors.New("object identity mismatch")
	// ErrCorrupt: the bytes read do not hash to the identity's SHA-256
	// (CORRUPT).
	ErrCorrupt = errors.New("object bytes corrupt")
	// ErrUnavailable: the store did not answer (5xx, throttling, timeout,
	// connection refused). Transient: retry later; not a candidate failure.
	ErrUnavailable = errors.New("object store unavailable")
)

// Info describes one stored version.
type Info struct {
	Key string
	// Identity names exactly these bytes: "sha256:<hex>" in a file:// store,
	// "s3:<sha256 hex>:<etag>:<version id>" in an s3:// store.
	Identity string
	Size     int64
}

// Store is versioned object storage addressed by (key, identity), like a
// versioned bucket: a Put under a key adds a version and never destroys an
// earlier one, every read names the version it wants, and only Delete —
// the garbage collector's — removes a version, exactly one.
type Store interface {
	// Put stores the bytes read from r as a new version of key and returns
	// its identity. Earlier versions of the key stay readable.
	Put(ctx context.Context, key string, r io.Reader) (Info, error)
	// ReadAt reads len(p) bytes at off of the version (key, identity). A
	// read of the whole object also checks the bytes against the
	// identity's SHA-256 (ErrCorrupt).
	ReadAt(ctx context.Context, key, identity string, p []byte, off int64) (int, error)
	// Stat describes the version (key, identity) without reading it: HEAD
	// with the identity, for --verify-objects.
	Stat(ctx context.Context, key, identity string) (Info, error)
	// Delete removes exactly the version (key, identity); other versions
	// of the key are kept. Deleting what is not there is not an error.
	Delete(ctx context.Context, key, identity string) error
}

// Verify checks that the store holds the version identity names under key.
func Verify(ctx context.Context, s Store, key, identity string) error {
	_, err := s.Stat(ctx, key, identity)
	return err
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
