package fsm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/checksum"
	"github.com/metad/metad/fsm/fsmpb"
)

// TestCommitObjectIsItsAppendsAtOnce: to every reader a stream-set object
// is exactly its appends, each committed as a CommitAppend would be, all at
// the object's version, or none of them. On random states and objects:
//   - refused, the refused appends are exactly those a CommitAppend of the
//     same fields (after registering the object) refuses, with the same
//     codes, in order, and the state is unchanged;
//   - accepted, the state equals registering the object and committing
//     every append alone at the object's index.
func TestCommitObjectIsItsAppendsAtOnce(t *testing.T) {
	seed, n := runs(t, 400, 20000)
	for i := range n {
		r := newRand(seed + uint64(i))
		m := streamSetState(t, r)
		c := randomObject(r, m)
		t.Run(fmt.Sprint(seed+uint64(i)), func(t *testing.T) { checkObjectAgainstAppends(t, m, c) })
		if t.Failed() {
			t.Fatalf("replay with -run '%s' -seed %d", t.Name(), seed+uint64(i))
		}
	}
}

// streamSetState is a level-4 machine with a few streams in varied states:
// several epochs and ends, one sealed, one deleted.
func streamSetState(t *testing.T, r *rand.Rand) *Machine {
	m := New(WithInvariantChecks())
	idx := uint64(0)
	apply := func(cmd *fsmpb.Command) *fsmpb.Result {
		idx++
		return m.Apply(idx, cmd)
	}
	apply(&fsmpb.Command{Op: &fsmpb.Command_SetFeatureLevel{SetFeatureLevel: &fsmpb.SetFeatureLevel{Level: streamSetLevel}}})
	old := ObjectRef{Key: "old", Identity: "v0"}
	apply(cmdRegister(old, 1000))
	for s := uint64(1); s <= 6; s++ {
		apply(cmdCreate(fmt.Sprintf("s%d", s)))
		for range 1 + r.IntN(3) {
			apply(cmdOpen(s))
		}
		info, _ := m.Stream(s)
		for end := uint64(0); end < uint64(r.IntN(3))*5; end += 5 {
			if res := apply(cmdAppend(s, info.WriterEpoch, end, end+5, old, ByteRange{end, 5}, r.IntN(2) == 0)); res.Rejection != nil {
				t.Fatalf("setting up: %v", res.Rejection)
			}
		}
	}
	apply(cmdSeal(5))
	apply(cmdDelete(6))
	return m
}

// randomObject is a stream-set object over distinct streams (6 is deleted,
// 9 never existed), most appends right and some wrong in one field.
func randomObject(r *rand.Rand, m *Machine) *fsmpb.CommitObject {
	size := uint64(100 + r.IntN(100))
	c := &fsmpb.CommitObject{Object: (&ObjectRef{Key: "set", Identity: fmt.Sprintf("v%d", r.IntN(2))}).PB(), Size: size}
	ids := []uint64{1, 2, 3, 4, 5, 6, 9}
	r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	for _, id := range ids[:1+r.IntN(len(ids))] {
		info, _ := m.Stream(id)
		a := &fsmpb.ObjectAppend{
			StreamId: id, WriterEpoch: info.WriterEpoch, ExpectedStart: info.CommittedEnd,
			Bytes: &fsmpb.ByteRange{Offset: uint64(r.IntN(int(size))), Length: 1}, IndexGen0: r.IntN(2) == 0,
		}
		if r.IntN(8) == 0 {
			a.WriterEpoch += uint64(r.IntN(3)) - 1
		}
		if r.IntN(8) == 0 {
			a.ExpectedStart = max(a.ExpectedStart, 1) + uint64(r.IntN(3)) - 1
		}
		if r.IntN(10) == 0 {
			a.Bytes.Length = size
		}
		if r.IntN(2) == 0 {
			a.DataCrc32C = checksum.Of([]byte{byte(id)}).Ptr()
		}
		a.End = a.ExpectedStart + 1 + uint64(r.IntN(4))
		c.Appends = append(c.Appends, a)
	}
	return c
}

