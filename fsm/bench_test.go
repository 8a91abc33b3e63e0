package fsm

// Benchmarks (they run only with -bench):
//
//	go test -run='^$' -bench=. -benchtime=3x ./fsm/                 # all
//	go test -run='^$' -bench=ApplyCommitAppend -benchmem ./fsm/
//	go test -run='^$' -bench='SnapshotWrite|SnapshotRestore' -benchtime=3x ./fsm/ -largesnapshot
//
// -largesnapshot adds 4M index records to the snapshot benchmarks' sizes,
// so that how their cost grows with the state shows; it needs about 2 GiB
// and a minute to build the state, so it is not run by default.
//
// Machines are built through Apply, as a replica would build them, with
// realistic key and identity lengths.

import (
	"bytes"
	"flag"
	"fmt"
	"runtime"
	"sync"
	"syscall"
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
func buildAppends(b testing.TB, n int) *applier {
	a := newApplier(b)
	appendsInto(a, n, 100)
	return a
}

// appendsInto creates stream 1 on a's machine and commits n appends of
// width offsets each to it, all indexed, over n/64 objects.
func appendsInto(a *applier, n int, width uint64) {
	a.ok(cmdCreate("bench"))
	a.ok(cmdOpen(1))
	for i := range n {
		obj := benchObject(1, i/64)
		if i%64 == 0 {
			a.ok(cmdRegister(obj, 64<<20))
		}
		start := uint64(i) * width
		a.ok(cmdAppend(1, 1, start, start+width, obj, ByteRange{uint64(i%64) << 20, 1 << 20}, true))
		a.now += int64(time.Microsecond)
	}
}

// buildPublished returns a machine with n index records in one COMMITTED
// generation above 0, published in parts of MaxRecordsPerCommand, over
// n/1024 appends and objects: index records dominate everything else.
func buildPublished(b testing.TB, n int) *applier {
	a := newApplier(b)
	publishInto(a, n)
	return a
}

// publishInto is buildPublished on a's machine.
func publishInto(a *applier, n int) {
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
}

const benchRecords = 1_000_000

var flagLargeSnapshot = flag.Bool("largesnapshot", false, "also run the snapshot benchmarks at 4M index records")

// snapshotSizes are the index-record counts the snapshot benchmarks run at.
func snapshotSizes() []int {
	if *flagLargeSnapshot {
		return []int{100_000, 1_000_000, 4_000_000}
	}
	return []int{100_000, 1_000_000}
}

var (
	snapMu       sync.Mutex
	snapMachines = map[int]*Machine{}
	snapBytes    = map[int][]byte{}
)

// snapshotMachine returns a machine of n published index records and its
// snapshot, built once per size per test binary and shared by the snapshot
// benchmarks, which only read them.
func snapshotMachine(b *testing.B, n int) (*Machine, []byte) {
	snapMu.Lock()
	defer snapMu.Unlock()
	if m, ok := snapMachines[n]; ok {
		return m, snapBytes[n]
	}
	m := buildPublished(b, n).m
	var buf bytes.Buffer
	if err := m.WriteSnapshot(&buf); err != nil {
		b.Fatal(err)
	}
	snapMachines[n], snapBytes[n] = m, buf.Bytes()
	return m, buf.Bytes()
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

// BenchmarkSnapshotWrite writes a Clone of the machine as a snapshot into
// memory, as raftstore's Persist does into a file: MB/s is snapshot bytes.
func BenchmarkSnapshotWrite(b *testing.B) {
	for _, n := range snapshotSizes() {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			m, snap := snapshotMachine(b, n)
			_, count, _ := m.StateHash()
			var buf bytes.Buffer
			buf.Grow(len(snap))
			b.SetBytes(int64(len(snap)))
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			for b.Loop() {
				buf.Reset()
				if err := m.Clone().WriteSnapshot(&buf); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportCPU(b, cpu0, len(snap))
			b.ReportMetric(float64(count)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(len(snap))/float64(n), "snapshot-B/record")
		})
	}
}

// BenchmarkSnapshotRestore restores (reads, verifies, checks invariants)
// the snapshot from memory: MB/s is snapshot bytes.
func BenchmarkSnapshotRestore(b *testing.B) {
	for _, n := range snapshotSizes() {
		b.Run(fmt.Sprintf("records=%d", n), func(b *testing.B) {
			m, snap := snapshotMachine(b, n)
			_, count, _ := m.StateHash()
			b.SetBytes(int64(len(snap)))
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			for b.Loop() {
				if _, err := Restore(bytes.NewReader(snap)); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			reportCPU(b, cpu0, len(snap))
			b.ReportMetric(float64(count)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// processCPU is the CPU time this process has used (all threads, the
// garbage collector's included).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports snapshot bytes per CPU second since cpu0 ("cpu-MB/s"):
// on a machine shared with other work, wall-clock MB/s says as much about
// the neighbours as about the code; CPU time says what the code costs.
func reportCPU(b *testing.B, cpu0 time.Duration, size int) {
	used := processCPU() - cpu0
	b.ReportMetric(float64(size)*float64(b.N)/1e6/used.Seconds(), "cpu-MB/s")
}

// BenchmarkMemoryPerRecord reports the live heap per index record of a
// machine with 1M published index records, and per indexed append
// (evidence + generation-0 record) of one with 1M appends, measured with
// runtime.ReadMemStats after GC, as built by Apply and as a restart
// restores it from a snapshot of that state. Its ns/op means nothing.
func BenchmarkMemoryPerRecord(b *testing.B) {
	restored := func(build func(testing.TB, int) *applier) func(testing.TB, int) *Machine {
		return func(tb testing.TB, n int) *Machine {
			var buf bytes.Buffer
			if err := build(tb, n).m.WriteSnapshot(&buf); err != nil {
				tb.Fatal(err)
			}
			// The applied machine and the snapshot are garbage once this
			// returns: only the restored machine is counted.
			m, err := Restore(&buf)
			if err != nil {
				tb.Fatal(err)
			}
			return m
		}
	}
	applied := func(build func(testing.TB, int) *applier) func(testing.TB, int) *Machine {
		return func(tb testing.TB, n int) *Machine { return build(tb, n).m }
	}
	for _, tc := range []struct {
		name  string
		build func(testing.TB, int) *Machine
		unit  string
	}{
		{"published", applied(buildPublished), "B/record"},
		{"appends", applied(buildAppends), "B/append"},
		{"published-restored", restored(buildPublished), "B/record"},
		{"appends-restored", restored(buildAppends), "B/append"},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var perRecord float64
			for b.Loop() {
				before := liveHeap()
				m := tc.build(b, benchRecords)
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

// BenchmarkApplyCommitObject applies stream-set objects of n streams, each
// appending to every stream of a set with a request id, as a broker's
// writer does: ns/op is per object, and stream-appends/s is reported.
func BenchmarkApplyCommitObject(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("streams=%d", n), func(b *testing.B) {
			m := New()
			idx := uint64(0)
			apply := func(cmd *fsmpb.Command) {
				idx++
				if res := m.Apply(idx, cmd); res.Rejection != nil {
					b.Fatal(res.Rejection)
				}
			}
			apply(&fsmpb.Command{Op: &fsmpb.Command_SetFeatureLevel{SetFeatureLevel: &fsmpb.SetFeatureLevel{Level: streamSetLevel}}})
			for s := 1; s <= n; s++ {
				apply(cmdCreate(fmt.Sprintf("s%d", s)))
				apply(cmdOpen(uint64(s)))
			}
			ends := make([]uint64, n+1)
			crc := uint32(7)
			b.ReportAllocs()
			b.ResetTimer()
			objects := 0
			for b.Loop() {
				c := &fsmpb.CommitObject{Object: (&ObjectRef{Key: fmt.Sprintf("o%d", objects), Identity: "sha256:x"}).PB(), Size: uint64(n) * 1000}
				for s := 1; s <= n; s++ {
					c.Appends = append(c.Appends, &fsmpb.ObjectAppend{
						StreamId: uint64(s), WriterEpoch: 1, ExpectedStart: ends[s], End: ends[s] + 10,
						Bytes: ByteRange{uint64(s-1) * 1000, 1000}.PB(), IndexGen0: true, DataCrc32C: &crc,
					})
					ends[s] += 10
				}
				apply(&fsmpb.Command{RequestId: fmt.Sprintf("r%d", objects), StampUnixNano: int64(idx), Op: &fsmpb.Command_CommitObject{CommitObject: c}})
				objects++
			}
			b.ReportMetric(float64(objects*n)/b.Elapsed().Seconds(), "stream-appends/s")
		})
	}
}
