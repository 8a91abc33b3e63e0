package raftstore

import (
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/watch"
)

// BenchmarkApplyAppend measures the adapter's apply of one CommitAppend,
// without an observer, with the watch hub and no watchers (the ring
// append only), and with 10 watchers of the stream being drained.
func BenchmarkApplyAppend(b *testing.B) {
	for _, mode := range []string{"no-observer", "hub", "hub-10-watchers"} {
		b.Run(mode, func(b *testing.B) {
			a := newFSMAdapter(slog.New(slog.DiscardHandler))
			var h *watch.Hub
			if mode != "no-observer" {
				cfg := watch.DefaultConfig()
				cfg.Buffer = 1 << 16 // no watcher is cut off within 65536 appends
				var err error
				h, err = watch.New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				a.observer = h
				if mode == "hub-10-watchers" {
					for range 10 {
						w, _, err := h.Subscribe(1, 0, 0)
						if err != nil {
							b.Fatal(err)
						}
						go func() {
							for range w.Events() {
							}
						}()
					}
				}
			}
			obj := &fsmpb.ObjectRef{Key: "k", Identity: "i"}
			index := uint64(0)
			entry := func(cmd *fsmpb.Command) *raft.Log {
				data, err := proto.Marshal(cmd)
				if err != nil {
					b.Fatal(err)
				}
				index++
				return &raft.Log{Index: index, Type: raft.LogCommand, Data: data}
			}
			a.ApplyBatch([]*raft.Log{
				entry(&fsmpb.Command{Op: &fsmpb.Command_CreateStream{CreateStream: &fsmpb.CreateStream{Name: "s"}}}),
				entry(&fsmpb.Command{Op: &fsmpb.Command_RegisterObject{RegisterObject: &fsmpb.RegisterObject{Object: obj, Size: 1 << 30}}}),
				entry(&fsmpb.Command{Op: &fsmpb.Command_OpenForWrite{OpenForWrite: &fsmpb.OpenForWrite{StreamId: 1}}}),
			})
			logs := make([]*raft.Log, b.N)
			for i := range logs {
				logs[i] = entry(&fsmpb.Command{Op: &fsmpb.Command_CommitAppend{CommitAppend: &fsmpb.CommitAppend{
					StreamId: 1, WriterEpoch: 1, ExpectedStart: uint64(i), End: uint64(i + 1), Object: obj,
					Bytes: &fsmpb.ByteRange{Offset: uint64(i), Length: 1}}}})
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range logs {
				out := a.ApplyBatch(logs[i : i+1])
				if res := out[0].(*fsmpb.Result); res.Rejection != nil {
					b.Fatal(fmt.Sprint(res.Rejection))
				}
			}
			b.StopTimer()
			if h != nil {
				// Watchers cut off as slow consumers stop costing fan-out.
				b.ReportMetric(float64(h.Cutoffs()), "cutoffs")
			}
		})
	}
}

// recordingObserver records what the adapter tells its observer.
type recordingObserver struct {
	mu       sync.Mutex
	restored []uint64
	applied  []uint64
	// appliedBeforeRestore counts Applied calls before the first Restored.
	appliedBeforeRestore int
}

func (r *recordingObserver) Applied(_ *fsm.Machine, index uint64, _ *fsmpb.Command, _ *fsmpb.Result) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applied = append(r.applied, index)
	if len(r.restored) == 0 {
		r.appliedBeforeRestore++
	}
}

func (r *recordingObserver) Restored(index uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.restored = append(r.restored, index)
}

// TestObserverSeesRestoreThenReplay: a restarted node's observer is told
// where its state begins first (Restored: the state store's index, which
// holds every command applied before the stop, so raft does not replay
// them), then of every command after it through Apply (which is how the
// watch hub rebuilds its rings), and of nothing the state already held.
func TestObserverSeesRestoreThenReplay(t *testing.T) {
	recs := []*recordingObserver{{}, {}, {}}
	c := newCluster(t, 3, func(i int, _ *Config, o *openOptions) { o.observer = recs[i] })
	for i := range 5 {
		c.propose(createStream(fmt.Sprintf("a%d", i)))
	}
	c.converge()
	f := (c.index(c.leader()) + 1) % 3
	if err := c.store(f).raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	var before uint64
	for i := range 5 {
		res, _ := c.propose(createStream(fmt.Sprintf("b%d", i)))
		before = res.Version
	}
	c.converge()
	rec := &recordingObserver{}
	c.nodes[f].opts.observer = rec
	c.restart(f)
	var after []uint64
	for i := range 5 {
		res, _ := c.propose(createStream(fmt.Sprintf("c%d", i)))
		after = append(after, res.Version)
	}
	c.converge()
	waitFor(t, "the restarted node to apply the last command", func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.applied) > 0 && rec.applied[len(rec.applied)-1] >= after[len(after)-1]
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.restored) != 1 || rec.appliedBeforeRestore != 0 {
		t.Fatalf("restores %v, %d applies before the first: want one restore before any apply", rec.restored, rec.appliedBeforeRestore)
	}
	start := rec.restored[0]
	if start < before || start >= after[0] {
		t.Fatalf("state began at %d: want the stop's state (>= %d), before the first command after the restart (%d)", start, before, after[0])
	}
	seen := map[uint64]bool{}
	for i, idx := range rec.applied {
		if idx <= start || (i > 0 && idx <= rec.applied[i-1]) {
			t.Fatalf("applied %v after the state began at %d: not all after it and increasing", rec.applied, start)
		}
		seen[idx] = true
	}
	for _, idx := range after {
		if !seen[idx] {
			t.Fatalf("command at %d (after the restart) was not applied to the observer: %v", idx, rec.applied)
		}
	}
}
