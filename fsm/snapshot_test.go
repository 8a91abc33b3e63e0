package fsm

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/fsm/fsmpb"
)

// richMachine builds a small state with one of everything: streams in each
// status, evidence, generations of both views in every live status,
// quarantined records, objects in every status, pins and dedup entries.
func richMachine(t testing.TB) *Machine {
	a := newApplier(t, WithInvariantChecks())
	a.now = int64(time.Hour)
	s1 := a.ok(withID(cmdCreate("one"), "c1")).StreamId
	s2 := a.ok(cmdCreate("two")).StreamId
	a.ok(cmdCreate("gone"))
	a.ok(cmdOpen(s1))
	objs := []ObjectRef{{"a", "A"}, {"b", "B"}, {"c", "C"}, {"d", "D"}}
	for _, o := range objs {
		a.ok(cmdRegister(o, 1000))
	}
	for i := range uint64(4) {
		a.ok(withID(cmdAppend(s1, 1, i*10, i*10+10, objs[i%2], ByteRange{i * 100, 100}, i != 2), "a"+string(rune('0'+i))))
	}
	a.ok(cmdAppend(s2, 0, 0, 5, objs[1], ByteRange{0, 5}, true))
	a.ok(cmdSeal(s2))
	a.ok(cmdPublish(s1, TopicCompacted, 3, 1, Range{0, 40}, true,
		NewIndexRecord(IndexKey{s1, TopicCompacted, 3, 0}, Range{0, 20}, []Range{{1, 2}, {15, 18}}, objs[1], ByteRange{0, 9}),
		NewIndexRecord(IndexKey{s1, TopicCompacted, 3, 20}, Range{20, 40}, []Range{{39, 40}}, objs[1], ByteRange{9, 9})))
	a.ok(cmdPublish(s1, TopicCompacted, 4, 1, Range{0, 40}, false,
		NewIndexRecord(IndexKey{s1, TopicCompacted, 4, 5}, Range{5, 6}, []Range{{5, 6}}, objs[0], ByteRange{0, 1})))
	a.ok(cmdPublish(s1, Committed, 2, 1, Range{10, 40}, true,
		NewIndexRecord(IndexKey{s1, Committed, 2, 10}, Range{10, 40}, nil, objs[0], ByteRange{0, 300})))
	a.ok(cmdReport(IndexKey{s1, Committed, 0, 10}, 10, fsmpb.FailureKind_FAILURE_KIND_CORRUPT, "bad"))
	a.ok(cmdTrim(s1, 5))
	a.now += int64(time.Second)
	a.ok(cmdPin(objs[0], "reader", int64(time.Minute)))
	a.ok(cmdPin(objs[2], "gc-test", int64(time.Second)))
	a.ok(cmdDeleting(objs[2]))
	a.ok(cmdDeleting(objs[3]))
	a.ok(cmdDeleted(objs[3]))
	a.ok(cmdDelete(3))
	a.refused(withID(cmdTrim(s1, 1), "t-back"), fsmpb.RejectCode_TRIM_BACKWARDS)
	return a.m
}

