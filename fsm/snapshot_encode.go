package fsm

import (
	"encoding/binary"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/checksum"
	"github.com/metad/metad/fsm/fsmpb"
)

// bodyWriter writes a snapshot body: each record as a uvarint length and
// the record's bytes. Records of most kinds are marshalled by proto; index
// records and evidence entries, nearly all of a large state, are encoded
// here by hand into exactly the bytes proto.MarshalOptions{Deterministic:
// true} gives for their SnapshotRecord (fields in number order, zero
// scalars left out, present messages written even when empty), which
// TestHandEncodingMatchesProto checks. Marshalling through proto cost half
// of a snapshot write's CPU.
type bodyWriter struct {
	w   io.Writer
	buf []byte // records not yet written to w
	n   uint64 // records written
	err error
}

// flushAt is how many bytes bodyWriter gathers before writing them.
const flushAt = 64 << 10

func newBodyWriter(w io.Writer) *bodyWriter {
	return &bodyWriter{w: w, buf: make([]byte, 0, flushAt+4<<10)}
}

// Size fills every message's size cache, so the marshal right after it
// uses the cache instead of sizing the record a second time.
var (
	sizeOptions    = proto.MarshalOptions{Deterministic: true}
	marshalOptions = proto.MarshalOptions{Deterministic: true, UseCachedSize: true}
)

// message writes one record through proto. It reports whether writing
// may go on.
func (bw *bodyWriter) message(r *fsmpb.SnapshotRecord) bool {
	if bw.err != nil {
		return false
	}
	bw.buf = binary.AppendUvarint(bw.buf, uint64(sizeOptions.Size(r)))
	bw.buf, bw.err = marshalOptions.MarshalAppend(bw.buf, r)
	return bw.wrote()
}

// indexRecord writes the SnapshotRecord of index record r at key k.
func (bw *bodyWriter) indexRecord(k IndexKey, r record) bool {
	if bw.err != nil {
		return false
	}
	bw.buf = appendIndexRecordRecord(bw.buf, k, r)
	return bw.wrote()
}

// evidence writes the SnapshotRecord of evidence entry e of a stream.
func (bw *bodyWriter) evidence(stream uint64, e evidence) bool {
	if bw.err != nil {
		return false
	}
	bw.buf = appendEvidenceRecord(bw.buf, stream, e)
	return bw.wrote()
}

func (bw *bodyWriter) wrote() bool {
	if bw.err != nil {
		return false
	}
	bw.n++
	if len(bw.buf) >= flushAt {
		bw.flush()
	}
	return bw.err == nil
}

func (bw *bodyWriter) flush() {
	if bw.err == nil && len(bw.buf) > 0 {
		_, bw.err = bw.w.Write(bw.buf)
	}
	bw.buf = bw.buf[:0]
}

// The wire helpers follow proto3: a zero scalar or empty string is left
// out; a message is its tag, its length and its fields. Every field number
// here is below 16, so every tag is one byte.

func sizeVarintField(v uint64) int {
	if v == 0 {
		return 0
	}
	return 1 + protowire.SizeVarint(v)
}

func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), v)
}

// enumWire is an enum's varint: proto sign-extends int32 values.
func enumWire(v int32) uint64 { return uint64(int64(v)) }

func sizeStringField(s string) int {
	if s == "" {
		return 0
	}
	return 1 + protowire.SizeBytes(len(s))
}

func appendStringField(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), s)
}

// sizeMessageField is the size of a present message field whose own
// encoding is size bytes.
func sizeMessageField(size int) int { return 1 + protowire.SizeBytes(size) }

func appendMessageHeader(b []byte, num protowire.Number, size int) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, num, protowire.BytesType), uint64(size))
}

func sizeRange(r Range) int { return sizeVarintField(r.Start) + sizeVarintField(r.End) }

func appendRange(b []byte, num protowire.Number, r Range) []byte {
	b = appendMessageHeader(b, num, sizeRange(r))
	return appendVarintField(appendVarintField(b, 1, r.Start), 2, r.End)
}

func sizeByteRange(r ByteRange) int { return sizeVarintField(r.Offset) + sizeVarintField(r.Length) }

