package raftstore

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

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