func snapshotBytes(t testing.TB, m *Machine) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := m.WriteSnapshot(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestSnapshotRoundTrip(t *testing.T) {
	m := richMachine(t)
	snap := snapshotBytes(t, m.Clone())
	hdr, err := ReadHeader(bytes.NewReader(snap))
	if err != nil {
		t.Fatal(err)
	}
	sum, n, err := m.StateHash()
	if err != nil {
		t.Fatal(err)
	}
	if hdr.Format != 1 || hdr.AppliedIndex != m.AppliedIndex() || hdr.Records != n || hdr.Checksum != sum {
		t.Fatalf("header %+v, want applied %d, %d records, checksum %x", hdr, m.AppliedIndex(), n, sum)
	}
	if want := sha256.Sum256(snap[headerSize:]); want != sum {
		t.Fatal("the state hash is not the SHA-256 of the snapshot body")
	}
	m2, err := Restore(bytes.NewReader(snap), WithInvariantChecks())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, m2), snap) {
		t.Fatal("snapshot → Restore → snapshot differs")
	}
	if m2.AppliedIndex() != m.AppliedIndex() || m2.Clock() != m.Clock() || m2.Counts() != m.Counts() {
		t.Fatalf("restored %d %d %+v, want %d %d %+v", m2.AppliedIndex(), m2.Clock(), m2.Counts(),
			m.AppliedIndex(), m.Clock(), m.Counts())
	}
	// The restored machine behaves the same: the same commands give the
	// same results and the same state.
	for i, c := range []*fsmpb.Command{
		cmdCreate("one"), withID(cmdTrim(1, 1), "t-back"), cmdRelease(1), cmdPin(ObjectRef{"a", "A"}, "x", 1e9),
		cmdAppend(1, 1, 40, 41, ObjectRef{"a", "A"}, ByteRange{}, true), cmdCreate("new"),
	} {
		idx := m.AppliedIndex() + 1
		c.StampUnixNano = m.Clock() + int64(i)
		r1, r2 := m.Apply(idx, proto.Clone(c).(*fsmpb.Command)), m2.Apply(idx, c)
		if !proto.Equal(r1, r2) {
			t.Fatalf("command %d: original %v, restored %v", i, r1, r2)
		}
	}
	h1, _, _ := m.StateHash()
	h2, _, _ := m2.StateHash()
	if h1 != h2 {
		t.Fatal("original and restored machines diverged")
	}
}

func TestSnapshotEmptyMachine(t *testing.T) {
	snap := snapshotBytes(t, New())
	m, err := Restore(bytes.NewReader(snap))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshotBytes(t, m), snap) {
		t.Fatal("empty machine does not round trip")
	}
}

func wantCorrupt(t *testing.T, what string, snap []byte) {
	t.Helper()
	m, err := Restore(bytes.NewReader(snap))
	if !errors.Is(err, ErrCorruptSnapshot) || m != nil {
		t.Fatalf("%s: Restore gave (%v, %v), want an error wrapping ErrCorruptSnapshot", what, m != nil, err)
	}
}

func TestRestoreRejectsCorruptHeaders(t *testing.T) {
	snap := snapshotBytes(t, richMachine(t))
	edit := func(f func([]byte)) []byte {
		b := bytes.Clone(snap)
		f(b)
		return b
	}
	wantCorrupt(t, "bad magic", edit(func(b []byte) { copy(b, "METADSNQ") }))
	wantCorrupt(t, "format 2", edit(func(b []byte) { binary.BigEndian.PutUint32(b[8:], 2) }))
	wantCorrupt(t, "format 0", edit(func(b []byte) { binary.BigEndian.PutUint32(b[8:], 0) }))
	wantCorrupt(t, "one more record", edit(func(b []byte) { binary.BigEndian.PutUint64(b[24:], binary.BigEndian.Uint64(b[24:])+1) }))
	wantCorrupt(t, "one record less", edit(func(b []byte) { binary.BigEndian.PutUint64(b[24:], binary.BigEndian.Uint64(b[24:])-1) }))
	wantCorrupt(t, "no records", edit(func(b []byte) { binary.BigEndian.PutUint64(b[24:], 0) }))
	wantCorrupt(t, "applied index changed", edit(func(b []byte) { b[23]++ }))
	wantCorrupt(t, "reserved bytes changed", edit(func(b []byte) { b[13] ^= 1 }))
	wantCorrupt(t, "checksum changed", edit(func(b []byte) { b[63] ^= 1 }))
	wantCorrupt(t, "empty", nil)
	wantCorrupt(t, "short header", snap[:headerSize-1])
	wantCorrupt(t, "header only", snap[:headerSize])
	wantCorrupt(t, "trailing byte", append(bytes.Clone(snap), 0))
	wantCorrupt(t, "trailing record", append(bytes.Clone(snap), snap[headerSize:headerSize+20]...))
	if _, err := ReadHeader(bytes.NewReader(edit(func(b []byte) { b[0] = 'X' }))); !errors.Is(err, ErrCorruptSnapshot) {
		t.Fatalf("ReadHeader of a bad magic: %v", err)
	}
}

