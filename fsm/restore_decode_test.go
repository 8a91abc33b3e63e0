package fsm

import (
	"bytes"
	"crypto/sha256"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/fsm/fsmpb"
)

// decoded is what one decoder made of a SnapshotRecord's bytes: an index
// record, an evidence entry, or neither.
type decoded struct {
	kind     protowire.Number // fieldSnapshotIndexRecord, fieldSnapshotEvidence or 0
	record   restoredRecord
	evidence restoredEvidence
}

// fastDecoded is what restore's fast path makes of b, and whether it took it.
func fastDecoded(b []byte) (decoded, bool) {
	var d decoded
	num, payload, ok := decodeSnapshotRecord(b)
	switch {
	case ok && num == fieldSnapshotIndexRecord && decodeIndexRecordState(payload, &d.record):
		d.kind = num
	case ok && num == fieldSnapshotEvidence && decodeEvidenceState(payload, &d.evidence):
		d.kind = num
	default:
		return decoded{}, false
	}
	return d, true
}

// protoDecoded is what the slow path makes of b: proto.Unmarshal, then the
// conversion restoreRecord applies.
func protoDecoded(b []byte) (decoded, error) {
	rec := &fsmpb.SnapshotRecord{}
	if err := proto.Unmarshal(b, rec); err != nil {
		return decoded{}, err
	}
	switch r := rec.Record.(type) {
	case *fsmpb.SnapshotRecord_IndexRecord:
		return decoded{kind: fieldSnapshotIndexRecord, record: restoredRecordOf(r.IndexRecord)}, nil
	case *fsmpb.SnapshotRecord_Evidence:
		return decoded{kind: fieldSnapshotEvidence, evidence: restoredEvidenceOf(r.Evidence)}, nil
	}
	return decoded{}, nil
}

// normalized makes equal what restore treats alike: an empty byte slice and
// a nil one (both become ""), no survivors and an empty list of them.
func (d decoded) normalized() decoded {
	fix := func(b *[]byte) {
		if len(*b) == 0 {
			*b = nil
		}
	}
	fix(&d.record.objKey)
	fix(&d.record.objID)
	fix(&d.evidence.objKey)
	fix(&d.evidence.objID)
	if len(d.record.survivors) == 0 {
		d.record.survivors = nil
	}
	return d
}

// checkFastMatchesProto fails if the fast path accepts b but proto.Unmarshal
// does not, or makes something else of it. It reports whether the fast
// path took b.
func checkFastMatchesProto(t testing.TB, b []byte) bool {
	t.Helper()
	fast, ok := fastDecoded(b)
	if !ok {
		return false
	}
	slow, err := protoDecoded(b)
	if err != nil {
		t.Fatalf("fast path accepted %x, proto.Unmarshal refused it: %v", b, err)
	}
	if !reflect.DeepEqual(fast.normalized(), slow.normalized()) {
		t.Fatalf("fast path and proto.Unmarshal differ on %x:\nfast  %+v\nproto %+v", b, fast, slow)
	}
	return true
}

