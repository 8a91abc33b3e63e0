package raftstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/kv"
	"github.com/metad/metad/statestore"
)

// The state machine's state lives on disk, in the state store under
// <data dir>/state (package statestore). What raftstore adds to it:
//
//   - appliedKey, in the same batch as the entries' changes: the highest
//     log index the state reflects (the adapter's through: commands,
//     barriers and configuration entries alike). A restart opens the
//     store and raft replays the log after its newest snapshot; the
//     adapter skips the entries at or below appliedKey, which the store
//     already holds (floor). The state is never restored in full at
//     start (raft's NoSnapshotRestoreOnStart).
//   - Point snapshots: a raft snapshot syncs the store and records only
//     its index ("MDPOINT1" + index, 16 bytes), so taking one costs a
//     fsync whatever the state's size. The raft log after it stays the
//     write-ahead log of the state.
//   - Streaming on demand: when raft opens a point snapshot to send it to
//     a follower (InstallSnapshot), stateSnapshots streams the current
//     state instead, from a consistent view of the store, in the snapshot
//     format every other path reads, while applies go on. Its stream
//     header carries the index the state reflects, which may be past the
//     point's: the receiver skips the entries it already holds, as a
//     restart does.
//   - Restore (InstallSnapshot received, or a full stream found newer than
//     the store at start: a previous release's data dir, `snapshot
//     restore`, a crash in the middle of an install) builds a new store
//     beside the live one and swaps it in atomically (statestore's
//     Builder): a crash leaves the old store or the new one, never a mix.

// stateDirName is the state store's directory in the data dir.
const stateDirName = "state"

// appliedKey is raftstore's key in the state store: through, big-endian.
var appliedKey = []byte{fsm.PrefixOwner, 'r'}

// pointMagic starts a point snapshot's 16 bytes; the index follows.
const pointMagic = "MDPOINT1"

// ErrStateBehind is a state store older than the newest snapshot that only
// points at it: the store lost what the snapshot promised (it was deleted
// or replaced). The node cannot rebuild it from its own log, which raft
// compacted past it; the way back is a wipe and a rejoin.
var ErrStateBehind = errors.New("raftstore: the state store is behind the newest snapshot")

// StateError is a failure of the state store: a read or write that failed,
// or a file found corrupt. The node stops; Err names the file when the
// store knows it.
type StateError struct {
	Dir string
	Err error
}

func (e *StateError) Error() string {
	return fmt.Sprintf("raftstore: the state store in %s failed: %v; this node stops and does not retry "+
		"(a failed write may have lost data, a corrupt file must not be served); check the disk and restart the node, "+
		"or wipe its data dir and let it rejoin by snapshot", e.Dir, e.Err)
}

func (e *StateError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrDiskWrite) true: to an operator it is the
// same kind of failure as a log write's.
func (e *StateError) Is(target error) bool { return target == ErrDiskWrite }

// stateStoreConfig is the statestore configuration for a data dir.
func stateStoreConfig(cacheBytes int64, logger *slog.Logger) statestore.Config {
	return statestore.Config{CacheBytes: cacheBytes, Logger: logger}
}

