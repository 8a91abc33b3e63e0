package raftstore

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

func commandLog(t *testing.T, index uint64, cmd *fsmpb.Command) *raft.Log {
	t.Helper()
	data, err := proto.Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	return &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: data}
}

func newTestAdapter() *fsmAdapter {
	return newFSMAdapter(slog.New(slog.DiscardHandler), fsm.WithInvariantChecks())
}

func TestAdapterAppliesCommandsOnly(t *testing.T) {
	a := newTestAdapter()
	out := a.ApplyBatch([]*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogConfiguration},
		commandLog(t, 2, createStream("a")),
		{Index: 3, Term: 1, Type: raft.LogCommand, Extensions: barrierMarker},
		commandLog(t, 4, createStream("b")),
	})
	if out[0] != nil || out[2] != nil {
		t.Errorf("configuration and barrier entries answered %v, %v; want nil", out[0], out[2])
	}
	for _, i := range []int{1, 3} {
		res, ok := out[i].(*fsmpb.Result)
		if !ok || res.Rejection != nil || res.Version != uint64(i+1) {
			t.Errorf("entry %d answered %v", i+1, out[i])
		}
	}
	if a.appliedIndex() != 4 {
		t.Errorf("applied index %d, want 4", a.appliedIndex())
	}
	// A trailing barrier advances the applied index without touching the
	// machine: that is what lets a read wait for a commit index ending on it.
	a.Apply(&raft.Log{Index: 5, Term: 2, Type: raft.LogCommand, Extensions: barrierMarker})
	var machineIndex uint64
	_ = a.read(func(m *fsm.Machine) error { machineIndex = m.AppliedIndex(); return nil })
	if a.appliedIndex() != 5 || machineIndex != 4 {
		t.Errorf("after a barrier: adapter at %d, machine at %d; want 5 and 4", a.appliedIndex(), machineIndex)
	}
}

// TestAdapterStopsOnUndecodableEntry: an entry this binary cannot apply
// stops the adapter (reported once on halted), never a panic and never a
// skip: nothing after it is applied, and every later entry answers the
// same error.
func TestAdapterStopsOnUndecodableEntry(t *testing.T) {
	for name, bad := range map[string]*raft.Log{
		"undecodable": {Index: 2, Type: raft.LogCommand, Data: []byte{0xff, 0xff}},
		"empty":       {Index: 2, Type: raft.LogCommand},
	} {
		t.Run(name, func(t *testing.T) {
			a := newTestAdapter()
			out := a.ApplyBatch([]*raft.Log{commandLog(t, 1, createStream("a")), bad, commandLog(t, 3, createStream("b"))})
			for _, i := range []int{1, 2} {
				if err, ok := out[i].(error); !ok || !errors.Is(err, fsm.ErrUnsupported) {
					t.Errorf("entry %d answered %v, want fsm.ErrUnsupported", i+1, out[i])
				}
			}
			if a.appliedIndex() != 1 {
				t.Errorf("applied index %d, want 1: nothing after the bad entry", a.appliedIndex())
			}
			select {
			case err := <-a.halted:
				if !errors.Is(err, fsm.ErrUnsupported) {
					t.Errorf("halted with %v", err)
				}
			default:
				t.Error("the adapter did not report that it stopped")
			}
		})
	}
}

func TestAdapterPanicsOnReplayedEntry(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic")
		}
	}()
	newTestAdapter().ApplyBatch([]*raft.Log{commandLog(t, 1, createStream("a")), commandLog(t, 1, createStream("b"))})
}

// memSink is a raft.SnapshotSink in memory.
type memSink struct {
	bytes.Buffer
	failWrite         bool
	closed, cancelled bool
}

func (s *memSink) Write(p []byte) (int, error) {
	if s.failWrite {
		return 0, errors.New("disk full")
	}
	return s.Buffer.Write(p)
}
func (s *memSink) Close() error  { s.closed = true; return nil }
func (s *memSink) ID() string    { return "mem" }
func (s *memSink) Cancel() error { s.cancelled = true; return nil }

