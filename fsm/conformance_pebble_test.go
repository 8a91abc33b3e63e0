package fsm

import (
	"os"
	"testing"

	"github.com/metad/metad/fsm/kv"
	"github.com/metad/metad/statestore"
)

// commitOnView is a Pebble store that commits before a view is taken, as
// raftstore has always committed when it clones: the tests apply commands
// one by one and clone between them.
type commitOnView struct{ *statestore.Store }

func (c commitOnView) View() kv.View {
	c.Commit()
	return c.Store.View()
}

// TestConformanceOnPebble runs the golden scripts, the replicas' agreement
// (with snapshot round trips and reopens) and the fuzz corpus on a machine
// whose state is in Pebble, the store production uses.
func TestConformanceOnPebble(t *testing.T) {
	dir := t.TempDir()
	var open []*statestore.Store
	testOnPebble = func() kv.Store {
		d, err := os.MkdirTemp(dir, "store")
		if err != nil {
			t.Fatal(err)
		}
		st, err := statestore.Open(d, statestore.Config{CacheBytes: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, st)
		return commitOnView{st}
	}
	defer func() {
		testOnPebble = nil
		for _, st := range open {
			_ = st.Close()
		}
	}()
	t.Run("Scripts", onStore(t, TestScripts))
	t.Run("ReplicasAgree", onStore(t, func(t *testing.T) {
		for i := range 10 {
			if err := replicaSequence(newRand(uint64(i))); err != nil {
				t.Fatalf("seed %d: %v", i, err)
			}
		}
	}))
	t.Run("FuzzCorpus", onStore(t, testFuzzCorpus))
}

// BenchmarkPublishOn publishes 100,000 index records in parts of
// MaxRecordsPerCommand on each implementation of the state, committing
// after each part as raftstore does; records/s is the figure.
func BenchmarkPublishOn(b *testing.B) {
	stores := map[string]func() kv.Store{
		"memory": nil,
		"kv.Mem": func() kv.Store { return kv.NewMem() },
		"pebble": func() kv.Store {
			st, err := statestore.Open(b.TempDir(), statestore.Config{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			return st
		},
	}
	for _, name := range []string{"memory", "kv.Mem", "pebble"} {
		b.Run(name, func(b *testing.B) {
			const n = 100_000
			for b.Loop() {
				a := newApplier(b)
				if mk := stores[name]; mk != nil {
					st := mk()
					m, err := Open(st)
					if err != nil {
						b.Fatal(err)
					}
					a.m = m
					a.commit = st.Commit
				}
				publishInto(a, n)
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// BenchmarkTrimOn trims a stream of 3,200 commit-appends (10 offsets each,
// every one indexed at generation 0) in 16 steps, on each implementation
// of the state, committing after each command as raftstore does: what a
// broker's trims of a busy stream cost. trims/s is the figure.
func BenchmarkTrimOn(b *testing.B) {
	for _, name := range []string{"memory", "kv.Mem", "pebble"} {
		b.Run(name, func(b *testing.B) {
			const appends, steps = 3200, 16
			for b.Loop() {
				b.StopTimer()
				a := newApplier(b)
				switch name {
				case "kv.Mem":
					st := kv.NewMem()
					a.m, _ = Open(st)
					a.commit = st.Commit
				case "pebble":
					st, err := statestore.Open(b.TempDir(), statestore.Config{})
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { _ = st.Close() })
					if a.m, err = Open(st); err != nil {
						b.Fatal(err)
					}
					a.commit = st.Commit
				}
				appendsInto(a, appends, 10)
				b.StartTimer()
				for step := 1; step <= steps; step++ {
					a.ok(cmdTrim(1, uint64(step*appends*10/steps)))
				}
			}
			b.ReportMetric(float64(steps*b.N)/b.Elapsed().Seconds(), "trims/s")
		})
	}
}
