package raftstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/kv"
	"github.com/metad/metad/statestore"
)

// barrierMarker is the Log.Extensions value of the barrier entries this
// package appends (an empty-data LogCommand). Raft's own LogBarrier and
// LogNoop entries are never handed to the FSM, so the FSM cannot tell that
// the log has moved past them; a reader waiting for a commit index that
// ends on one would wait for the next write. Our barrier is a LogCommand,
// so it reaches the adapter, which counts it as applied without giving it
// to the machine. See doc.go ("Applied index").
var barrierMarker = []byte("metad.raftstore.barrier.v1")

func isBarrier(l *raft.Log) bool {
	return l.Type == raft.LogCommand && bytes.Equal(l.Extensions, barrierMarker)
}

// Snapshot stream: a 16-byte header, then fsm's own snapshot format.
//
//	magic    [8]byte "MDRAFT01"
//	through  uint64  big-endian: the adapter's applied index at the snapshot
//
// through can exceed the machine's applied index (the last *command*) when
// barriers or configuration entries followed it; restoring it keeps reads
// that wait for such an index from hanging after a restore.
const (
	snapshotMagic      = "MDRAFT01"
	snapshotHeaderSize = 16
)

// streamHeader returns the snapshot stream header for index.
func streamHeader(index uint64) [snapshotHeaderSize]byte { return header(snapshotMagic, index) }

// header is a 16-byte snapshot header: an 8-byte magic, then the index.
func header(magic string, index uint64) [snapshotHeaderSize]byte {
	var hdr [snapshotHeaderSize]byte
	copy(hdr[:8], magic)
	binary.BigEndian.PutUint64(hdr[8:], index)
	return hdr
}

// fsmAdapter is the raft.BatchingFSM around one *fsm.Machine. Raft's FSM
// goroutine is its only writer; readers synchronise through mu and wait for
// indexes through through/signal.
type fsmAdapter struct {
	// Set at construction, never changed.
	opts   []fsm.Option
	logger *slog.Logger

	// mu guards m. ApplyBatch and Restore hold it for writing; Read,
	// ReadLocal, Snapshot and StateHash for reading.
	mu sync.RWMutex
	m  *fsm.Machine

	// through is the highest log index m reflects: the last entry raft
	// delivered (command, barrier or configuration). It is stored while mu
	// is held for writing, after m changed, so a reader that sees
	// through >= i and then takes mu.RLock sees every command <= i.
	// Invariant: m.AppliedIndex() <= through, and through only grows
	// (a restore to an older snapshot is logged as an error).
	through atomic.Uint64

	// sigMu guards signal, which is closed and replaced each time through
	// advances, waking every waiter at once.
	sigMu  sync.Mutex
	signal chan struct{}

	// observer, when set, follows every applied command (observer.go).
	observer ApplyObserver

	// diverge is how this replica reads a committed command: as it is,
	// but under the planted bug diverge-<node id> (faults_on.go), which
	// renames every stream it creates. Empty in the production build.
	diverge divergence

	// stopped is the first committed entry this binary could not apply
	// (fsm.ErrUnsupported), set under mu; from then on nothing is applied
	// and through stands still. halted receives it once, for the node to
	// stop with the reason.
	stopped error
	halted  chan error

	// level mirrors m.Level() after each batch, for Propose's check
	// without taking mu.
	level atomic.Uint32
	// clusterID mirrors m.ClusterID() the same way, for the transport's
	// identity check (identity.go).
	clusterID atomic.Pointer[string]

	// floor is the index of the state as last opened or restored (under
	// mu). raft delivers the entries after its snapshot's index, and the
	// state may be past it: a state store opened at start holds what it
	// committed, and a streamed snapshot (stateSnapshots) carries the
	// sender's state as it was when the stream began. Entries at or below
	// floor are in the state already and are skipped.
	floor uint64

	// disk is set when the state lives in a state store (state.go); nil
	// for a machine in memory (offline tools, tests).
	disk *diskState
}

// diskState is what an adapter on a state store has.
type diskState struct {
	// store is the live store, under mu like m.
	store *statestore.Store
	dir   string
	cfg   statestore.Config
	// fail latches a failure of the store and stops the node (the data
	// dir's diskFailure).
	fail func(error)
}

