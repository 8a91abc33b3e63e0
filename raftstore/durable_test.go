package raftstore

import (
	"context"
	"errors"
	"io/fs"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hashicorp/raft"
)

// failingLog is an in-memory log store whose writes fail while err is set,
// counting the writes that reached it.
type failingLog struct {
	*raft.InmemStore
	err    error
	writes int
}

func (l *failingLog) StoreLogs(logs []*raft.Log) error {
	l.writes++
	if l.err != nil {
		return l.err
	}
	return l.InmemStore.StoreLogs(logs)
}

// The first failed write is latched, named and delivered once; no later
// write reaches the store, even once the disk would take it again.
func TestFailedLogWriteIsLatchedNeverRetried(t *testing.T) {
	inner := &failingLog{InmemStore: raft.NewInmemStore()}
	f := newDiskFailure()
	log := &durableLog{LogStore: inner, f: f, path: "/data/raft/wal"}
	if err := log.StoreLogs([]*raft.Log{{Index: 1}}); err != nil {
		t.Fatal(err)
	}
	inner.err = &fs.PathError{Op: "sync", Path: "/data/raft/wal/0001.wal", Err: syscall.EIO}
	err := log.StoreLogs([]*raft.Log{{Index: 2}})
	var dwe *DiskWriteError
	if !errors.As(err, &dwe) || !errors.Is(err, ErrDiskWrite) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("failed write: %v, want a DiskWriteError matching ErrDiskWrite and EIO", err)
	}
	if dwe.Path != "/data/raft/wal/0001.wal" || dwe.Store != "raft log" {
		t.Fatalf("named %s of the %s, want the segment the OS named", dwe.Path, dwe.Store)
	}
	select {
	case got := <-f.ch:
		if !errors.Is(got, ErrDiskWrite) {
			t.Fatalf("delivered %v", got)
		}
	default:
		t.Fatal("the failure was not delivered")
	}

	inner.err = nil
	for _, write := range []func() error{
		func() error { return log.StoreLogs([]*raft.Log{{Index: 2}}) },
		func() error { return log.StoreLog(&raft.Log{Index: 2}) },
		func() error { return log.DeleteRange(1, 1) },
		func() error {
			return (&durableStable{StableStore: inner.InmemStore, f: f, path: "raft.db"}).SetUint64([]byte("k"), 1)
		},
	} {
		if err := write(); !errors.Is(err, ErrDiskWrite) {
			t.Fatalf("a write after the failure: %v, want the latched failure", err)
		}
	}
	if inner.writes != 2 {
		t.Fatalf("%d writes reached the store, want 2: a failed write must never be retried", inner.writes)
	}
	select {
	case got := <-f.ch:
		t.Fatalf("delivered a second time: %v", got)
	default:
	}
	if last, _ := inner.LastIndex(); last != 1 {
		t.Fatalf("last index %d, want 1", last)
	}
}

// A failure without a path names the store's own file.
func TestFailedStableWriteNamesTheStore(t *testing.T) {
	f := newDiskFailure()
	st := &durableStable{StableStore: errStable{}, f: f, path: "/data/raft/raft.db"}
	var dwe *DiskWriteError
	if err := st.Set([]byte("CurrentTerm"), []byte{1}); !errors.As(err, &dwe) || dwe.Path != "/data/raft/raft.db" || dwe.Store != "stable store" {
		t.Fatalf("%v, want a DiskWriteError naming /data/raft/raft.db", err)
	}
}

type errStable struct{ raft.StableStore }

func (errStable) Set([]byte, []byte) error { return errors.New("bolt: write failed") }

type monotonicLog struct{ *raft.InmemStore }

func (monotonicLog) IsMonotonic() bool { return true }

// raft deletes the whole log after installing a snapshot only if its log
// store says it is monotonic (raft-wal is): the wrapper must pass it on.
func TestDurableLogPassesMonotonicOn(t *testing.T) {
	if !(&durableLog{LogStore: monotonicLog{raft.NewInmemStore()}}).IsMonotonic() {
		t.Fatal("a monotonic log store lost IsMonotonic behind durableLog")
	}
	if (&durableLog{LogStore: raft.NewInmemStore()}).IsMonotonic() {
		t.Fatal("a store that is not monotonic became one")
	}
}

// armedLog fails every write with EIO once fail is set.
type armedLog struct {
	raft.LogStore
	fail atomic.Bool
}

func (l *armedLog) eio() error {
	return &fs.PathError{Op: "write", Path: "/data/raft/wal/0001.wal", Err: syscall.EIO}
}

func (l *armedLog) StoreLog(log *raft.Log) error {
	if l.fail.Load() {
		return l.eio()
	}
	return l.LogStore.StoreLog(log)
}

func (l *armedLog) StoreLogs(logs []*raft.Log) error {
	if l.fail.Load() {
		return l.eio()
	}
	return l.LogStore.StoreLogs(logs)
}

// TestFailedLogWriteStopsRaftAtOnce: raft is stopped as the latch trips,
// before DiskFailed delivers the failure. Left running, raft answers the
// refused log write by stepping down and standing for election, and the
// stable store's refusal to record the new term makes hashicorp/raft panic:
// the process dies with status 2 instead of the node's orderly exit 1, and
// its vote requests disturb the others while the node drains.
func TestFailedLogWriteStopsRaftAtOnce(t *testing.T) {
	armed := &armedLog{}
	c := newCluster(t, 1, func(_ int, _ *Config, o *openOptions) {
		o.wrapLog = func(inner raft.LogStore) raft.LogStore { armed.LogStore = inner; return armed }
	})
	s := c.store(0)
	c.propose(createStream("before"))
	term := s.raft.CurrentTerm()
	armed.fail.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if _, err := s.Propose(ctx, createStream("after")); err == nil {
		t.Fatal("a proposal whose log write failed was acknowledged")
	}
	select {
	case err := <-s.DiskFailed():
		if !errors.Is(err, ErrDiskWrite) {
			t.Fatalf("DiskFailed delivered %v, want ErrDiskWrite", err)
		}
	case <-ctx.Done():
		t.Fatal("the failed write was never delivered")
	}
	if s.raftStopped == nil {
		t.Fatal("raft was still running when the failure was delivered")
	}
	if err := s.raftStopped.Error(); err != nil { // raft's goroutines have exited
		t.Fatal(err)
	}
	if got := s.raft.CurrentTerm(); got != term {
		t.Errorf("term %d after the failure, want %d: raft stood for election over the failed store", got, term)
	}
}
