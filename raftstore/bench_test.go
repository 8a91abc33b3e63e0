package raftstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/metad/metad/fsm"
)

// Benchmarks run a 3-node in-process cluster (in-memory transport, real
// bolt files) with the test timings and without the fsm's O(state)
// invariant checks. Proposers and readers run in parallel
// (8 × GOMAXPROCS goroutines) so that batching shows.

func benchCluster(b *testing.B) *testCluster {
	c := newCluster(b, 3, func(_ int, _ *Config, o *openOptions) { o.fsmOptions = nil })
	c.propose(createStream("bench"))
	return c
}

func BenchmarkPropose(b *testing.B) {
	c := benchCluster(b)
	l := c.leader()
	var seq atomic.Uint64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			cmd := createStream(fmt.Sprintf("p%d", seq.Add(1)))
			if _, err := l.Propose(context.Background(), cmd); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkRead(b *testing.B) {
	for _, where := range []string{"leader", "follower"} {
		b.Run(where, func(b *testing.B) {
			c := benchCluster(b)
			l := c.leader()
			s := l
			if where == "follower" {
				s = c.store((c.index(l) + 1) % 3)
			}
			before := l.ReadIndexStats()
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					err := s.Read(context.Background(), func(m *fsm.Machine) error {
						if _, ok := m.StreamByName("bench"); !ok {
							return fmt.Errorf("stream missing")
						}
						return nil
					})
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			after := l.ReadIndexStats()
			if rounds := after.Rounds - before.Rounds; rounds > 0 {
				b.ReportMetric(float64(after.Reads-before.Reads)/float64(rounds), "reads/round")
			}
		})
	}
}
