package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func diffKeys(t *testing.T, a, b []byte) []string {
	t.Helper()
	var got []string
	_, _, err := DiffSnapshots(bytes.NewReader(a), bytes.NewReader(b), func(d RecordDiff) error {
		side := "~"
		switch {
		case d.A == nil:
			side = "+"
		case d.B == nil:
			side = "-"
		}
		got = append(got, side+" "+d.Key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestDiffSnapshots(t *testing.T) {
	m := richMachine(t)
	before := snapshotBytes(t, m.Clone())
	if d := diffKeys(t, before, before); len(d) != 0 {
		t.Fatalf("a snapshot differs from itself: %v", d)
	}
	a := &applier{t: t, m: m, idx: m.AppliedIndex(), now: m.Clock()}
	a.ok(withID(cmdRegister(ObjectRef{"e", "E"}, 10), "zz"))
	a.ok(cmdCreate("new"))
	after := snapshotBytes(t, m.Clone())

	want := []string{
		"~ meta", // next stream id
		`+ object "e" version "E"`,
		"+ stream 4",
		"+ stream 4 COMMITTED g0",
		`+ dedup "zz"`,
	}
	if got := diffKeys(t, before, after); !slices.Equal(got, want) {
		t.Errorf("diff before→after:\n got %q\nwant %q", got, want)
	}
	for i, w := range want {
		want[i] = map[byte]string{'~': "~", '+': "-"}[w[0]] + w[1:]
	}
	if got := diffKeys(t, after, before); !slices.Equal(got, want) {
		t.Errorf("diff after→before:\n got %q\nwant %q", got, want)
	}
}

func TestDiffSnapshotsStopsWhenVisitFails(t *testing.T) {
	m := richMachine(t)
	before := snapshotBytes(t, m.Clone())
	a := &applier{t: t, m: m, idx: m.AppliedIndex(), now: m.Clock()}
	a.ok(cmdCreate("new"))
	stop := errors.New("enough")
	calls := 0
	_, _, err := DiffSnapshots(bytes.NewReader(before), bytes.NewReader(snapshotBytes(t, m)), func(RecordDiff) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("err %v after %d calls; want the visitor's error after 1", err, calls)
	}
}

func TestDiffSnapshotsReportsCorruption(t *testing.T) {
	snap := snapshotBytes(t, richMachine(t))
	bad := bytes.Clone(snap)
	bad[len(bad)-1] ^= 0xff
	_, _, err := DiffSnapshots(bytes.NewReader(snap), bytes.NewReader(bad), func(RecordDiff) error { return nil })
	if !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("diff against a corrupt snapshot: %v; want ErrCorruptSnapshot", err)
	}
}

// The diff's merge is only right if its key order is the order snapshots
// are written in.
func TestRecordKeysFollowCanonicalOrder(t *testing.T) {
	_, recs := snapshotRecords(t, snapshotBytes(t, richMachine(t)))
	kinds := map[string]bool{}
	for i := 1; i < len(recs); i++ {
		prev, cur := keyOf(recs[i-1]), keyOf(recs[i])
		if prev.compare(cur) >= 0 {
			t.Fatalf("record %d (%s) does not sort after record %d (%s)", i, cur, i-1, prev)
		}
		kinds[fmt.Sprintf("%T", recs[i].Record)] = true
	}
	if len(kinds) < 7 {
		t.Fatalf("the fixture covers only %v; want every record type after meta", kinds)
	}
}

func TestRecordDiffString(t *testing.T) {
	m := richMachine(t)
	before := snapshotBytes(t, m.Clone())
	a := &applier{t: t, m: m, idx: m.AppliedIndex(), now: m.Clock()}
	a.ok(cmdCreate("new"))
	var out []string
	_, _, err := DiffSnapshots(bytes.NewReader(before), bytes.NewReader(snapshotBytes(t, m)), func(d RecordDiff) error {
		out = append(out, d.String())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 {
		t.Fatalf("got %d diffs, want 3 (meta, stream 4, its generation 0):\n%s", len(out), strings.Join(out, "\n"))
	}
	meta, stream := strings.Split(out[0], "\n"), strings.Split(out[1], "\n")
	if len(meta) != 3 || meta[0] != "~ meta" || !strings.Contains(meta[1], "A: ") || !strings.Contains(meta[2], "B: ") ||
		!strings.Contains(meta[2], `"nextStreamId":"5"`) && !strings.Contains(meta[2], `"nextStreamId": "5"`) {
		t.Errorf("meta diff:\n%s", out[0])
	}
	if len(stream) != 2 || stream[0] != "+ stream 4" || !strings.Contains(stream[1], "B: ") || !strings.Contains(stream[1], "new") {
		t.Errorf("stream diff:\n%s", out[1])
	}
}

func TestObjectOrderKeyOrdersAsThePair(t *testing.T) {
	refs := []ObjectRef{
		{Key: "a", Identity: "z"}, {Key: "a\x00", Identity: "a"}, {Key: "a\x00b", Identity: ""},
		{Key: "a\x00b", Identity: "\x00"}, {Key: "a\x01", Identity: "a"}, {Key: "ab", Identity: "a"}, {Key: "b", Identity: ""},
	}
	for i := range refs {
		k, id := splitObjectOrderKey(objectOrderKey(refs[i].PB()))
		if k != refs[i].Key || id != refs[i].Identity {
			t.Errorf("split(order(%q)) = %q %q", refs[i], k, id)
		}
		for j := range refs {
			want := objectLess(object{ref: refs[i]}, object{ref: refs[j]})
			if got := objectOrderKey(refs[i].PB()) < objectOrderKey(refs[j].PB()); got != want {
				t.Errorf("order(%q) < order(%q) = %v, the pair order says %v", refs[i], refs[j], got, want)
			}
		}
	}
}
