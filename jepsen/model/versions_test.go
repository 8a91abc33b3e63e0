package model

import (
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/jepsen/history"
)

// crcAppend is an append of [start, end) whose writer committed the data
// checksum of its payloads, in an object holding exactly them.
func crcAppend(start, end uint64, key, identity string) history.Op {
	data, parts := Layout(1, history.Content{Offsets: []history.Range{{Start: start, End: end}}})
	obj := history.Object{Key: key, Identity: identity}
	return history.Op{Kind: history.KindAppend, Status: history.OK, In: history.Input{Epoch: 1, ExpectedStart: start, End: end,
		Object: &obj, Bytes: &parts[0], DataCRC: CRCOf(data)}, Out: &history.Output{CommittedEnd: end}}
}

// readOf is a COMMITTED resolve of offset o answered with the gen-0 record
// of append a, whose bytes read back as data; crc is the target's
// data_crc32c.
func readOf(a history.Op, o uint64, data string, crc *uint32, result string) history.Op {
	r := history.Range{Start: a.In.ExpectedStart, End: a.In.End}
	return history.Op{Kind: history.KindResolve, In: history.Input{View: Committed, Offset: o}, Out: &history.Output{Outcome: "TARGET",
		CommittedEnd: a.In.End, Target: &history.Target{View: Committed, Stream: 1, RecordRange: r, Resolved: history.Range{Start: o, End: r.End},
			Object: *a.In.Object, Bytes: *a.In.Bytes, PinID: 1, PinTTL: int64(time.Minute), DataCRC: crc,
			Checksum: Checksum(1, Committed, 0, r, nil, *a.In.Object, *a.In.Bytes, crc)},
		Data: data, Read: &history.Watch{Result: result, At: 30}}}
}

// flipped returns s with the byte at i changed, as the corrupt nemesis
// changes it.
func flipped(s string, i int) string {
	b := []byte(s)
	b[i] ^= 0x20
	return string(b)
}

// TestPlantedCorruptReadIsCaught is the checker's planted bug: a reader
// that returns bytes failing the data checksum their writer committed
// (one byte flipped in the store, as the corrupt nemesis does), or the
// bytes of another version of the key, is reported (G8); the right bytes
// are not.
func TestPlantedCorruptReadIsCaught(t *testing.T) {
	a := crcAppend(0, 3, "k", "sha256:one")
	good := Payloads(1, []history.Range{{Start: 0, End: 3}})
	cases := []struct {
		name, data, want string
	}{
		{"intact", good, ""},
		{"a byte flipped", flipped(good, 4), "the writer committed crc32c:"},
		{"another version's bytes", Payloads(1, nil) + strings.Replace(good, ".0]", ".7]", -1), "the writer committed crc32c:"},
	}
	for _, c := range cases {
		var b builder
		b.h.Level = history.VersionsLevel
		b.add(a, 0, 1)
		b.add(readOf(a, 1, c.data, a.In.DataCRC, "ok"), 2, 31)
		got := CheckData(b.h)
		switch {
		case c.want == "" && len(got) != 0:
			t.Errorf("%s: reported %v", c.name, got)
		case c.want != "" && (len(got) != 1 || got[0].Check != "G8" || !strings.Contains(got[0].Detail, c.want)):
			t.Errorf("%s: want one G8 saying %q, got %v", c.name, c.want, got)
		}
	}
	// A broker's client.Read that returned flipped bytes is caught the
	// same way.
	var br builder
	br.add(a, 0, 1)
	read := readOf(a, 1, flipped(good, 4), a.In.DataCRC, "ok")
	read.Kind = history.KindRead
	br.add(read, 2, 31)
	if got := CheckData(br.h); len(got) != 1 || got[0].Check != "G8" {
		t.Errorf("client.Read returning flipped bytes: %v", got)
	}
	// Bytes with the right payloads but a CRC the writer did not commit
	// can only come from a wrong committed checksum; that too is caught.
	var b builder
	wrong := a
	other := *a.In.DataCRC ^ 1
	wrong.In.DataCRC = &other
	b.add(wrong, 0, 1)
	b.add(readOf(wrong, 1, good, wrong.In.DataCRC, "ok"), 2, 31)
	if got := CheckData(b.h); len(got) != 1 || !strings.Contains(got[0].Detail, "CRC-32C") {
		t.Errorf("bytes failing the committed checksum not reported: %v", got)
	}
}

