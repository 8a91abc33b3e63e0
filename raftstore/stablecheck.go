package raftstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/hashicorp/raft"
)

// ErrCorruptStable: a value of the stable store (raft's current term, its
// vote, this node's id) read back from disk does not match the checksum it
// was written with.
var ErrCorruptStable = errors.New("raftstore: corrupt stable store value")

// CorruptStableError names the key and the file; it matches
// ErrCorruptStable.
type CorruptStableError struct {
	Path, Key string
}

func (e *CorruptStableError) Error() string {
	return fmt.Sprintf("raftstore: stable store value %s read back from %s does not match its checksum: "+
		"a node that trusted a damaged term or vote could vote twice in one term, so it stops instead; "+
		"wipe this node's data dir and let it rejoin, it receives the state by snapshot from the leader", e.Key, e.Path)
}

// Is makes errors.Is(err, ErrCorruptStable) true.
func (e *CorruptStableError) Is(target error) bool { return target == ErrCorruptStable }

// checkedStable is the stable store raft writes through. bbolt checks only
// its meta pages, so a flipped byte in the current term or the last vote
// would be read back as a smaller term or another candidate, and the node
// could then vote twice in one term: two leaders. So every value is also
// written under a key of its own, with a checksum:
//
//	"MetadSum:" + key = value | crc32c(key | value) (4, little endian) | stableCheckMagic (4)
//
// and read back from there. The plain key keeps raft-boltdb's own format,
// so an older release reads the same dir. The checked copy is written
// first, in its own transaction: a crash between the two writes leaves the
// plain key one value behind, and raft had not yet been told that the
// write succeeded, so either value is one it may hold. A key without a
// checked copy (written before it existed) is read unchecked.
//
// A mismatch is latched in f like a corrupt log entry (durable.go): raft
// folds the error into its own text, and the latch is how Open and the
// node learn what it was.
type checkedStable struct {
	inner raft.StableStore
	path  string
	f     *diskFailure
}

var stableCheckMagic = []byte("\x00ms1")

const stableCheckLen = 8

func sumKey(key []byte) []byte { return append([]byte("MetadSum:"), key...) }

func stableSum(key, val []byte) uint32 {
	return crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, val)
}

func (s *checkedStable) Set(key, val []byte) error {
	sealed := make([]byte, 0, len(val)+stableCheckLen)
	sealed = append(sealed, val...)
	sealed = binary.LittleEndian.AppendUint32(sealed, stableSum(key, val))
	sealed = append(sealed, stableCheckMagic...)
	if err := s.inner.Set(sumKey(key), sealed); err != nil {
		return err
	}
	return s.inner.Set(key, val)
}

// Get returns the checked copy of key's value if there is one, else the
// plain value (with the inner store's error, "not found" included).
func (s *checkedStable) Get(key []byte) ([]byte, error) {
	sealed, err := s.inner.Get(sumKey(key))
	if err != nil && !missingKey(err) {
		return nil, err
	}
	if len(sealed) == 0 {
		return s.inner.Get(key)
	}
	n := len(sealed) - stableCheckLen
	if n < 0 || !bytes.Equal(sealed[n+4:], stableCheckMagic) ||
		binary.LittleEndian.Uint32(sealed[n:]) != stableSum(key, sealed[:n]) {
		return nil, s.corrupt(key)
	}
	return sealed[:n:n], nil
}

func (s *checkedStable) corrupt(key []byte) error {
	err := &CorruptStableError{Path: s.path, Key: string(key)}
	if s.f != nil {
		s.f.corrupt(err)
	}
	return err
}

// SetUint64 stores val as raft-boltdb does: 8 bytes, big endian.
func (s *checkedStable) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

func (s *checkedStable) GetUint64(key []byte) (uint64, error) {
	sealed, err := s.inner.Get(sumKey(key))
	if err != nil && !missingKey(err) {
		return 0, err
	}
	if len(sealed) == 0 {
		return s.inner.GetUint64(key)
	}
	val, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(val) != 8 {
		return 0, s.corrupt(key)
	}
	return binary.BigEndian.Uint64(val), nil
}
