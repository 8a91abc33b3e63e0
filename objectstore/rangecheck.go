package objectstore

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/metad/metad/checksum"
)

// ReadRange reads the byte range [off, off+length) of version (key,
// identity) and checks it against sum, the data checksum its writer
// committed for exactly that range. It is the one way readers read a
// record's bytes: a store checks the identity's SHA-256 only on a read of
// the whole object (a slice cannot be hashed against a digest of the
// whole), so without it a slice rewritten in place, or rotted, would be
// served. A mismatch, or an object shorter than the range, is an error
// wrapping ErrCorrupt (Unusable; checksum.ErrMismatch too for a
// mismatch). An absent sum (a record from before data checksums) checks
// nothing: the bytes are returned as read.
func ReadRange(ctx context.Context, s Store, key, identity string, off, length int64, sum checksum.Data) ([]byte, error) {
	if off < 0 || length < 0 {
		return nil, fmt.Errorf("objectstore: read %q: negative byte range %d+%d", key, off, length)
	}
	p := make([]byte, length)
	if err := readFull(ctx, s, key, identity, p, off); err != nil {
		return nil, err
	}
	if err := sum.Check(p); err != nil {
		return nil, fmt.Errorf("%w: %q version %s bytes [%d, %d): %w", ErrCorrupt, key, identity, off, off+length, err)
	}
	return p, nil
}

// checkChunk bounds the memory CheckRange holds at once: a range is
// checked in slices of this size, the CRC carried across them.
const checkChunk = 1 << 20

// CheckRange verifies one record's byte range for the server's checks of
// a reader's report, of a quarantined record and of --verify-objects: it
// reads [off, off+length) and compares its CRC-32C with sum. Unlike Check
// it reads the range whatever the object's size — a range is what a
// reader reads, so checking it costs what one read costs — which finds a
// corrupt slice of an object larger than MaxCheckBytes. It answers nil
// when the bytes match or sum is absent (nothing to check against), an
// error wrapping ErrCorrupt (and checksum.ErrMismatch) when they do not,
// and the store's error otherwise (ErrNotFound, ErrIdentityMismatch, or
// ErrUnavailable: no verdict).
func CheckRange(ctx context.Context, s Store, key, identity string, off, length int64, sum checksum.Data) error {
	if !sum.Set {
		return nil
	}
	if off < 0 || length < 0 {
		return fmt.Errorf("objectstore: check %q: negative byte range %d+%d", key, off, length)
	}
	buf := make([]byte, min(length, checkChunk))
	var crc uint32
	for done := int64(0); done < length; {
		p := buf[:min(length-done, int64(len(buf)))]
		if err := readFull(ctx, s, key, identity, p, off+done); err != nil {
			return err
		}
		crc = crc32.Update(crc, checksum.Castagnoli, p)
		done += int64(len(p))
	}
	if crc != sum.CRC {
		return fmt.Errorf("%w: %q version %s bytes [%d, %d): %w: %d bytes have CRC-32C %08x, the writer committed %08x",
			ErrCorrupt, key, identity, off, off+length, checksum.ErrMismatch, length, crc, sum.CRC)
	}
	return nil
}

// readFull fills p from off, or fails: an object ending inside the range
// is corrupt (the record names bytes the version does not have).
func readFull(ctx context.Context, s Store, key, identity string, p []byte, off int64) error {
	n, err := s.ReadAt(ctx, key, identity, p, off)
	switch {
	case n == len(p) && (err == nil || errors.Is(err, io.EOF)):
		return nil
	case err == nil || errors.Is(err, io.EOF):
		return fmt.Errorf("%w: %q version %s: %d of %d bytes at %d: the object ends inside the byte range",
			ErrCorrupt, key, identity, n, len(p), off)
	}
	return err
}
