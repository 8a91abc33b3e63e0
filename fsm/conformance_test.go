package fsm

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/metad/metad/fsm/kv"
)

// The conformance suite: the tests that pin the machine's behaviour (the
// golden scripts, the model equivalence, replicas agreeing, clones, the
// fuzz corpus) run against both implementations of the state, in memory
// and on a kv.Store. The store is kv.Mem here; package statestore runs the
// same scripts on Pebble (statestore's conformance test).
//
// testOnStore selects the implementation newTestMachine builds; the tests
// of this package never run in parallel, so a variable is enough.
var testOnStore bool

// newTestMachine is New, or Open on a fresh store when testOnStore.
func newTestMachine(opts ...Option) *Machine {
	if !testOnStore {
		return New(opts...)
	}
	m, err := Open(newTestStore(), opts...)
	if err != nil {
		panic(err)
	}
	return m
}

// restoreTestMachine is Restore, or RestoreInto a fresh store.
func restoreTestMachine(r io.Reader, opts ...Option) (*Machine, error) {
	if !testOnStore {
		return Restore(r, opts...)
	}
	return RestoreInto(r, newTestStore(), opts...)
}

// newTestStore is a kv.Mem whose every Apply is committed at once, as
// raftstore commits after each batch: the tests apply commands one by one
// and clone between them. With testOnPebble set it is a Pebble store
// (conformance_pebble_test.go) that commits before each view.
func newTestStore() kv.Store {
	if testOnPebble != nil {
		return testOnPebble()
	}
	return kv.NewMem().AutoCommit()
}

// testOnPebble, when set, makes newTestStore's stores.
var testOnPebble func() kv.Store

// forkTestMachine returns a machine that goes on independently from m's
// state: a Clone in memory; on a store, a machine opened on a copy of the
// store (a clone of a machine on a store is read-only).
func forkTestMachine(m *Machine) *Machine {
	if m.kv == nil {
		return m.Clone()
	}
	if _, ok := m.kv.store.(*kv.Mem); !ok {
		panic("forkTestMachine: only a kv.Mem forks")
	}
	opts := []Option{}
	if m.checkInvariants {
		opts = append(opts, WithInvariantChecks())
	}
	f, err := Open(m.kv.store.(*kv.Mem).Fork(), opts...)
	if err != nil {
		panic(err)
	}
	return f
}

// reopenEvery is how often, in applied commands, a stepper on a store
// reopens its machine from the store alone.
const reopenEvery = 5

// reopenNow replaces the stepper's machine, every reopenEvery steps when on
// a store, with one opened from the store: what a restart does. The state
// must hash the same: anything persist failed to write shows here.
func (st *stepper) reopenNow() error {
	if st.m.kv == nil || st.idx%reopenEvery != 0 {
		return nil
	}
	h1, _, err := st.m.StateHash()
	if err != nil {
		return err
	}
	opts := []Option{}
	if st.m.checkInvariants {
		opts = append(opts, WithInvariantChecks())
	}
	m, err := Open(st.m.kv.store, opts...)
	if err != nil {
		return fmt.Errorf("reopen: %w", err)
	}
	h2, _, err := m.StateHash()
	if err != nil {
		return err
	}
	if h1 != h2 || m.AppliedIndex() != st.m.AppliedIndex() || m.Clock() != st.m.Clock() {
		return fmt.Errorf("reopened state differs: hash %x → %x, applied %d → %d", h1[:6], h2[:6], st.m.AppliedIndex(), m.AppliedIndex())
	}
	st.m = m
	return nil
}

func onStore(t *testing.T, fn func(*testing.T)) func(*testing.T) {
	return func(t *testing.T) {
		testOnStore = true
		defer func() { testOnStore = false }()
		fn(t)
	}
}

// TestConformanceOnStore runs the suite against a machine on a store.
func TestConformanceOnStore(t *testing.T) {
	t.Run("Scripts", onStore(t, TestScripts))
	t.Run("ModelEquivalence", onStore(t, TestModelEquivalence))
	t.Run("ReplicasAgree", onStore(t, TestReplicasAgree))
	t.Run("CloneDivergesIndependently", onStore(t, TestCloneDivergesIndependently))
	t.Run("FuzzCorpus", onStore(t, testFuzzCorpus))
}

// testFuzzCorpus replays FuzzCommandSequence's committed corpus.
func testFuzzCorpus(t *testing.T) {
	files, err := filepath.Glob("testdata/fuzz/FuzzCommandSequence/*")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no corpus in testdata/fuzz/FuzzCommandSequence")
	}
	for _, f := range files {
		data, err := readCorpusFile(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		ch := &byteChooser{data: data}
		st := newStepper(ch)
		for step := 0; step < maxFuzzSteps && !ch.done; step++ {
			if cmd, _, err := st.step(); err != nil {
				t.Fatalf("%s step %d: %v\ncommand: %v", f, step, err, cmd)
			}
		}
		if _, err := roundTrip(st.m); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
}

// readCorpusFile reads a one-value []byte corpus file ("go test fuzz v1").
func readCorpusFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<24)
	if !sc.Scan() || sc.Text() != "go test fuzz v1" || !sc.Scan() {
		return nil, fmt.Errorf("not a go test fuzz v1 file")
	}
	line := sc.Text()
	if !strings.HasPrefix(line, "[]byte(") || !strings.HasSuffix(line, ")") {
		return nil, fmt.Errorf("value %.20q is not a []byte", line)
	}
	s, err := strconv.Unquote(line[len("[]byte(") : len(line)-1])
	return []byte(s), err
}