// mirror copies what is read without mu; called with mu held for writing.
func (a *fsmAdapter) mirror() {
	a.level.Store(a.m.Level())
	id := a.m.ClusterID()
	a.clusterID.Store(&id)
}

func newFSMAdapter(logger *slog.Logger, opts ...fsm.Option) *fsmAdapter {
	a := &fsmAdapter{opts: opts, logger: logger, m: fsm.New(opts...), signal: make(chan struct{}), halted: make(chan error, 1)}
	a.mirror()
	return a
}

// newDiskAdapter is an adapter on an open state store: it reads the state
// the store holds (the small part into memory; fsm.Open) and the index it
// reflects.
func newDiskAdapter(logger *slog.Logger, st *statestore.Store, dir string, cfg statestore.Config, fail func(error), opts ...fsm.Option) (*fsmAdapter, error) {
	m, err := fsm.Open(st, opts...)
	if err != nil {
		return nil, &StateError{Dir: dir, Err: err}
	}
	through, err := storeApplied(st)
	if err != nil {
		return nil, &StateError{Dir: dir, Err: err}
	}
	if through < m.AppliedIndex() {
		return nil, &StateError{Dir: dir, Err: fmt.Errorf("%w: applied index %d below the machine's %d",
			fsm.ErrCorruptSnapshot, through, m.AppliedIndex())}
	}
	a := newFSMAdapter(logger, opts...)
	a.m = m
	a.disk = &diskState{store: st, dir: dir, cfg: cfg, fail: fail}
	a.floor = through
	a.through.Store(through)
	a.mirror()
	return a, nil
}

// Apply implements raft.FSM for a single entry.
func (a *fsmAdapter) Apply(l *raft.Log) any {
	return a.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch implements raft.BatchingFSM. Raft passes LogCommand and
// LogConfiguration entries, in order and without gaps among those types.
// The response for a command is its *fsmpb.Result; barriers and
// configuration entries answer nil.
func (a *fsmAdapter) ApplyBatch(logs []*raft.Log) []any {
	all := make([]any, len(logs))
	out := all
	a.mu.Lock()
	// Entries the state holds already (floor).
	skip := 0
	for skip < len(logs) && logs[skip].Index <= a.floor {
		skip++
	}
	logs, out = logs[skip:], out[skip:]
	if a.disk != nil {
		a.applyToStore(logs, out)
	} else {
		a.applyBatch(logs, out)
	}
	a.mirror()
	a.mu.Unlock()
	a.wake()
	return all
}

// applyToStore is applyBatch on a state store: the batch's changes and the
// index they bring the state to go to the store as one atomic commit. A
// failure of the store (kv.Error) stops the node: nothing more is
// applied, and the uncommitted changes never reach the disk.
func (a *fsmAdapter) applyToStore(logs []*raft.Log, out []any) {
	if len(logs) == 0 || a.stopped != nil {
		a.applyBatch(logs, out)
		return
	}
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		e := kv.ErrorOf(r)
		if e == nil {
			panic(r)
		}
		err := &StateError{Dir: a.disk.dir, Err: e}
		a.stopped = err
		for i := range out {
			out[i] = err
		}
		a.logger.Error("raftstore: the state store failed; stopping", "err", err)
		a.disk.fail(err)
	}()
	before := a.through.Load()
	a.applyBatch(logs, out)
	if through := a.through.Load(); through != before {
		writeApplied(a.disk.store, through)
		a.disk.store.Commit()
	}
}

// applyBatch applies logs to the machine, with mu held.
func (a *fsmAdapter) applyBatch(logs []*raft.Log, out []any) {
	for i, l := range logs {
		if a.stopped != nil {
			// Nothing after an unsupported entry is applied; a proposer
			// waiting on one learns why.
			out[i] = a.stopped
			continue
		}
		if prev := a.through.Load(); l.Index <= prev {
			panic(fmt.Sprintf("raftstore: raft delivered entry %d after %d", l.Index, prev))
		}
		if l.Type == raft.LogCommand && !isBarrier(l) {
			res, err := a.applyEntry(l.Index, a.diverge.command(l.Data))
			if err != nil {
				a.stop(err)
				out[i] = err
				continue
			}
			out[i] = res
		}
		a.through.Store(l.Index)
	}
}