func appendByteRange(b []byte, num protowire.Number, r ByteRange) []byte {
	b = appendMessageHeader(b, num, sizeByteRange(r))
	return appendVarintField(appendVarintField(b, 1, r.Offset), 2, r.Length)
}

func sizeObjectRef(o ObjectRef) int { return sizeStringField(o.Key) + sizeStringField(o.Identity) }

func appendObjectRef(b []byte, num protowire.Number, o ObjectRef) []byte {
	b = appendMessageHeader(b, num, sizeObjectRef(o))
	return appendStringField(appendStringField(b, 1, o.Key), 2, o.Identity)
}

// appendIndexRecordRecord appends the length-prefixed SnapshotRecord of
// an IndexRecordState{Key: k, Record: r's fields, Version, Status}.
func appendIndexRecordRecord(b []byte, k IndexKey, r record) []byte {
	keySize := sizeVarintField(k.Stream) + sizeVarintField(enumWire(int32(k.View))) +
		sizeVarintField(k.Generation) + sizeVarintField(k.Start)
	bodySize := sizeMessageField(sizeRange(r.rng)) + sizeMessageField(sizeObjectRef(r.target.ref)) +
		sizeMessageField(sizeByteRange(r.bytes)) + sizeVarintField(uint64(r.checksum)) + sizeDataField(r.data)
	for _, s := range r.target.survivors {
		bodySize += sizeMessageField(sizeRange(s))
	}
	stateSize := sizeMessageField(keySize) + sizeMessageField(bodySize) +
		sizeVarintField(r.version) + sizeVarintField(enumWire(int32(r.status)))

	b = protowire.AppendVarint(b, uint64(sizeMessageField(stateSize)))
	b = appendMessageHeader(b, fieldSnapshotIndexRecord, stateSize)
	b = appendMessageHeader(b, 1, keySize)
	b = appendVarintField(b, 1, k.Stream)
	b = appendVarintField(b, 2, enumWire(int32(k.View)))
	b = appendVarintField(b, 3, k.Generation)
	b = appendVarintField(b, 4, k.Start)
	b = appendMessageHeader(b, 2, bodySize)
	b = appendRange(b, 1, r.rng)
	for _, s := range r.target.survivors {
		b = appendRange(b, 2, s)
	}
	b = appendObjectRef(b, 3, r.target.ref)
	b = appendByteRange(b, 4, r.bytes)
	b = appendVarintField(b, 5, uint64(r.checksum))
	b = appendDataField(b, 6, r.data)
	b = appendVarintField(b, 3, r.version)
	return appendVarintField(b, 4, enumWire(int32(r.status)))
}

// appendEvidenceRecord appends the length-prefixed SnapshotRecord of an
// EvidenceState of stream.
func appendEvidenceRecord(b []byte, stream uint64, e evidence) []byte {
	stateSize := sizeVarintField(stream) + sizeMessageField(sizeRange(e.rng)) +
		sizeMessageField(sizeObjectRef(e.target.ref)) + sizeMessageField(sizeByteRange(e.bytes)) +
		sizeVarintField(e.epoch) + sizeVarintField(e.version) + sizeDataField(e.data)

	b = protowire.AppendVarint(b, uint64(sizeMessageField(stateSize)))
	b = appendMessageHeader(b, fieldSnapshotEvidence, stateSize)
	b = appendVarintField(b, 1, stream)
	b = appendRange(b, 2, e.rng)
	b = appendObjectRef(b, 3, e.target.ref)
	b = appendByteRange(b, 4, e.bytes)
	b = appendVarintField(b, 5, e.epoch)
	b = appendVarintField(b, 6, e.version)
	return appendDataField(b, 7, e.data)
}

// sizeDataField is the size of an optional fixed32 data_crc32c field:
// nothing when absent, so states from before data checksums encode as
// they always did.
func sizeDataField(d checksum.Data) int {
	if !d.Set {
		return 0
	}
	return 1 + 4
}

func appendDataField(b []byte, num protowire.Number, d checksum.Data) []byte {
	if !d.Set {
		return b
	}
	return protowire.AppendFixed32(protowire.AppendTag(b, num, protowire.Fixed32Type), d.CRC)
}
