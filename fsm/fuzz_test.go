package fsm

// Fuzz targets. Their seed corpora live in testdata/fuzz/<FuzzName>/ and
// are regenerated with `go test -run TestWriteFuzzCorpus -writecorpus`.
// Run them with e.g.
//
//	go test -run='^$' -fuzz=FuzzDecodeCommand -fuzztime=60s ./fsm/
//	go test -run='^$' -fuzz=FuzzCommandSequence -fuzztime=60s ./fsm/

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/fsm/fsmpb"
)

var flagWriteCorpus = flag.Bool("writecorpus", false, "regenerate the seed corpora under testdata/fuzz/")

// fuzzFixture is a small state with something of every kind, built through
// the same commands on the machine and the model.
func fuzzFixture() (*stepper, error) {
	st := newStepper(randChooser{newRand(1)})
	a, b := ObjectRef{"k0", "i0"}, ObjectRef{"k1", "i1"}
	key := func(g uint64, start uint64) IndexKey { return IndexKey{1, TopicCompacted, g, start} }
	cmds := []*fsmpb.Command{
		cmdCreate("s0"), cmdOpen(1), cmdRegister(a, 100), cmdRegister(b, 100),
		cmdAppend(1, 1, 0, 10, a, ByteRange{0, 10}, true),
		withID(cmdAppend(1, 1, 10, 20, b, ByteRange{0, 10}, false), "r1"),
		cmdPublish(1, TopicCompacted, 1, 1, Range{0, 20}, true,
			NewIndexRecord(key(1, 0), Range{0, 10}, []Range{{2, 3}}, b, ByteRange{0, 1}),
			NewIndexRecord(key(1, 10), Range{10, 20}, []Range{{15, 20}}, a, ByteRange{1, 1})),
		cmdPublish(1, TopicCompacted, 2, 1, Range{5, 20}, false,
			NewIndexRecord(key(2, 5), Range{5, 6}, []Range{{5, 6}}, a, ByteRange{0, 1})),
		cmdPin(a, "h", int64(time.Minute)), cmdCreate("s1"), cmdRegister(ObjectRef{"k2", "i0"}, 1),
	}
	for i, c := range cmds {
		st.idx++
		c.StampUnixNano = int64(i) * int64(time.Second)
		got := st.m.Apply(st.idx, proto.Clone(c).(*fsmpb.Command))
		want := st.ref.apply(st.idx, c)
		if got.Rejection != nil {
			return nil, fmt.Errorf("fixture command %d refused: %v", i, got.Rejection)
		}
		if err := sameResult(got, want); err != nil {
			return nil, err
		}
	}
	return st, nil
}

func FuzzDecodeCommand(f *testing.F) {
	for _, c := range []*fsmpb.Command{cmdCreate("s9"), cmdTrim(1, 5), cmdRelease(1)} {
		b, _ := proto.Marshal(c)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cmd, err := DecodeCommand(data)
		if err != nil {
			return
		}
		st, err := fuzzFixture()
		if err != nil {
			t.Fatal(err)
		}
		// Apply it twice (the second time a retry, if it has a request id):
		// no panic, invariants kept (WithInvariantChecks), and the same
		// outcome as the reference model.
		for range 2 {
			st.idx++
			got := st.m.Apply(st.idx, proto.Clone(cmd).(*fsmpb.Command))
			want := st.ref.apply(st.idx, proto.Clone(cmd).(*fsmpb.Command))
			if err := sameResult(got, want); err != nil {
				t.Fatalf("%v\ncommand: %v", err, cmd)
			}
			if err := sameState(st.m, st.ref); err != nil {
				t.Fatalf("%v\ncommand: %v", err, cmd)
			}
		}
		if _, err := roundTrip(st.m); err != nil {
			t.Fatal(err)
		}
	})
}

// maxFuzzSteps bounds one FuzzCommandSequence input.
const maxFuzzSteps = 200

func FuzzCommandSequence(f *testing.F) {
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		ch := &byteChooser{data: data}
		st := newStepper(ch)
		for step := 0; step < maxFuzzSteps && !ch.done; step++ {
			cmd, _, err := st.step()
			if err != nil {
				t.Fatalf("step %d: %v\ncommand: %v", step, err, cmd)
			}
		}
		if _, err := roundTrip(st.m); err != nil {
			t.Fatal(err)
		}
	})
}

// TestWriteFuzzCorpus regenerates the committed seed corpora from valid
// command sequences. It runs only with -writecorpus.
func TestWriteFuzzCorpus(t *testing.T) {
	if !*flagWriteCorpus {
		t.Skip("run with -writecorpus to regenerate testdata/fuzz/")
	}
	// FuzzDecodeCommand: commands the generator makes from the fixture's
	// state, one file each, plus the fixture's own commands.
	st, err := fuzzFixture()
	if err != nil {
		t.Fatal(err)
	}
	var decode [][]byte
	for i := range 40 {
		cmd, _, err := st.step()
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 || cmd.RequestId != "" {
			b, err := proto.Marshal(cmd)
			if err != nil {
				t.Fatal(err)
			}
			decode = append(decode, b)
		}
	}
	writeCorpus(t, "FuzzDecodeCommand", decode)

	// FuzzCommandSequence: the decisions of generated sequences of several
	// lengths, so that the fuzzer starts from valid, deep states.
	var seqs [][]byte
	for i := range 24 {
		rec := &recordingChooser{c: randChooser{newRand(seedOf("corpus") + uint64(i))}}
		s := newStepper(rec)
		for range 5 + i*8 {
			if _, _, err := s.step(); err != nil {
				t.Fatal(err)
			}
		}
		seqs = append(seqs, rec.out)
	}
	writeCorpus(t, "FuzzCommandSequence", seqs)
}

func writeCorpus(t *testing.T, name string, entries [][]byte) {
	dir := filepath.Join("testdata", "fuzz", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, b := range entries {
		body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(b)) + ")\n"
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
