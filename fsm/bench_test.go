package fsm

// Benchmarks (they run only with -bench):
//
//	go test -run='^$' -bench=. -benchtime=3x ./fsm/                 # all
//	go test -run='^$' -bench=ApplyCommitAppend -benchmem ./fsm/
//
// Machines are built through Apply, as a replica would build them, with
// realistic key and identity lengths.

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/metad/metad/fsm/fsmpb"
)

// benchObject names the bytes of the i-th segment of a stream.
func benchObject(stream uint64, i int) ObjectRef {
	return ObjectRef{
		Key:      fmt.Sprintf("streams/%06d/segments/%012d.log", stream, i),
		Identity: fmt.Sprintf("sha256:%064x", uint64(i)*0x9e3779b97f4a7c15),
	}
}

// buildAppends returns a machine holding one stream with n commit-appends
// of 100 offsets each, all indexed: n evidence entries and n generation-0
// records, over n/64 objects.
func buildAppends(b *testing.B, n int) *applier {
	a := newApplier(b)
	a.ok(cmdCreate("bench"))
	a.ok(cmdOpen(1))
	for i := range n {
		obj := benchObject(1, i/64)
		if i%64 == 0 {
			a.ok(cmdRegister(obj, 64<<20))
		}
		start := uint64(i) * 100
		a.ok(cmdAppend(1, 1, start, start+100, obj, ByteRange{uint64(i%64) << 20, 1 << 20}, true))
		a.now += int64(time.Microsecond)
	}
	return a
}

// buildPublished returns a machine with n index records in one COMMITTED
// generation above 0, published in parts of MaxRecordsPerCommand, over
// n/1024 appends and objects: index records dominate everything else.
func buildPublished(b *testing.B, n int) *applier {
	a := newApplier(b)
	a.ok(cmdCreate("bench"))
	a.ok(cmdOpen(1))
	const perObject = 1024
	objects := (n + perObject - 1) / perObject
	for i := range objects {
		obj := benchObject(1, i)
		a.ok(cmdRegister(obj, 64<<20))
		a.ok(cmdAppend(1, 1, uint64(i*perObject), uint64((i+1)*perObject), obj, ByteRange{0, 64 << 20}, false))
	}
	cover := Range{0, uint64(objects * perObject)}
	for start := 0; start < n; start += MaxRecordsPerCommand {
		end := min(start+MaxRecordsPerCommand, n)
		recs := make([]*fsmpb.IndexRecord, 0, end-start)
		for o := start; o < end; o++ {
			key := IndexKey{1, Committed, 1, uint64(o)}
			obj := benchObject(1, o/perObject)
			recs = append(recs, NewIndexRecord(key, Range{uint64(o), uint64(o + 1)}, nil, obj, ByteRange{uint64(o%perObject) << 16, 1 << 16}))
		}
		a.ok(cmdPublish(1, Committed, 1, 1, cover, end == n, recs...))
	}
	return a
}

const benchRecords = 1_000_000

var (
	million     *Machine
	millionSnap []byte
	millionOnce sync.Once
)

// millionMachine is built once per test binary and shared by the snapshot
// benchmarks, which only read it.
func millionMachine(b *testing.B) (*Machine, []byte) {
	millionOnce.Do(func() {
		million = buildPublished(b, benchRecords).m
		var buf bytes.Buffer
		if err := million.WriteSnapshot(&buf); err != nil {
			b.Fatal(err)
		}
		millionSnap = buf.Bytes()
	})
	return million, millionSnap
}

// BenchmarkApplyCommitAppend measures one commit-append with index_gen0 on
// a machine that already holds 200k appends (evidence and records).
func BenchmarkApplyCommitAppend(b *testing.B) {
	a := buildAppends(b, 200_000)
	obj := benchObject(1, 0)
	a.ok(cmdRegister(ObjectRef{obj.Key + ".next", obj.Identity}, 1))
	obj.Key += ".next"
	start := a.m.streams[1].info.CommittedEnd
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		a.idx++
		a.now++
		res := a.m.Apply(a.idx, &fsmpb.Command{StampUnixNano: a.now, Op: &fsmpb.Command_CommitAppend{CommitAppend: &fsmpb.CommitAppend{
			StreamId: 1, WriterEpoch: 1, ExpectedStart: start, End: start + 100,
			Object: obj.PB(), Bytes: ByteRange{0, 1 << 20}.PB(), IndexGen0: true,
		}}})
		if res.Rejection != nil {
			b.Fatal(res.Rejection)
		}
		start += 100
	}
}

func BenchmarkSnapshotWrite(b *testing.B) {
	m, snap := millionMachine(b)
	_, count, _ := m.StateHash()
	var buf bytes.Buffer
	buf.Grow(len(snap))
	b.SetBytes(int64(len(snap)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		buf.Reset()
		if err := m.Clone().WriteSnapshot(&buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(count)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(len(snap))/float64(benchRecords), "snapshot-B/record")
}

func BenchmarkSnapshotRestore(b *testing.B) {
	m, snap := millionMachine(b)
	_, count, _ := m.StateHash()
	b.SetBytes(int64(len(snap)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := Restore(bytes.NewReader(snap)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(count)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkMemoryPerRecord reports the live heap per index record of a
// machine with 1M published index records, and per indexed append
// (evidence + generation-0 record) of one with 1M appends, measured with
// runtime.ReadMemStats after GC. Its ns/op means nothing.
func BenchmarkMemoryPerRecord(b *testing.B) {
	for _, tc := range []struct {
		name  string
		build func(*testing.B, int) *applier
		unit  string
	}{
		{"published", buildPublished, "B/record"},
		{"appends", buildAppends, "B/append"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var perRecord float64
			for b.Loop() {
				before := liveHeap()
				m := tc.build(b, benchRecords).m
				perRecord = float64(liveHeap()-before) / benchRecords
				runtime.KeepAlive(m)
			}
			b.ReportMetric(perRecord, tc.unit)
		})
	}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