func TestRestoreRejectsEveryTruncation(t *testing.T) {
	snap := snapshotBytes(t, richMachine(t))
	for n := range len(snap) {
		if _, err := Restore(bytes.NewReader(snap[:n])); !errors.Is(err, ErrCorruptSnapshot) {
			t.Fatalf("truncated to %d of %d bytes: %v", n, len(snap), err)
		}
	}
}

func TestRestoreRejectsEveryFlippedByte(t *testing.T) {
	snap := snapshotBytes(t, richMachine(t))
	b := bytes.Clone(snap)
	for i := range b {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			b[i] ^= mask
			m, err := Restore(bytes.NewReader(b))
			if !errors.Is(err, ErrCorruptSnapshot) || m != nil {
				t.Fatalf("byte %d ^ %#x of %d: Restore gave %v", i, mask, len(b), err)
			}
			b[i] ^= mask
		}
	}
}

// snapshotRecords decodes a snapshot into its header and records.
func snapshotRecords(t *testing.T, snap []byte) (Header, []*fsmpb.SnapshotRecord) {
	t.Helper()
	var recs []*fsmpb.SnapshotRecord
	hdr, err := ReadSnapshot(bytes.NewReader(snap), func(r *fsmpb.SnapshotRecord) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hdr, recs
}

// encodeSnapshot writes records under a well-formed header with a correct
// checksum: only what the records say can be wrong.
func encodeSnapshot(t *testing.T, applied uint64, recs []*fsmpb.SnapshotRecord) []byte {
	t.Helper()
	var body []byte
	for _, r := range recs {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		body = binary.AppendUvarint(body, uint64(len(b)))
		body = append(body, b...)
	}
	m := New()
	m.applied = applied
	// Reuse the writer's header code on an empty machine, then patch in
	// this body's count and checksum.
	hdr := snapshotBytes(t, m)[:headerSize]
	binary.BigEndian.PutUint64(hdr[24:], uint64(len(recs)))
	sum := sha256.Sum256(body)
	copy(hdr[32:], sum[:])
	sealHeader(hdr)
	return append(hdr, body...)
}

func TestRestoreRejectsRecordsOutOfOrder(t *testing.T) {
	snap := snapshotBytes(t, richMachine(t))
	hdr, recs := snapshotRecords(t, snap)
	if got := encodeSnapshot(t, hdr.AppliedIndex, recs); !bytes.Equal(got, snap) {
		t.Fatal("re-encoding the records does not give the snapshot back")
	}
	kind := func(r *fsmpb.SnapshotRecord) string {
		return string(r.ProtoReflect().WhichOneof(r.ProtoReflect().Descriptor().Oneofs().ByName("record")).Name())
	}
	index := func(k string, nth int) int {
		for i, r := range recs {
			if kind(r) == k {
				if nth == 0 {
					return i
				}
				nth--
			}
		}
		t.Fatalf("no %s record #%d", k, nth)
		return -1
	}
	move := func(from, to int) []*fsmpb.SnapshotRecord {
		out := append([]*fsmpb.SnapshotRecord(nil), recs[:from]...)
		out = append(out, recs[from+1:]...)
		return append(out[:to:to], append([]*fsmpb.SnapshotRecord{recs[from]}, out[to:]...)...)
	}
	without := func(i int) []*fsmpb.SnapshotRecord {
		return append(append([]*fsmpb.SnapshotRecord(nil), recs[:i]...), recs[i+1:]...)
	}
	dup := func(i int) []*fsmpb.SnapshotRecord {
		return append(append(append([]*fsmpb.SnapshotRecord(nil), recs[:i+1]...), recs[i]), recs[i+1:]...)
	}
	swap := func(i, j int) []*fsmpb.SnapshotRecord {
		out := append([]*fsmpb.SnapshotRecord(nil), recs...)
		out[i], out[j] = out[j], out[i]
		return out
	}
	stream, evidence, gen, rec := index("stream", 0), index("evidence", 0), index("generation", 0), index("index_record", 0)
	for name, rs := range map[string][]*fsmpb.SnapshotRecord{
		"evidence before its stream":      move(evidence, stream),
		"generation before its stream":    move(gen, stream),
		"record before its generation":    move(rec, gen),
		"stream first":                    move(stream, 0),
		"meta last":                       move(0, len(recs)-1),
		"no meta":                         without(0),
		"objects after streams":           move(index("object", 0), index("pin", 0)-1),
		"pin before its object":           move(index("pin", 0), 1),
		"dedup before pins":               move(index("dedup", 0), index("pin", 0)),
		"evidence swapped":                swap(evidence, evidence+1),
		"records swapped":                 swap(index("index_record", 0), index("index_record", 1)),
		"objects swapped":                 swap(index("object", 0), index("object", 1)),
		"dedup swapped":                   swap(index("dedup", 0), index("dedup", 1)),
		"pins swapped":                    swap(index("pin", 0), index("pin", 1)),
		"streams swapped":                 swap(stream, index("stream", 1)),
		"duplicate object":                dup(index("object", 1)),
		"duplicate evidence":              dup(evidence),
		"duplicate record":                dup(rec),
		"duplicate stream":                dup(stream),
		"duplicate pin":                   dup(index("pin", 0)),
		"duplicate dedup":                 dup(index("dedup", 0)),
		"duplicate meta":                  dup(0),
		"missing evidence":                without(evidence),
		"missing object":                  without(index("object", 0)),
		"generation of the other stream":  move(index("generation", 3), index("stream", 1)+1),
		"empty record":                    append(append([]*fsmpb.SnapshotRecord(nil), recs...), &fsmpb.SnapshotRecord{}),
		"dedup entry without result":      append(append([]*fsmpb.SnapshotRecord(nil), recs...), &fsmpb.SnapshotRecord{Record: &fsmpb.SnapshotRecord_Dedup{Dedup: &fsmpb.DedupState{RequestId: "zz"}}}),
		"generations of a view reordered": swap(index("generation", 1), index("generation", 2)),
	} {
		t.Run(name, func(t *testing.T) { wantCorrupt(t, name, encodeSnapshot(t, hdr.AppliedIndex, rs)) })
	}
}

// failingReader returns err after n bytes.
type failingReader struct {
	r   io.Reader
	n   int
	err error
}

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, f.err
	}
	if len(p) > f.n {
		p = p[:f.n]
	}
	n, err := f.r.Read(p)
	f.n -= n
	return n, err
}

