package raftstore

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"

	"github.com/hashicorp/raft"
)

// ErrDiskWrite: a write or an fsync of the raft log or the stable store
// failed. The store refuses every later write and the node must stop
// (Store.DiskFailed): the failure is never retried.
var ErrDiskWrite = errors.New("raftstore: a write to the data dir failed")

// DiskWriteError names the store and the file whose write or fsync failed;
// it matches ErrDiskWrite and unwraps to the operating system's error.
//
// Why a failed write is never retried: after a failed fsync the kernel may
// have dropped the dirty pages it could not write and marked them clean, so
// a second fsync succeeds with the data gone (PostgreSQL's "fsyncgate").
// raft answers a failed log write by stepping down, and the node would win
// its election again and write on over a hole. Stopping instead leaves a
// node that restarts from what the disk really holds: raft-wal and bbolt
// check what they read back on open, and anything the node lost it has
// never acknowledged to the leader, which counts only the followers whose
// log writes succeeded.
type DiskWriteError struct {
	Store string // "raft log" or "stable store"
	Path  string // the file the operating system named, else the store's
	Err   error
}

func (e *DiskWriteError) Error() string {
	return fmt.Sprintf("raftstore: writing the %s failed at %s: %v; this node stops and does not retry the write "+
		"(a failed fsync may have dropped data the kernel reported written); check the disk, then restart the node: "+
		"it opens from its last durable state", e.Store, e.Path, e.Err)
}

func (e *DiskWriteError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrDiskWrite) true.
func (e *DiskWriteError) Is(target error) bool { return target == ErrDiskWrite }

// diskFailure latches the first failed write of a data dir's stores.
// Invariant: once failed is set, no write reaches either store again.
type diskFailure struct {
	mu     sync.Mutex
	failed error      // a *DiskWriteError, or a corrupt read (*CorruptLogError, *CorruptSnapshotError, *CorruptStableError)
	ch     chan error // receives failed, once
	// stop, once set (onFail), runs when failed is set: it stops raft at
	// once, before raft, refused its log write, steps down and tries to
	// start an election over a store that refuses to record the term (it
	// would panic, and its vote requests would disturb the others while
	// the node drains). It must not block: it runs on raft's goroutine.
	stop func()
}

// onFail sets stop, and runs it now if a failure is already latched.
func (f *diskFailure) onFail(stop func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stop = stop
	if f.failed != nil {
		stop()
	}
}

// latch records err as the failure, stops raft and delivers err (so a
// receiver of ch sees raft stopped). Called with mu held and failed nil.
func (f *diskFailure) latch(err error) {
	f.failed = err
	if f.stop != nil {
		f.stop()
	}
	f.ch <- err
}

func newDiskFailure() *diskFailure { return &diskFailure{ch: make(chan error, 1)} }

// do runs write unless a write has failed before; a failure of write is
// latched, named (the OS's path, else path) and delivered on ch.
func (f *diskFailure) do(store, path string, write func() error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed != nil {
		return f.failed
	}
	err := write()
	if err == nil {
		return nil
	}
	// The fault seam (faults_off.go): the failure is latched.
	return plantedWriteFailed(err, func() error {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			path = pe.Path
		}
		f.latch(&DiskWriteError{Store: store, Path: path, Err: err})
		return f.failed
	})
}

// corrupt latches a corrupt read (no later write reaches the disk) and
// delivers it, unless a failure came first.
func (f *diskFailure) corrupt(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed == nil {
		f.latch(err)
	}
}

// err is the latched failure, or nil.
func (f *diskFailure) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

// durableLog is a raft.LogStore whose writes go through a diskFailure.
// Reads pass through: what is on disk was checked by the store on open.
type durableLog struct {
	raft.LogStore
	f    *diskFailure
	path string
}

// IsMonotonic passes raft.MonotonicLogStore through (raft-wal is one:
// after installing a snapshot raft must delete the whole log, not leave a
// gap).
func (l *durableLog) IsMonotonic() bool {
	m, ok := l.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

func (l *durableLog) StoreLog(log *raft.Log) error {
	return l.StoreLogs([]*raft.Log{log})
}

// StoreLogs stores sealed copies (logcheck.go); the entries raft holds
// stay as they are.
func (l *durableLog) StoreLogs(logs []*raft.Log) error {
	out := make([]*raft.Log, len(logs))
	for i, log := range logs {
		out[i] = sealed(log)
	}
	return l.f.do("raft log", l.path, func() error { return l.LogStore.StoreLogs(out) })
}

// GetLog reads an entry back and checks it against its checksum. A
// mismatch is latched like a failed write: the node stops (raft itself
// panics when it cannot read an entry it must apply).
func (l *durableLog) GetLog(index uint64, log *raft.Log) error {
	if err := l.LogStore.GetLog(index, log); err != nil {
		return err
	}
	if err := unseal(log, l.path); err != nil {
		l.f.corrupt(err)
		return err
	}
	return nil
}

func (l *durableLog) DeleteRange(lo, hi uint64) error {
	return l.f.do("raft log", l.path, func() error { return l.LogStore.DeleteRange(lo, hi) })
}

// durableStable is a raft.StableStore whose writes go through a
// diskFailure (raft itself panics when it cannot record a term or a vote;
// the latch names the file first).
type durableStable struct {
	raft.StableStore
	f    *diskFailure
	path string
}

func (s *durableStable) Set(key, val []byte) error {
	return s.f.do("stable store", s.path, func() error { return s.StableStore.Set(key, val) })
}

func (s *durableStable) SetUint64(key []byte, val uint64) error {
	return s.f.do("stable store", s.path, func() error { return s.StableStore.SetUint64(key, val) })
}