// readApplied reads appliedKey from a store; 0 when absent.
func readApplied(r kv.Reader) (uint64, error) {
	v, ok := r.Get(appliedKey)
	if !ok {
		return 0, nil
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: applied index key of %d bytes", fsm.ErrCorruptSnapshot, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

func writeApplied(st kv.Store, through uint64) {
	st.Set(appliedKey, binary.BigEndian.AppendUint64(nil, through))
}

// pointHeader is a point snapshot's bytes.
func pointHeader(index uint64) [snapshotHeaderSize]byte { return header(pointMagic, index) }

// pointSnapshot is the adapter's raft.FSMSnapshot on a state store.
type pointSnapshot struct {
	store   *statestore.Store
	through uint64
	logger  *slog.Logger
}

// Persist makes the store durable up to through (and beyond), then records
// the point. raft truncates its log only after Persist succeeds, so every
// entry the store may still lose on a crash stays in the log.
func (p *pointSnapshot) Persist(sink raft.SnapshotSink) error {
	err := p.store.Sync()
	if err == nil {
		hdr := pointHeader(p.through)
		_, err = sink.Write(hdr[:])
		crashPoint("point-persist", p.logger)
	}
	if err != nil {
		_ = sink.Cancel()
		if errors.Is(err, statestore.ErrClosed) {
			// Restore swapped in a leader's state after Snapshot took this
			// point: the point is of a state the node no longer holds, and
			// the next snapshot points into the new one.
			return fmt.Errorf("raftstore: persist point snapshot at %d: an installed snapshot replaced the state since it was taken: %w", p.through, err)
		}
		return fmt.Errorf("raftstore: persist point snapshot: %w", err)
	}
	return sink.Close()
}

func (p *pointSnapshot) Release() {}

// stateSnapshots is the snapshot store raft sees when the state is on
// disk: a point snapshot opens as a stream of the current state.
type stateSnapshots struct {
	raft.SnapshotStore
	// stream returns the current state as a snapshot stream and its exact
	// length; the adapter's streamState.
	stream func() (io.ReadCloser, int64, error)
}

func (s *stateSnapshots) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := s.SnapshotStore.Open(id)
	if err != nil {
		return nil, nil, err
	}
	var hdr [snapshotHeaderSize]byte
	n, _ := io.ReadFull(rc, hdr[:])
	if n < len(pointMagic) || !bytes.Equal(hdr[:8], []byte(pointMagic)) {
		// A full stream (received, restored, or a previous release's).
		return meta, readCloser{io.MultiReader(bytes.NewReader(hdr[:n]), rc), rc}, nil
	}
	rc.Close()
	body, size, err := s.stream()
	if err != nil {
		return nil, nil, err
	}
	m := *meta
	m.Size = size
	return &m, body, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}

// checkPoint opens a snapshot of store, which checks its CRC, and reports
// whether it is a point snapshot; a point that names an index below its
// own is corrupt.
func checkPoint(store raft.SnapshotStore, meta *raft.SnapshotMeta) (bool, error) {
	_, rc, err := store.Open(meta.ID)
	if err != nil {
		return false, err
	}
	defer rc.Close()
	var hdr [snapshotHeaderSize]byte
	n, _ := io.ReadFull(rc, hdr[:])
	if n < 8 || string(hdr[:8]) != pointMagic {
		return false, nil
	}
	if through := binary.BigEndian.Uint64(hdr[8:]); n < snapshotHeaderSize || through < meta.Index {
		return false, fmt.Errorf("%w: point snapshot %s names index %d, below its own %d", fsm.ErrCorruptSnapshot, meta.ID, through, meta.Index)
	}
	return true, nil
}

// openState opens the data dir's state store and brings it up to the
// newest snapshot when that is a full stream newer than the store (see the
// top of this file); it refuses a store behind a newer point snapshot.
func openState(dataDir string, cfg statestore.Config, snaps raft.SnapshotStore, logger *slog.Logger, opts []fsm.Option) (*statestore.Store, error) {
	dir := filepath.Join(dataDir, stateDirName)
	st, err := statestore.Open(dir, cfg)
	if err != nil {
		return nil, &StateError{Dir: dir, Err: err}
	}
	applied, err := storeApplied(st)
	if err != nil {
		st.Close()
		return nil, &StateError{Dir: dir, Err: err}
	}
	metas, err := snaps.List()
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("raftstore: snapshots: %w", err)
	}
	if len(metas) == 0 {
		return st, nil
	}
	// The newest snapshot is read back whether or not the store needs it
	// (the snapshot store checks its CRC as it opens it): raft would
	// restore it, or send it, later.
	newest := metas[0]
	point, err := checkPoint(snaps, newest)
	if err != nil {
		st.Close()
		return nil, err
	}
	if newest.Index <= applied {
		return st, nil
	}
	if point {
		st.Close()
		return nil, fmt.Errorf("%w: it holds index %d, snapshot %s is at %d; wipe this node's data dir and let it rejoin",
			ErrStateBehind, applied, newest.ID, newest.Index)
	}
	logger.Info("raftstore: loading the state store from a snapshot newer than it",
		"snapshot", newest.ID, "snapshot_index", newest.Index, "store_index", applied)
	_, rc, err := snaps.Open(newest.ID)
	if err != nil {
		st.Close()
		return nil, err
	}
	defer rc.Close()
	built, err := buildState(dir, cfg, rc, opts, logger)
	if err != nil {
		st.Close()
		return nil, err
	}
	st, _, err = built.swap(st)
	return st, err
}

// storeApplied is readApplied with the store's panics as errors.
func storeApplied(st kv.Reader) (applied uint64, err error) {
	defer kv.Catch(&err)
	return readApplied(st)
}

// builtState is a state store built beside the live one from a full
// snapshot stream, not yet live.
type builtState struct {
	b       *statestore.Builder
	through uint64
	opts    []fsm.Option
	dir     string
}

// buildState reads a full snapshot stream (with its raftstore header) into
// a new store beside the live one. Nothing live changes: the caller swaps
// it in (swap) or drops it (abort).
func buildState(dir string, cfg statestore.Config, rc io.Reader, opts []fsm.Option, logger *slog.Logger) (*builtState, error) {
	through, err := readStreamHeader(rc)
	if err != nil {
		return nil, err
	}
	b, err := statestore.NewBuilder(dir, cfg)
	if err != nil {
		return nil, &StateError{Dir: dir, Err: err}
	}
	bs := b.Store()
	m, err := fsm.RestoreInto(rc, bs, opts...)
	if err == nil && m.AppliedIndex() > through {
		err = fmt.Errorf("%w: machine applied %d beyond header's %d", fsm.ErrCorruptSnapshot, m.AppliedIndex(), through)
	}
	if err == nil {
		err = finishBuild(bs, through)
	}
	if err != nil {
		b.Abort()
		return nil, err
	}
	crashPoint("state-build", logger)
	return &builtState{b: b, through: through, opts: opts, dir: dir}, nil
}

// swap closes old (which may be nil) and makes the built store the live
// one, atomically on disk, and returns it with the machine on it.
func (s *builtState) swap(old *statestore.Store) (*statestore.Store, *fsm.Machine, error) {
	st, err := s.b.Activate()
	if old != nil {
		// The old store's directory goes once no clone reads it.
		if err == nil {
			_ = old.Retire()
		} else {
			_ = old.Close()
		}
	}
	if err != nil {
		return nil, nil, &StateError{Dir: s.dir, Err: err}
	}
	m, err := fsm.Open(st, s.opts...)
	if err != nil {
		st.Close()
		return nil, nil, &StateError{Dir: s.dir, Err: err}
	}
	return st, m, nil
}

// finishBuild records through in the built store and syncs it.
func finishBuild(bs kv.Store, through uint64) (err error) {
	defer kv.Catch(&err)
	writeApplied(bs, through)
	bs.Commit()
	return bs.Sync()
}

// removeStateDir deletes a data dir's state store, for offline tools that
// rebuild it (RestoreDir into a new dir has none).
func removeStateDir(dataDir string) error {
	return os.RemoveAll(filepath.Join(dataDir, stateDirName))
}
