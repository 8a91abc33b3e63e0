package resolver

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

// Planning cost must stay O(log n) in the number of index records:
//
//	go test -run=^$ -bench=BenchmarkPlan -benchmem ./resolver/
//
// Building the 10M-record machine takes a while and a few GiB of memory.

var (
	benchMachines   = map[int]*fsm.Machine{}
	benchMachinesMu sync.Mutex
)

const benchRecordWidth = 10 // offsets per record

// benchMachine returns a machine holding one stream with n generation-0
// records and a generation-1 rewrite covering its first half, built once.
func benchMachine(b *testing.B, n int) *fsm.Machine {
	benchMachinesMu.Lock()
	defer benchMachinesMu.Unlock()
	if m, ok := benchMachines[n]; ok {
		return m
	}
	m := fsm.New()
	var index uint64
	apply := func(c *fsmpb.Command) {
		index++
		if res := m.Apply(index, c); res.Rejection != nil {
			b.Fatalf("setup rejected: %v", res.Rejection)
		}
	}
	apply(&fsmpb.Command{Op: &fsmpb.Command_CreateStream{CreateStream: &fsmpb.CreateStream{Name: "bench"}}})
	apply(&fsmpb.Command{Op: &fsmpb.Command_OpenForWrite{OpenForWrite: &fsmpb.OpenForWrite{StreamId: 1}}})
	var obj fsm.ObjectRef
	for i := range n {
		if i%1000 == 0 {
			obj = fsm.ObjectRef{Key: fmt.Sprintf("segment-%08d", i/1000), Identity: fmt.Sprintf("sha256:%08x", i)}
			apply(&fsmpb.Command{Op: &fsmpb.Command_RegisterObject{RegisterObject: &fsmpb.RegisterObject{Object: obj.PB(), Size: 1 << 24}}})
		}
		start := uint64(i) * benchRecordWidth
		apply(&fsmpb.Command{Op: &fsmpb.Command_CommitAppend{CommitAppend: &fsmpb.CommitAppend{
			StreamId: 1, WriterEpoch: 1, ExpectedStart: start, End: start + benchRecordWidth, Object: obj.PB(),
			Bytes: fsm.ByteRange{Offset: uint64(i%1000) * 4096, Length: 4096}.PB(), IndexGen0: true,
		}}})
	}
	benchMachines[n] = m
	return m
}

func benchmarkPlan(b *testing.B, n int) {
	m := benchMachine(b, n)
	rng := rand.New(rand.NewPCG(1, uint64(n)))
	offsets := make([]uint64, 4096)
	for i := range offsets {
		offsets[i] = rng.Uint64N(uint64(n) * benchRecordWidth)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		p := PlanRequest(m, Request{Stream: 1, View: fsm.Committed, Offset: offsets[i%len(offsets)]})
		if p.Outcome != Candidates {
			b.Fatalf("outcome %v", p.Outcome)
		}
	}
}

func BenchmarkPlan1M(b *testing.B)  { benchmarkPlan(b, 1_000_000) }
func BenchmarkPlan10M(b *testing.B) { benchmarkPlan(b, 10_000_000) }
