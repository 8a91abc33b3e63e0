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
	// ErrCorrupt: the bytes read do not hash to the identity's SHA-256,
	// or a byte range does not match its data checksum, or the object
	// ends inside a record's byte range (CORRUPT).
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
	// identity's SHA-256 (ErrCorrupt); a ranged read checks nothing, so
	// readers of a record's bytes use ReadRange, which checks the range's
	// data checksum.
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

// MaxCheckBytes bounds the bytes Check reads: a larger object is checked
// with Stat alone (the version exists under the identity; an s3:// store
// also compares the SHA-256 it stored at Put), which bounds the cost of
// confirming a report and of re-verifying a quarantined record.
const MaxCheckBytes = 64 << 20

// Check verifies the version (key, identity) for real: it exists, and its
// bytes hash to the identity's SHA-256 (a whole read, up to MaxCheckBytes).
// It answers nil, or an error wrapping ErrNotFound, ErrIdentityMismatch or
// ErrCorrupt (the bytes are unusable), or anything else (ErrUnavailable
// among them: the store could not say).
func Check(ctx context.Context, s Store, key, identity string) error {
	info, err := s.Stat(ctx, key, identity)
	if err != nil || info.Size > MaxCheckBytes {
		return err
	}
	p := make([]byte, info.Size)
	n, err := s.ReadAt(ctx, key, identity, p, 0)
	if err != nil && !(errors.Is(err, io.EOF) && n == len(p)) {
		return err
	}
	if n != len(p) {
		return fmt.Errorf("%w: %q version %s: read %d of %d bytes", ErrCorrupt, key, identity, n, len(p))
	}
	return nil
}

// Unusable reports whether err says the version's bytes cannot be used
// (missing, another version, corrupt), as opposed to the store failing to
// answer.
func Unusable(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrIdentityMismatch) || errors.Is(err, ErrCorrupt)
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