// stop records an entry this binary cannot apply (see
// fsm.Machine.ApplyEntry): the replica must stop, never skip it and
// diverge. Called with mu held.
func (a *fsmAdapter) stop(err error) {
	a.stopped = err
	a.logger.Error("raftstore: stopped applying the log: a committed entry needs a newer metad; "+
		"upgrade this node's binary and restart it (the entry stays in the log and is applied then)", "err", err)
	a.halted <- err
}

// stoppedErr is the error that stopped the adapter, or nil.
func (a *fsmAdapter) stoppedErr() error {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.stopped
}

func (a *fsmAdapter) wake() {
	a.sigMu.Lock()
	close(a.signal)
	a.signal = make(chan struct{})
	a.sigMu.Unlock()
}

// Snapshot implements raft.FSM: a copy-on-write clone taken under the read
// lock, written out later by Persist while Apply goes on.
//
// On a state store it is a point snapshot (state.go): the index alone,
// recorded once the store is synced.
func (a *fsmAdapter) Snapshot() (raft.FSMSnapshot, error) {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.disk != nil {
		return &pointSnapshot{store: a.disk.store, through: a.through.Load(), logger: a.logger}, nil
	}
	return &adapterSnapshot{m: a.m.Clone(), through: a.through.Load()}, nil
}

// clone is a point-in-time copy of the state to stream (Checkpoint,
// StateHash, InstallSnapshot's sender): Release it when done, which on a
// state store lets go of its view of the store.
func (a *fsmAdapter) clone() *adapterSnapshot {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return &adapterSnapshot{m: a.m.Clone(), through: a.through.Load()}
}

// streamState returns the current state as a snapshot stream (raftstore
// header, then fsm's format) and its exact length, for raft to send a
// follower. It walks a clone once to learn the length and the checksum,
// then streams a second walk of the same clone as it is read; applies go
// on meanwhile.
func (a *fsmAdapter) streamState() (io.ReadCloser, int64, error) {
	c := a.clone()
	plan, err := c.m.PlanSnapshot()
	if err != nil {
		c.Release()
		return nil, 0, fmt.Errorf("raftstore: stream state: %w", err)
	}
	pr, pw := io.Pipe()
	go func() {
		defer c.Release()
		hdr := streamHeader(c.through)
		_, err := pw.Write(hdr[:])
		if err == nil {
			err = c.m.WritePlanned(&halfway{w: pw, at: plan.Size / 2, logger: a.logger}, plan)
		}
		pw.CloseWithError(err)
	}()
	return pr, snapshotHeaderSize + plan.Size, nil
}

// Restore implements raft.FSM: read the whole snapshot into a new machine,
// verify it, and only then swap it in under the write lock.
func (a *fsmAdapter) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	if a.disk != nil {
		return a.restoreToStore(rc)
	}
	through, err := readStreamHeader(rc)
	if err != nil {
		return fmt.Errorf("raftstore: restore: %w", err)
	}
	m, err := fsm.Restore(rc, a.opts...)
	if err != nil {
		return fmt.Errorf("raftstore: restore: %w", err)
	}
	if m.AppliedIndex() > through {
		return fmt.Errorf("raftstore: restore: %w: machine applied %d beyond header's %d",
			fsm.ErrCorruptSnapshot, m.AppliedIndex(), through)
	}
	a.mu.Lock()
	prev := a.through.Load()
	a.m = m
	a.floor = through
	a.through.Store(through)
	a.mirror()
	if a.observer != nil {
		a.observer.Restored(through)
	}
	a.mu.Unlock()
	if through < prev {
		a.logger.Error("raftstore: restored a snapshot older than the applied state; reads may go back in time",
			"snapshot_index", through, "applied_index", prev)
	}
	a.wake()
	a.logger.Info("raftstore: state restored from a snapshot", "index", through, "applied_command", m.AppliedIndex())
	return nil
}