// TestTargetCarriesTheCommittedChecksum: a target's data_crc32c must be
// the one its writer committed; from feature level 3 it must be there.
func TestTargetCarriesTheCommittedChecksum(t *testing.T) {
	a := crcAppend(0, 3, "k", "sha256:one")
	good := Payloads(1, []history.Range{{Start: 0, End: 3}})
	other := *a.In.DataCRC + 1
	for _, c := range []struct {
		name  string
		level uint32
		crc   *uint32
		bad   bool
	}{
		{"level 3, right", 3, a.In.DataCRC, false},
		{"level 3, absent", 3, nil, true},
		{"level 3, wrong", 3, &other, true},
		{"level 2, absent", 2, nil, false},
		{"level 2, wrong", 2, &other, true},
	} {
		var b builder
		b.h.Level = c.level
		b.add(openOp(), 0, 1)
		b.add(a, 2, 3)
		b.add(readOf(a, 1, good, c.crc, "ok"), 4, 31)
		got := CheckData(b.h)
		if (len(got) > 0) != c.bad {
			t.Errorf("%s: CheckData %v", c.name, got)
		}
		if l := CheckLinearizable(b.h, time.Minute); (l.Result != "Ok") != c.bad {
			t.Errorf("%s: porcupine %v %v", c.name, l.Result, l.Anomalies)
		}
	}
}

// TestCorruptReadNeedsAFault: a read that found its bytes failing the
// target's checksum refused them rightly; while the corrupt nemesis had
// rewritten that object it is no anomaly, outside it the stored bytes
// are not the ones committed (G8).
func TestCorruptReadNeedsAFault(t *testing.T) {
	a := crcAppend(0, 3, "k", "sha256:one")
	var b builder
	b.add(a, 0, 1)
	b.add(readOf(a, 1, "garbage", a.In.DataCRC, "corrupt"), 20, 31)
	if got := CheckData(b.h); len(got) != 1 || got[0].Check != "G8" || !strings.Contains(got[0].Detail, "no fault rewrote") {
		t.Fatalf("corrupt bytes without a fault not reported: %v", got)
	}
	b.h.Faults = []history.Fault{{Kind: "corrupt", Start: 25, End: 40, Object: &history.Object{Key: "x"},
		Objects: []history.Object{{Key: "x"}, {Key: "k"}}}}
	if got := CheckData(b.h); len(got) != 0 {
		t.Fatalf("corrupt read during the fault reported: %v", got)
	}
}

// TestNewVersionKeepsOldOffsets: from feature level 3 a new version
// registered under a key (a reupload or a replacement) leaves records
// naming the old version admissible, and the end-of-run intact check
// covers their offsets; below it, the new version replaces the old and
// its offsets are excused.
func TestNewVersionKeepsOldOffsets(t *testing.T) {
	a := crcAppend(0, 3, "k", "sha256:one")
	good := Payloads(1, []history.Range{{Start: 0, End: 3}})
	newer := history.Object{Key: "k", Identity: "sha256:two"}
	of := *a.In.Object
	build := func(level uint32, readBack bool) history.History {
		var b builder
		b.h.Level = level
		b.add(openOp(), 0, 1)
		b.add(a, 2, 3)
		b.add(history.Op{Kind: history.KindReupload, In: history.Input{Object: &newer, Of: &of}}, 4, 5)
		b.add(readOf(a, 1, good, a.In.DataCRC, "ok"), 6, 31)
		d := describeOp(3, 0)
		d.Final = true
		b.add(d, 40, 41)
		if readBack {
			r := readOf(a, 0, good, a.In.DataCRC, "ok")
			r.Final = true
			b.add(r, 42, 43)
		}
		return b.h
	}
	if l := CheckLinearizable(build(3, true), time.Minute); l.Result != "Ok" {
		t.Fatalf("level 3: the old version's record refused after a new version: %v %v", l.Result, l.Anomalies)
	}
	if got := CheckIntact(build(3, true)); len(got) != 0 {
		t.Fatalf("level 3: complete read-back reported: %v", got)
	}
	if got := CheckIntact(build(3, false)); len(got) != 1 || !strings.Contains(got[0].Detail, "committed offset 0") {
		t.Fatalf("level 3: offsets of a key that gained a version not covered: %v", got)
	}
	if l := CheckLinearizable(build(2, true), time.Minute); l.Result != "Illegal" {
		t.Fatalf("level 2: the replaced version's record accepted: %v", l.Result)
	}
	if got := CheckIntact(build(2, false)); len(got) != 0 {
		t.Fatalf("level 2: replaced offsets reported: %v", got)
	}
	// The same version registered again (same bytes, local store) replaces
	// nothing, at any level.
	h := build(2, false)
	h.Ops[2].In.Object = &of
	if got := CheckIntact(h); len(got) != 1 {
		t.Fatalf("level 2: a reupload of the same version excused the offsets: %v", got)
	}
}

