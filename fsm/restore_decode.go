package fsm

import (
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/metad/metad/checksum"
	"github.com/metad/metad/fsm/fsmpb"
)

// Restore's fast path. Index records and evidence entries are nearly all of
// a large snapshot, and decoding each through proto.Unmarshal cost about a
// dozen allocations (one per nested message) and half of restore's CPU. The
// decoders here read those two record kinds straight from the wire into a
// reused plain struct, and give up — returning false, so the caller falls
// back to proto.Unmarshal — on anything they do not expect: another record
// kind, an unknown field, a field twice (proto merges or overwrites, the
// fast path does not try), a wire type other than the field's, a truncated
// or overlong value, a string that is not UTF-8. So when they succeed, the
// result is exactly what proto.Unmarshal and the conversion below would
// give (TestFastDecodeMatchesProto and FuzzFastDecode check it), and every
// malformed record still fails, on the slow path, as it did before.

// Field numbers of the messages the fast path reads (fsmpb/fsm.proto).
const (
	fieldSnapshotEvidence    = 3
	fieldSnapshotIndexRecord = 5
)

// restoredRecord is an IndexRecordState as restore needs it. object's
// key and identity may alias the read buffer: valid only until the next
// record is read, so whatever keeps them must copy (intern does).
type restoredRecord struct {
	key       IndexKey
	hasBody   bool // IndexRecordState.record was present
	rng       Range
	survivors []Range
	objKey    []byte
	objID     []byte
	bytes     ByteRange
	checksum  uint32
	data      checksum.Data
	version   uint64
	status    RecordStatus
}

// restoredEvidence is an EvidenceState as restore needs it; its object
// strings alias the read buffer like restoredRecord's.
type restoredEvidence struct {
	stream  uint64
	rng     Range
	objKey  []byte
	objID   []byte
	bytes   ByteRange
	epoch   uint64
	version uint64
	data    checksum.Data
}

// restoredRecordOf converts a decoded message: the slow path's equivalent
// of decodeIndexRecord.
func restoredRecordOf(rs *fsmpb.IndexRecordState) restoredRecord {
	out := restoredRecord{key: indexKeyOf(rs.Key), version: rs.Version, status: rs.Status}
	if pr := rs.Record; pr != nil {
		ref := refOf(pr.Object)
		out.hasBody = true
		out.rng, out.survivors, out.bytes, out.checksum = rangeOf(pr.Range), rangesOf(pr.Survivors), byteRangeOf(pr.Bytes), pr.Checksum
		out.data = checksum.FromPtr(pr.DataCrc32C)
		out.objKey, out.objID = []byte(ref.Key), []byte(ref.Identity)
	}
	return out
}

// restoredEvidenceOf is restoredRecordOf for evidence.
func restoredEvidenceOf(e *fsmpb.EvidenceState) restoredEvidence {
	ref := refOf(e.Object)
	return restoredEvidence{
		stream: e.StreamId, rng: rangeOf(e.Range), objKey: []byte(ref.Key), objID: []byte(ref.Identity),
		bytes: byteRangeOf(e.Bytes), epoch: e.WriterEpoch, version: e.Version, data: checksum.FromPtr(e.DataCrc32C),
	}
}

// wireReader walks the fields of one message, refusing (ok false) what
// the fast path does not handle: see the comment at the top of the file.
type wireReader struct {
	b    []byte
	seen uint32 // bit n: field n was read
	ok   bool
}

func newWireReader(b []byte) wireReader { return wireReader{b: b, ok: true} }

// next returns the next field's number and wire type, or false at the end
// of the message or on a tag it refuses. maxField bounds the field numbers
// the message has.
func (r *wireReader) next(maxField protowire.Number) (protowire.Number, protowire.Type, bool) {
	if !r.ok || len(r.b) == 0 {
		return 0, 0, false
	}
	num, typ, n := protowire.ConsumeTag(r.b)
	if n < 0 || num < 1 || num > maxField || r.seen&(1<<num) != 0 {
		r.ok = false
		return 0, 0, false
	}
	r.seen |= 1 << num
	r.b = r.b[n:]
	return num, typ, true
}

// repeatable forgets that field num was seen: for a repeated field.
func (r *wireReader) repeatable(num protowire.Number) { r.seen &^= 1 << num }