// realRecords are the marshalled SnapshotRecords of a snapshot of m.
func realRecords(t testing.TB, m *Machine) [][]byte {
	t.Helper()
	var out [][]byte
	_, err := readSnapshot(bytes.NewReader(snapshotBytes(t, m)), func(_ uint64, b []byte) error {
		out = append(out, bytes.Clone(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func marshalRecord(t testing.TB, r *fsmpb.SnapshotRecord) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// edgeRecords are index records and evidence with every field at an edge:
// zero, absent, present but empty, the largest value, enums out of range.
func edgeRecords(t testing.TB) [][]byte {
	big := uint64(math.MaxUint64)
	recs := []*fsmpb.SnapshotRecord{
		{Record: &fsmpb.SnapshotRecord_IndexRecord{IndexRecord: &fsmpb.IndexRecordState{}}},
		{Record: &fsmpb.SnapshotRecord_IndexRecord{IndexRecord: &fsmpb.IndexRecordState{
			Key: &fsmpb.IndexKey{}, Record: &fsmpb.IndexRecord{Range: &fsmpb.Range{}, Object: &fsmpb.ObjectRef{}, Bytes: &fsmpb.ByteRange{}},
		}}},
		{Record: &fsmpb.SnapshotRecord_IndexRecord{IndexRecord: &fsmpb.IndexRecordState{
			Key:     &fsmpb.IndexKey{StreamId: big, View: fsmpb.View(-7), Generation: big, Start: big},
			Record:  &fsmpb.IndexRecord{Range: &fsmpb.Range{Start: big, End: big}, Survivors: []*fsmpb.Range{{}, {Start: 1, End: big}}, Object: &fsmpb.ObjectRef{Key: "ключ", Identity: "☃"}, Bytes: &fsmpb.ByteRange{Offset: big, Length: big}, Checksum: math.MaxUint32},
			Version: big, Status: fsmpb.RecordStatus(math.MaxInt32),
		}}},
		{Record: &fsmpb.SnapshotRecord_Evidence{Evidence: &fsmpb.EvidenceState{}}},
		{Record: &fsmpb.SnapshotRecord_Evidence{Evidence: &fsmpb.EvidenceState{
			StreamId: big, Range: &fsmpb.Range{Start: 1}, Object: &fsmpb.ObjectRef{Identity: "x"}, Bytes: &fsmpb.ByteRange{Length: 3}, WriterEpoch: big, Version: 1,
		}}},
	}
	out := make([][]byte, len(recs))
	for i, r := range recs {
		out[i] = marshalRecord(t, r)
	}
	return out
}

// TestFastDecodeMatchesProto: on every index record and evidence entry a
// writer makes, the fast path is taken and agrees with proto.Unmarshal;
// on other record kinds it is not taken.
func TestFastDecodeMatchesProto(t *testing.T) {
	records := append(realRecords(t, richMachine(t)), edgeRecords(t)...)
	var fast int
	for _, b := range records {
		took := checkFastMatchesProto(t, b)
		slow, err := protoDecoded(b)
		if err != nil {
			t.Fatal(err)
		}
		if took != (slow.kind != 0) {
			t.Errorf("fast path taken %v for a record of kind %d: %x", took, slow.kind, b)
		}
		if took {
			fast++
		}
	}
	if fast < 10 {
		t.Fatalf("only %d records took the fast path", fast)
	}
}

// TestFastDecodeFallsBack: what proto.Unmarshal reads differently from a
// single pass (a field twice, which merges or overwrites), ignores (an
// unknown field, a known field of another wire type) or refuses (bad UTF-8,
// a truncated value) is left to it.
func TestFastDecodeFallsBack(t *testing.T) {
	rec := marshalRecord(t, &fsmpb.SnapshotRecord{Record: &fsmpb.SnapshotRecord_IndexRecord{IndexRecord: &fsmpb.IndexRecordState{
		Key: &fsmpb.IndexKey{StreamId: 1}, Record: &fsmpb.IndexRecord{Range: &fsmpb.Range{Start: 1, End: 2}}, Version: 3,
	}}})
	wrap := func(state []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, fieldSnapshotIndexRecord, protowire.BytesType), state)
	}
	_, state, ok := decodeSnapshotRecord(rec)
	if !ok {
		t.Fatal("well-formed record refused")
	}
	version := func(v uint64) []byte {
		return protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), v)
	}
	badKey := marshalRecord(t, &fsmpb.SnapshotRecord{Record: &fsmpb.SnapshotRecord_Evidence{Evidence: &fsmpb.EvidenceState{
		Object: &fsmpb.ObjectRef{Key: "ab"},
	}}})
	badKey[bytes.Index(badKey, []byte("ab"))] = 0xff
	for name, b := range map[string][]byte{
		"field twice":       wrap(append(bytes.Clone(state), version(4)...)),
		"unknown field":     wrap(append(bytes.Clone(state), protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 1)...)),
		"other wire type":   wrap(append(bytes.Clone(state), protowire.AppendFixed64(protowire.AppendTag(nil, 4, protowire.Fixed64Type), 1)...)),
		"oneof twice":       append(bytes.Clone(rec), rec...),
		"bad utf-8":         badKey,
		"truncated":         rec[:len(rec)-1],
		"another kind":      marshalRecord(t, &fsmpb.SnapshotRecord{Record: &fsmpb.SnapshotRecord_Pin{Pin: &fsmpb.PinState{Id: 1}}}),
		"no record at all":  nil,
		"overlong varint":   wrap(append(bytes.Clone(state), append(protowire.AppendTag(nil, 4, protowire.VarintType), bytes.Repeat([]byte{0xff}, 11)...)...)),
		"field number zero": wrap(append(bytes.Clone(state), 0, 0)),
	} {
		if _, ok := fastDecoded(b); ok {
			t.Errorf("%s: fast path taken on %x", name, b)
		}
	}
}