func checkObjectAgainstAppends(t *testing.T, before *Machine, c *fsmpb.CommitObject) {
	t.Helper()
	idx := before.applied + 1
	m := before.Clone()
	res := m.Apply(idx, &fsmpb.Command{Op: &fsmpb.Command_CommitObject{CommitObject: c}})

	// Each append alone: register the object, then CommitAppend it.
	type refusal struct {
		code  fsmpb.RejectCode
		field string
	}
	var want []refusal
	for _, a := range c.Appends {
		if rej := Validate(&fsmpb.Command{Op: &fsmpb.Command_CommitAppend{CommitAppend: appendAlone(c, a)}}); rej != nil {
			t.Fatalf("generated a malformed append: %v", rej)
		}
		alone := before.Clone()
		if rej := alone.Apply(idx, cmdRegister(refOf(c.Object), c.Size)).Rejection; rej != nil {
			t.Fatalf("registering alone: %v", rej)
		}
		rej := alone.Apply(idx+1, &fsmpb.Command{Op: &fsmpb.Command_CommitAppend{CommitAppend: appendAlone(c, a)}}).Rejection
		if rej != nil {
			want = append(want, refusal{rej.Code, strings.TrimPrefix(rej.Field, "commit_append.")})
		}
	}
	var got []refusal
	for i, a := range res.AppendRejections {
		if a.StreamId != c.Appends[a.Index].StreamId {
			t.Fatalf("rejection %d names stream %d at index %d, which is stream %d", i, a.StreamId, a.Index, c.Appends[a.Index].StreamId)
		}
		_, field, _ := strings.Cut(a.Rejection.Field, ".")
		got = append(got, refusal{a.Rejection.Code, field})
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("refused appends %v, want %v (as CommitAppends alone)\nresult %v", got, want, res)
	}
	if (len(want) > 0) != (res.Rejection != nil) {
		t.Fatalf("rejection %v with %d refused appends", res.Rejection, len(want))
	}

	expect := before.Clone()
	if res.Rejection == nil {
		// Every append alone, all at the object's index: the handlers, not
		// Apply, since Apply takes one command per index.
		expect.applied = idx
		if r := expect.registerObject(idx, &fsmpb.RegisterObject{Object: c.Object, Size: c.Size}); r.Rejection != nil {
			t.Fatalf("register: %v", r.Rejection)
		}
		for _, a := range c.Appends {
			if r := expect.commitAppend(idx, appendAlone(c, a)); r.Rejection != nil {
				t.Fatalf("append alone: %v", r.Rejection)
			}
		}
	}
	gotHash, _, err := m.StateHash()
	if err != nil {
		t.Fatal(err)
	}
	wantHash, _, err := expect.StateHash()
	if err != nil {
		t.Fatal(err)
	}
	if gotHash != wantHash {
		t.Fatalf("state after the object differs from its appends alone (refused: %v)\n%s", res.Rejection != nil, diffStates(t, expect, m))
	}
	if err := m.CheckInvariants(); err != nil {
		t.Fatal(err)
	}
}

func appendAlone(c *fsmpb.CommitObject, a *fsmpb.ObjectAppend) *fsmpb.CommitAppend {
	return &fsmpb.CommitAppend{
		StreamId: a.StreamId, WriterEpoch: a.WriterEpoch, ExpectedStart: a.ExpectedStart, End: a.End,
		Object: c.Object, Bytes: a.Bytes, IndexGen0: a.IndexGen0, DataCrc32C: a.DataCrc32C,
	}
}

// diffStates lists how b's state differs from a's, record by record.
func diffStates(t *testing.T, a, b *Machine) string {
	t.Helper()
	var sa, sb bytes.Buffer
	if err := a.WriteSnapshot(&sa); err != nil {
		t.Fatal(err)
	}
	if err := b.WriteSnapshot(&sb); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if _, _, err := DiffSnapshots(&sa, &sb, func(d RecordDiff) error {
		out.WriteString(d.String() + "\n")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestObjectRefusalSurvivesASnapshot: a replica restored from a snapshot
// answers a retried stream-set object with the first outcome, every
// refused append included, as a replica that applied it does.
func TestObjectRefusalSurvivesASnapshot(t *testing.T) {
	m := streamSetState(t, newRand(1))
	c := &fsmpb.CommitObject{Object: (&ObjectRef{Key: "set", Identity: "v1"}).PB(), Size: 10, Appends: []*fsmpb.ObjectAppend{
		{StreamId: 1, WriterEpoch: 99, End: 1, Bytes: (&ByteRange{0, 1}).PB()},
		{StreamId: 9, WriterEpoch: 1, End: 1, Bytes: (&ByteRange{1, 1}).PB()},
	}}
	cmd := func() *fsmpb.Command {
		return &fsmpb.Command{RequestId: "r", Op: &fsmpb.Command_CommitObject{CommitObject: c}}
	}
	first := m.Apply(m.applied+1, cmd())
	if len(first.AppendRejections) != 2 {
		t.Fatalf("first outcome %v, want two refused appends", first)
	}
	var snap bytes.Buffer
	if err := m.Clone().WriteSnapshot(&snap); err != nil {
		t.Fatal(err)
	}
	restored, err := Restore(&snap)
	if err != nil {
		t.Fatal(err)
	}
	for name, r := range map[string]*Machine{"applied": m, "restored": restored} {
		again := r.Apply(r.applied+1, cmd())
		again.Deduplicated = false
		if !proto.Equal(again, first) {
			t.Errorf("%s replica answers the retry with %v, want %v", name, again, first)
		}
	}
}
