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