// TestFastDecodeMutations checks the property on random changes to real
// records: flipped bytes, truncations, insertions.
func TestFastDecodeMutations(t *testing.T) {
	records := append(realRecords(t, richMachine(t)), edgeRecords(t)...)
	rng := rand.New(rand.NewPCG(seedOf("fast-decode"), 0))
	for range 200_000 {
		b := bytes.Clone(records[rng.IntN(len(records))])
		for range 1 + rng.IntN(3) {
			mutate(rng, &b)
		}
		checkFastMatchesProto(t, b)
	}
}

func mutate(rng *rand.Rand, b *[]byte) {
	switch n := len(*b); {
	case n > 0 && rng.IntN(3) == 0:
		(*b)[rng.IntN(n)] ^= byte(1 << rng.IntN(8))
	case n > 0 && rng.IntN(2) == 0:
		*b = (*b)[:rng.IntN(n)]
	default:
		i := rng.IntN(n + 1)
		*b = append((*b)[:i], append([]byte{byte(rng.Uint32())}, (*b)[i:]...)...)
	}
}

// FuzzFastDecode: whatever the bytes, the fast path either declines or
// agrees with proto.Unmarshal.
func FuzzFastDecode(f *testing.F) {
	for _, b := range append(realRecords(f, richMachine(f)), edgeRecords(f)...) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkFastMatchesProto(t, b) })
}

// TestRestoreTakesSlowPathAlike: a snapshot whose index records and evidence
// are not in the writer's shape (here: the version written twice, the last
// one counting, and an unknown field, ignored) restores to the same state
// as the canonical one.
func TestRestoreTakesSlowPathAlike(t *testing.T) {
	m := richMachine(t)
	snap := snapshotBytes(t, m)
	_, recs := snapshotRecords(t, snap)
	var body [][]byte
	for _, r := range recs {
		b := marshalRecord(t, r)
		var versionField protowire.Number
		var version uint64
		switch r := r.Record.(type) {
		case *fsmpb.SnapshotRecord_IndexRecord:
			versionField, version = 3, r.IndexRecord.Version
		case *fsmpb.SnapshotRecord_Evidence:
			versionField, version = 6, r.Evidence.Version
		}
		if versionField != 0 {
			num, state, _ := decodeSnapshotRecord(b)
			state = protowire.AppendVarint(protowire.AppendTag(bytes.Clone(state), versionField, protowire.VarintType), version+1)
			state = protowire.AppendVarint(protowire.AppendTag(state, versionField, protowire.VarintType), version)
			state = protowire.AppendVarint(protowire.AppendTag(state, 15, protowire.VarintType), 1)
			b = protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), state)
			if _, ok := fastDecoded(b); ok {
				t.Fatalf("fast path took a non-canonical record %x", b)
			}
		}
		body = append(body, b)
	}
	restored, err := Restore(bytes.NewReader(encodeRawSnapshot(t, m.applied, body)))
	if err != nil {
		t.Fatal(err)
	}
	if got := snapshotBytes(t, restored); !bytes.Equal(got, snap) {
		t.Fatal("state restored through proto.Unmarshal differs from the original")
	}
}

// encodeRawSnapshot is encodeSnapshot for records already marshalled.
func encodeRawSnapshot(t *testing.T, applied uint64, recs [][]byte) []byte {
	t.Helper()
	var raw []*fsmpb.SnapshotRecord
	for range recs {
		raw = append(raw, &fsmpb.SnapshotRecord{})
	}
	// Build the header from a snapshot of as many empty records, then
	// replace the body.
	snap := encodeSnapshot(t, applied, raw)
	var body []byte
	for _, b := range recs {
		body = protowire.AppendBytes(body, b)
	}
	return resealed(snap[:headerSize], body)
}

func resealed(hdr, body []byte) []byte {
	hdr = bytes.Clone(hdr)
	sum := sha256.Sum256(body)
	copy(hdr[32:], sum[:])
	sealHeader(hdr)
	return append(hdr, body...)
}

// TestRestoreAcrossChunks: generations and evidence longer than a restore
// chunk, put in the trees a chunk at a time, restore to the same state.
func TestRestoreAcrossChunks(t *testing.T) {
	for name, m := range map[string]*Machine{
		"published": buildPublished(t, restoreChunk+restoreChunk/2+1).m,
		"appends":   buildAppends(t, restoreChunk+3).m,
	} {
		snap := snapshotBytes(t, m)
		restored, err := Restore(bytes.NewReader(snap), WithInvariantChecks())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(snapshotBytes(t, restored), snap) {
			t.Fatalf("%s: restored state differs", name)
		}
	}
}