// restoreToStore is Restore on a state store: the stream is built into a
// new store beside the live one, outside the lock (reads go on from the
// old state), then swapped in under it. A stream that fails leaves the
// live store as it was.
func (a *fsmAdapter) restoreToStore(rc io.Reader) error {
	built, err := buildState(a.disk.dir, a.disk.cfg, rc, a.opts, a.logger)
	if err != nil {
		return fmt.Errorf("raftstore: restore: %w", err)
	}
	a.mu.Lock()
	prev := a.through.Load()
	st, m, err := built.swap(a.disk.store)
	if err != nil {
		// The old store is closed and the new one did not open: nothing
		// can be served, and nothing applied.
		a.stopped = err
		a.mu.Unlock()
		a.disk.fail(err)
		return fmt.Errorf("raftstore: restore: %w", err)
	}
	a.m, a.disk.store, a.floor = m, st, built.through
	a.through.Store(built.through)
	a.mirror()
	if a.observer != nil {
		a.observer.Restored(built.through)
	}
	a.mu.Unlock()
	if built.through < prev {
		a.logger.Error("raftstore: restored a snapshot older than the applied state; reads may go back in time",
			"snapshot_index", built.through, "applied_index", prev)
	}
	a.wake()
	a.logger.Info("raftstore: state store rebuilt from a snapshot", "index", built.through, "applied_command", m.AppliedIndex())
	return nil
}

// stateStats are the state store's figures for the metrics; zero without
// one.
func (a *fsmAdapter) stateStats() statestore.Stats {
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.disk == nil || a.disk.store == nil {
		return statestore.Stats{}
	}
	return a.disk.store.Stats()
}

// close closes the state store, if any.
func (a *fsmAdapter) close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.disk == nil || a.disk.store == nil {
		return nil
	}
	err := a.disk.store.Close()
	a.disk.store = nil
	return err
}

// appliedIndex is the highest log index the machine reflects.
func (a *fsmAdapter) appliedIndex() uint64 { return a.through.Load() }

// waitApplied blocks until appliedIndex() >= index, ctx ends, or stop is
// closed.
func (a *fsmAdapter) waitApplied(ctx context.Context, index uint64, stop <-chan struct{}) error {
	for {
		if a.through.Load() >= index {
			return nil
		}
		a.sigMu.Lock()
		sig := a.signal
		a.sigMu.Unlock()
		// Re-check after taking the signal: an advance between the first
		// check and here closed the old channel, not this one.
		if a.through.Load() >= index {
			return nil
		}
		select {
		case <-sig:
		case <-ctx.Done():
			return fmt.Errorf("%w: waiting for index %d to be applied (at %d): %w",
				ErrTimeout, index, a.through.Load(), ctx.Err())
		case <-stop:
			return fmt.Errorf("%w: waiting for index %d to be applied", ErrClosed, index)
		}
	}
}

// read runs fn on the machine under the read lock.
func (a *fsmAdapter) read(fn func(*fsm.Machine) error) error {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return fn(a.m)
}

type adapterSnapshot struct {
	m       *fsm.Machine
	through uint64
}

// Persist writes the header and the machine to the sink, cancelling the sink
// on any error so raft discards the partial snapshot.
func (s *adapterSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := s.write(sink); err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("raftstore: persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s *adapterSnapshot) write(w io.Writer) error {
	hdr := streamHeader(s.through)
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	return s.m.WriteSnapshot(w)
}

// Release implements raft.FSMSnapshot: a clone in memory is garbage once
// dropped; one on a state store lets go of its view.
func (s *adapterSnapshot) Release() { s.m.Close() }

// halfway passes writes through, stopping at the crash point state-stream
// once at bytes have gone by (faults_on.go; nothing in production).
type halfway struct {
	w      io.Writer
	at, n  int64
	logger *slog.Logger
}

func (h *halfway) Write(p []byte) (int, error) {
	n, err := h.w.Write(p)
	if h.n < h.at && h.n+int64(n) >= h.at {
		crashPoint("state-stream", h.logger)
	}
	h.n += int64(n)
	return n, err
}