func TestAdapterSnapshotRoundTrip(t *testing.T) {
	a := newTestAdapter()
	a.ApplyBatch([]*raft.Log{commandLog(t, 1, createStream("a")), commandLog(t, 2, createStream("b")),
		{Index: 3, Type: raft.LogCommand, Extensions: barrierMarker}})
	snap, err := a.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	// Applies after Snapshot do not leak into it.
	a.Apply(commandLog(t, 4, createStream("c")))
	var sink memSink
	if err := snap.Persist(&sink); err != nil || !sink.closed || sink.cancelled {
		t.Fatalf("persist: %v (closed %v, cancelled %v)", err, sink.closed, sink.cancelled)
	}
	snap.Release()

	b := newTestAdapter()
	if err := b.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatalf("restore: %v", err)
	}
	if b.appliedIndex() != 3 {
		t.Errorf("restored applied index %d, want the snapshot's 3 (barrier included)", b.appliedIndex())
	}
	_ = b.read(func(m *fsm.Machine) error {
		if _, ok := m.StreamByName("b"); !ok {
			t.Error("restored machine misses b")
		}
		if _, ok := m.StreamByName("c"); ok {
			t.Error("restored machine has c, applied after the snapshot")
		}
		return nil
	})
	// Same commands from there on give the same state as the original.
	b.Apply(commandLog(t, 4, createStream("c")))
	var ha, hb [32]byte
	_ = a.read(func(m *fsm.Machine) error { ha, _, _ = m.StateHash(); return nil })
	_ = b.read(func(m *fsm.Machine) error { hb, _, _ = m.StateHash(); return nil })
	if ha != hb {
		t.Error("state after restore + replay differs from the original")
	}
}

func TestAdapterRestoreRefusesBadSnapshots(t *testing.T) {
	a := newTestAdapter()
	a.Apply(commandLog(t, 7, createStream("a")))
	snap, _ := a.Snapshot()
	var sink memSink
	if err := snap.Persist(&sink); err != nil {
		t.Fatal(err)
	}
	good := sink.Bytes()
	behind := append([]byte(nil), good...)
	behind[15] = 6 // header's applied index below the machine's 7
	for name, data := range map[string][]byte{
		"short header": good[:10],
		"bad magic":    append([]byte("XXXXXXXX"), good[8:]...),
		"truncated":    good[:len(good)-5],
		"index behind": behind,
	} {
		b := newTestAdapter()
		if err := b.Restore(io.NopCloser(bytes.NewReader(data))); err == nil {
			t.Errorf("%s: restore accepted it", name)
		}
		if b.appliedIndex() != 0 {
			t.Errorf("%s: a failed restore changed the state", name)
		}
	}
}

func TestAdapterPersistCancelsSinkOnError(t *testing.T) {
	a := newTestAdapter()
	a.Apply(commandLog(t, 1, createStream("a")))
	snap, _ := a.Snapshot()
	sink := &memSink{failWrite: true}
	if err := snap.Persist(sink); err == nil || !sink.cancelled || sink.closed {
		t.Errorf("persist to a failing sink: %v (cancelled %v, closed %v)", err, sink.cancelled, sink.closed)
	}
}

func TestAdapterWaitApplied(t *testing.T) {
	a := newTestAdapter()
	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- a.waitApplied(context.Background(), 2, stop) }()
	a.Apply(commandLog(t, 1, createStream("a")))
	select {
	case err := <-done:
		t.Fatalf("waitApplied(2) returned %v at index 1", err)
	default:
	}
	a.Apply(&raft.Log{Index: 2, Type: raft.LogConfiguration})
	if err := <-done; err != nil {
		t.Fatalf("waitApplied: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := a.waitApplied(ctx, 3, stop); !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waitApplied past its deadline: %v", err)
	}
	close(stop)
	if err := a.waitApplied(context.Background(), 3, stop); !errors.Is(err, ErrClosed) {
		t.Errorf("waitApplied on a stopped store: %v", err)
	}
}