func (r *wireReader) varint(typ protowire.Type) uint64 {
	if typ != protowire.VarintType {
		r.ok = false
		return 0
	}
	v, n := protowire.ConsumeVarint(r.b)
	if n < 0 {
		r.ok = false
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *wireReader) bytes(typ protowire.Type) []byte {
	if typ != protowire.BytesType {
		r.ok = false
		return nil
	}
	v, n := protowire.ConsumeBytes(r.b)
	if n < 0 {
		r.ok = false
		return nil
	}
	r.b = r.b[n:]
	return v
}

// message reads a nested message with decode, which reports its own success.
func (r *wireReader) message(typ protowire.Type, decode func([]byte) bool) {
	b := r.bytes(typ)
	if r.ok && !decode(b) {
		r.ok = false
	}
}

// fixed32 reads an optional fixed32 field (a data checksum): present.
func (r *wireReader) fixed32(typ protowire.Type) checksum.Data {
	if typ != protowire.Fixed32Type {
		r.ok = false
		return checksum.Data{}
	}
	v, n := protowire.ConsumeFixed32(r.b)
	if n < 0 {
		r.ok = false
		return checksum.Data{}
	}
	r.b = r.b[n:]
	return checksum.Data{CRC: v, Set: true}
}

// str reads a proto3 string field, which proto.Unmarshal requires to be UTF-8.
func (r *wireReader) str(typ protowire.Type) []byte {
	b := r.bytes(typ)
	if r.ok && !utf8.Valid(b) {
		r.ok = false
	}
	return b
}

// done reports whether the whole message was read without refusal.
func (r *wireReader) done() bool { return r.ok && len(r.b) == 0 }

// decodeSnapshotRecord reads the oneof of a SnapshotRecord when it is one
// of the fast path's kinds, returning its field number and the payload.
func decodeSnapshotRecord(b []byte) (protowire.Number, []byte, bool) {
	r := newWireReader(b)
	num, typ, ok := r.next(fieldSnapshotIndexRecord)
	if !ok || (num != fieldSnapshotEvidence && num != fieldSnapshotIndexRecord) {
		return 0, nil, false
	}
	payload := r.bytes(typ)
	return num, payload, r.done()
}

// decodeIndexRecordState fills out from an IndexRecordState's bytes.
func decodeIndexRecordState(b []byte, out *restoredRecord) bool {
	*out = restoredRecord{}
	r := newWireReader(b)
	for {
		num, typ, ok := r.next(4)
		if !ok {
			return r.done()
		}
		switch num {
		case 1:
			r.message(typ, func(b []byte) bool { return decodeIndexKey(b, &out.key) })
		case 2:
			out.hasBody = true
			r.message(typ, func(b []byte) bool { return decodeIndexRecord(b, out) })
		case 3:
			out.version = r.varint(typ)
		case 4:
			out.status = RecordStatus(int32(r.varint(typ)))
		}
	}
}

func decodeIndexKey(b []byte, k *IndexKey) bool {
	r := newWireReader(b)
	for {
		num, typ, ok := r.next(4)
		if !ok {
			return r.done()
		}
		switch num {
		case 1:
			k.Stream = r.varint(typ)
		case 2:
			k.View = View(int32(r.varint(typ)))
		case 3:
			k.Generation = r.varint(typ)
		case 4:
			k.Start = r.varint(typ)
		}
	}
}

func decodeIndexRecord(b []byte, out *restoredRecord) bool {
	r := newWireReader(b)
	for {
		num, typ, ok := r.next(6)
		if !ok {
			return r.done()
		}
		switch num {
		case 1:
			r.message(typ, func(b []byte) bool { return decodeRange(b, &out.rng) })
		case 2:
			r.repeatable(2)
			var s Range
			r.message(typ, func(b []byte) bool { return decodeRange(b, &s) })
			out.survivors = append(out.survivors, s)
		case 3:
			r.message(typ, func(b []byte) bool { return decodeObjectRef(b, &out.objKey, &out.objID) })
		case 4:
			r.message(typ, func(b []byte) bool { return decodeByteRange(b, &out.bytes) })
		case 5:
			out.checksum = uint32(r.varint(typ))
		case 6:
			out.data = r.fixed32(typ)
		}
	}
}

// decodeEvidenceState fills out from an EvidenceState's bytes.
func decodeEvidenceState(b []byte, out *restoredEvidence) bool {
	*out = restoredEvidence{}
	r := newWireReader(b)
	for {
		num, typ, ok := r.next(7)
		if !ok {
			return r.done()
		}
		switch num {
		case 1:
			out.stream = r.varint(typ)
		case 2:
			r.message(typ, func(b []byte) bool { return decodeRange(b, &out.rng) })
		case 3:
			r.message(typ, func(b []byte) bool { return decodeObjectRef(b, &out.objKey, &out.objID) })
		case 4:
			r.message(typ, func(b []byte) bool { return decodeByteRange(b, &out.bytes) })
		case 5:
			out.epoch = r.varint(typ)
		case 6:
			out.version = r.varint(typ)
		case 7:
			out.data = r.fixed32(typ)
		}
	}
}

func decodeRange(b []byte, rng *Range) bool { return decodePair(b, &rng.Start, &rng.End) }

func decodeByteRange(b []byte, br *ByteRange) bool { return decodePair(b, &br.Offset, &br.Length) }

// decodePair decodes a message of two varint fields, numbers 1 and 2
// (Range, ByteRange).
func decodePair(b []byte, first, second *uint64) bool {
	r := newWireReader(b)
	for {
		num, typ, ok := r.next(2)
		if !ok {
			return r.done()
		}
		if num == 1 {
			*first = r.varint(typ)
		} else {
			*second = r.varint(typ)
		}
	}
}

func decodeObjectRef(b []byte, key, identity *[]byte) bool {
	r := newWireReader(b)
	for {
		num, typ, ok := r.next(2)
		if !ok {
			return r.done()
		}
		if num == 1 {
			*key = r.str(typ)
		} else {
			*identity = r.str(typ)
		}
	}
}
