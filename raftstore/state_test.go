package raftstore

import (
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/statestore"
)

// TestPointSnapshotOfAReplacedStateIsCancelled: raft takes a snapshot
// (Snapshot, on the FSM goroutine) and persists it later on its own
// goroutine; an InstallSnapshot restored in between swaps in a new store
// and closes the one the point was taken of. Persist must then cancel the
// snapshot, not sync a closed database (which panicked the node in
// bench/capacity's wiped follower at 10M records), and the next snapshot
// points into the new store.
func TestPointSnapshotOfAReplacedStateIsCancelled(t *testing.T) {
	dir := filepath.Join(t.TempDir(), stateDirName)
	cfg := stateStoreConfig(1<<20, nil)
	st, err := statestore.Open(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	a, err := newDiskAdapter(slog.New(slog.DiscardHandler), st, dir, cfg, func(err error) { t.Errorf("store failure: %v", err) }, fsm.WithInvariantChecks())
	if err != nil {
		t.Fatal(err)
	}
	defer a.close()
	a.ApplyBatch([]*raft.Log{commandLog(t, 1, createStream("a")), commandLog(t, 2, createStream("b"))})

	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	stream, _, err := a.streamState()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Restore(stream); err != nil {
		t.Fatalf("restore: %v", err)
	}

	var sink memSink
	err = snap.Persist(&sink)
	if !errors.Is(err, statestore.ErrClosed) || !sink.cancelled || sink.closed {
		t.Fatalf("persist of a point into the replaced store: %v (cancelled %v, closed %v); want ErrClosed and the sink cancelled", err, sink.cancelled, sink.closed)
	}
	snap.Release()

	next, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var sink2 memSink
	if err := next.Persist(&sink2); err != nil || !sink2.closed {
		t.Fatalf("persist of a point into the new store: %v (closed %v)", err, sink2.closed)
	}
	if got := sink2.Bytes(); len(got) != snapshotHeaderSize || string(got[:8]) != pointMagic {
		t.Fatalf("the new point snapshot is %x, want %s and the index", got, pointMagic)
	}
}