// TestDataAnomaliesCappedPerObject: an object read wrong many times is
// reported by its first reads and a count of the rest.
func TestDataAnomaliesCappedPerObject(t *testing.T) {
	a := crcAppend(0, 3, "k", "sha256:one")
	bad := flipped(Payloads(1, []history.Range{{Start: 0, End: 3}}), 2)
	var b builder
	b.add(a, 0, 1)
	for i := range int64(perObject + 3) {
		b.add(readOf(a, 1, bad, a.In.DataCRC, "ok"), 2+i, 3+i)
	}
	got := CheckData(b.h)
	if len(got) != perObject+1 || !strings.Contains(got[perObject].Detail, "3 more reads of k") {
		t.Fatalf("want %d anomalies and a count, got %v", perObject, got)
	}
}

// TestEvidenceKeepsTheCommittedChecksum: the final append evidence holds
// each append's committed data checksum (from level 3, always).
func TestEvidenceKeepsTheCommittedChecksum(t *testing.T) {
	a := crcAppend(0, 3, "k", "sha256:one")
	other := *a.In.DataCRC + 1
	for _, c := range []struct {
		level uint32
		crc   *uint32
		bad   bool
	}{{3, a.In.DataCRC, false}, {3, nil, true}, {3, &other, true}, {2, nil, false}, {2, &other, true}} {
		var b builder
		b.h.Level = c.level
		b.add(a, 0, 1)
		b.add(history.Op{Kind: history.KindEvidence, Final: true, Out: &history.Output{Evidence: []history.Evidence{{
			Range: history.Range{Start: 0, End: 3}, Object: *a.In.Object, Bytes: a.In.Bytes, DataCRC: c.crc}}}}, 2, 3)
		if got := CheckData(b.h); (len(got) > 0) != c.bad {
			t.Errorf("level %d crc %v: %v", c.level, c.crc, got)
		}
	}
}

// TestNewVersionMayBeCollected: with many versions per key a version is
// collected on its own, so an append naming a new version nothing
// references yet may be refused OBJECT_NOT_LIVE though its key is
// referenced; with one version per key the referenced key is live.
func TestNewVersionMayBeCollected(t *testing.T) {
	for _, versions := range []bool{true, false} {
		s := NewStreamAt(1, versions)
		_, s, _ = Step(s, &history.Op{Kind: history.KindOpen, Status: history.OK, Out: &history.Output{Epoch: 1}})
		a := crcAppend(0, 3, "k", "sha256:one")
		_, s, _ = Step(s, &a)
		next := crcAppend(3, 5, "k", "sha256:two")
		next.Status, next.Reason, next.Out = history.Rejected, ReasonObjectNotLive, nil
		if ok, _, why := Step(s, &next); ok != versions {
			t.Errorf("versions=%v: refusal of an append naming an unreferenced version: ok=%v %s", versions, ok, why)
		}
		same := crcAppend(3, 5, "k", "sha256:one")
		same.Status, same.Reason, same.Out = history.Rejected, ReasonObjectNotLive, nil
		if ok, _, _ := Step(s, &same); ok {
			t.Errorf("versions=%v: refusal of an append naming a referenced version accepted", versions)
		}
	}
}
