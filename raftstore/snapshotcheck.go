package raftstore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
)

// ErrCorruptSnapshot: a raft snapshot in the data dir could not be read
// back: its CRC-64 (raft's file snapshot store checks the whole state file
// against meta.json when it opens one) or its meta.json is wrong, or its
// state file is gone.
var ErrCorruptSnapshot = errors.New("raftstore: corrupt raft snapshot")

// CorruptSnapshotError names the snapshot's directory; it matches
// ErrCorruptSnapshot and unwraps to what the store reported.
type CorruptSnapshotError struct {
	Path string
	Err  error
}

func (e *CorruptSnapshotError) Error() string {
	return fmt.Sprintf("raftstore: raft snapshot %s cannot be read back: %v; this node stops rather than restore or send it; "+
		"wipe this node's data dir and let it rejoin, it receives the state by snapshot from the leader", e.Path, e.Err)
}

func (e *CorruptSnapshotError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrCorruptSnapshot) true.
func (e *CorruptSnapshotError) Is(target error) bool { return target == ErrCorruptSnapshot }

// checkedSnapshots latches a snapshot that fails to open (diskFailure):
// raft would otherwise restore an older snapshot at start (over a log
// compacted past it) or retry sending a corrupt one to a follower forever.
// A snapshot reaped while it was being opened is not corruption.
type checkedSnapshots struct {
	raft.SnapshotStore
	dir string // the snapshot store's directory (snapshots/)
	f   *diskFailure
}

func (c *checkedSnapshots) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := c.SnapshotStore.Open(id)
	if err == nil || errors.Is(err, fs.ErrNotExist) && !c.exists(id) {
		return meta, rc, err
	}
	ce := &CorruptSnapshotError{Path: filepath.Join(c.dir, id), Err: err}
	c.f.corrupt(ce)
	return nil, nil, ce
}

// Create's sink removes its temporary directory when Close fails: raft's
// file sink leaves it behind when meta.json cannot be written (a full
// disk), and the store skips such directories forever after.
func (c *checkedSnapshots) Create(version raft.SnapshotVersion, index, term uint64, conf raft.Configuration,
	confIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := c.SnapshotStore.Create(version, index, term, conf, confIndex, trans)
	if err != nil {
		return nil, err
	}
	return &cleanSink{SnapshotSink: sink, tmp: filepath.Join(c.dir, sink.ID()+tmpSnapshotSuffix)}, nil
}

// tmpSnapshotSuffix is how raft's file snapshot store names a snapshot
// being written.
const tmpSnapshotSuffix = ".tmp"

type cleanSink struct {
	raft.SnapshotSink
	tmp string
}

func (s *cleanSink) Close() error {
	err := s.SnapshotSink.Close()
	if err != nil {
		// Gone already if the rename into place succeeded.
		if rmErr := os.RemoveAll(s.tmp); rmErr != nil {
			return errors.Join(err, rmErr)
		}
	}
	return err
}

// removeHalfWritten removes the snapshots a crash left half-written under
// dir (raft's store never reads them, nor deletes them), before the store
// opens; it returns what it removed.
func removeHalfWritten(dir string) ([]string, error) {
	tmps, err := filepath.Glob(filepath.Join(dir, "*"+tmpSnapshotSuffix))
	if err != nil {
		return nil, err
	}
	for _, tmp := range tmps {
		if err := os.RemoveAll(tmp); err != nil {
			return nil, fmt.Errorf("raftstore: remove half-written snapshot: %w", err)
		}
	}
	return tmps, nil
}

// exists reports whether snapshot id is still listed.
func (c *checkedSnapshots) exists(id string) bool {
	list, err := c.SnapshotStore.List()
	if err != nil {
		return true
	}
	for _, m := range list {
		if m.ID == id {
			return true
		}
	}
	return false
}