func TestRestoreReaderFailureIsNotCorruption(t *testing.T) {
	snap := snapshotBytes(t, richMachine(t))
	errDisk := errors.New("disk on fire")
	for _, n := range []int{0, 10, headerSize, headerSize + 1, len(snap) / 2, len(snap) - 1} {
		_, err := Restore(&failingReader{r: bytes.NewReader(snap), n: n, err: errDisk})
		if !errors.Is(err, errDisk) || errors.Is(err, ErrCorruptSnapshot) {
			t.Fatalf("reader failing after %d bytes: %v; want the reader's error, not ErrCorruptSnapshot", n, err)
		}
	}
	// The whole snapshot, then a failure instead of EOF.
	if _, err := Restore(&failingReader{r: bytes.NewReader(snap), n: len(snap), err: errDisk}); !errors.Is(err, errDisk) {
		t.Fatalf("reader failing at the end: %v", err)
	}
}

type failingWriter struct{ n int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return f.n, io.ErrShortWrite
	}
	f.n -= len(p)
	return len(p), nil
}

func TestWriteSnapshotWriterFailure(t *testing.T) {
	m := richMachine(t)
	size := len(snapshotBytes(t, m))
	for _, n := range []int{0, headerSize, size - 1} {
		if err := m.WriteSnapshot(&failingWriter{n: n}); !errors.Is(err, io.ErrShortWrite) {
			t.Fatalf("writer failing after %d bytes: %v", n, err)
		}
	}
	if err := m.WriteSnapshot(&failingWriter{n: size}); err != nil {
		t.Fatal(err)
	}
}

func TestReadSnapshotVisitorError(t *testing.T) {
	snap := snapshotBytes(t, richMachine(t))
	stop := errors.New("stop")
	n := 0
	_, err := ReadSnapshot(bytes.NewReader(snap), func(*fsmpb.SnapshotRecord) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 {
		t.Fatalf("visitor error: %v after %d records", err, n)
	}
}

func TestCloneIsIsolated(t *testing.T) {
	m := richMachine(t)
	c := m.Clone()
	hash, _, _ := c.StateHash()
	snap := snapshotBytes(t, c)
	a := &applier{t: t, m: m, idx: m.AppliedIndex(), now: m.Clock()}
	a.ok(cmdAppend(1, 1, 40, 50, ObjectRef{"a", "A"}, ByteRange{}, true))
	a.ok(cmdTrim(1, 30))
	a.ok(cmdRetire(1, TopicCompacted, 3))
	a.ok(cmdReport(IndexKey{1, Committed, 0, 40}, a.idx-2, fsmpb.FailureKind_FAILURE_KIND_CORRUPT, ""))
	a.ok(cmdRegister(ObjectRef{"a", "A2"}, 1))
	a.ok(cmdRelease(1))
	a.ok(cmdDelete(2))
	a.ok(withID(cmdCreate("x"), "new"))
	if h, _, _ := c.StateHash(); h != hash {
		t.Fatal("applying to the original changed the clone")
	}
	if !bytes.Equal(snapshotBytes(t, c), snap) {
		t.Fatal("applying to the original changed the clone's snapshot")
	}
	// And the other way round.
	hm, _, _ := m.StateHash()
	b := &applier{t: t, m: c, idx: c.AppliedIndex(), now: c.Clock()}
	b.ok(cmdAppend(1, 1, 40, 45, ObjectRef{"b", "B"}, ByteRange{}, true))
	b.ok(cmdTrim(1, 20))
	b.ok(cmdPublish(1, TopicCompacted, 9, 1, Range{20, 45}, true))
	if h, _, _ := m.StateHash(); h != hm {
		t.Fatal("applying to the clone changed the original")
	}
}

// TestPlanSnapshotGivesTheLength: the plan's size is the snapshot's length
// and its hash the header's, on both implementations.
func TestPlanSnapshotGivesTheLength(t *testing.T) {
	for _, onStore := range []bool{false, true} {
		testOnStore = onStore
		st := newStepper(randChooser{newRand(7)})
		for range 200 {
			if _, _, err := st.step(); err != nil {
				t.Fatal(err)
			}
		}
		testOnStore = false
		c := st.m.Clone()
		plan, err := c.PlanSnapshot()
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := c.WritePlanned(&buf, plan); err != nil {
			t.Fatal(err)
		}
		c.Close()
		if int64(buf.Len()) != plan.Size {
			t.Errorf("on store %v: plan says %d bytes, snapshot has %d", onStore, plan.Size, buf.Len())
		}
		hdr, err := ReadHeader(bytes.NewReader(buf.Bytes()))
		if err != nil || hdr.Checksum != plan.Sum || hdr.Records != plan.Records {
			t.Errorf("on store %v: header %+v (%v), plan %+v", onStore, hdr, err, plan)
		}
	}
}
