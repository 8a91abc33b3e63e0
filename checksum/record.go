package checksum

import (
	"encoding/binary"
	"hash/crc32"
	"sync"
)

// recordDomain separates record checksums from any other CRC of the same
// bytes and versions the canonical encoding.
const recordDomain = "metad/index-record/v1"

// Span is a half-open range of stream offsets, [Start, End).
type Span struct{ Start, End uint64 }

// Record is what an index record's checksum covers: what a reader needs to
// find the right bytes. Status and metadata version are not covered; they
// change while the record's meaning does not.
type Record struct {
	// Stream, View and Generation name the generation the record belongs
	// to; View is the view's number (COMMITTED 1, TOPIC_COMPACTED 2).
	Stream     uint64
	View       uint8
	Generation uint64
	// Range is the offsets the record covers.
	Range Span
	// Key and Identity name the object version that holds the bytes.
	Key, Identity string
	// Offset and Length are the byte range in that object.
	Offset, Length uint64
	// Data is the data checksum of those bytes (absent on records from
	// before feature level 3).
	Data Data
}

// RecordSum is the CRC-32C of r's canonical encoding, with survivors the
// sub-ranges of a sparse record (none for a dense one). All integers are
// big-endian:
//
//	"metad/index-record/v1"
//	stream u64, view u8, generation u64, range.start u64, range.end u64,
//	len(survivors) u32, then start u64, end u64 per survivor,
//	len(key) u32, key, len(identity) u32, identity,
//	bytes.offset u64, bytes.length u64
//	and, only when r.Data is set, the byte 1 and r.Data.CRC u32
//
// so a record without a data checksum has the checksum it had before data
// checksums existed. Survivors may be of any type shaped like Span (the
// state machine's own range type), so that checking every record of a
// restored state allocates nothing.
func RecordSum[S ~struct{ Start, End uint64 }](r *Record, survivors []S) uint32 {
	// The buffer comes from a pool: the CRC function is called through a
	// function value, so a local buffer would escape anyway, and one
	// allocation per record was a fifth of a restore's garbage (it checks
	// every record's checksum).
	pooled := recordBuffers.Get().(*[]byte)
	buf := append((*pooled)[:0], recordDomain...)
	buf = binary.BigEndian.AppendUint64(buf, r.Stream)
	buf = append(buf, r.View)
	buf = binary.BigEndian.AppendUint64(buf, r.Generation)
	buf = binary.BigEndian.AppendUint64(buf, r.Range.Start)
	buf = binary.BigEndian.AppendUint64(buf, r.Range.End)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(survivors)))
	for _, s := range survivors {
		sp := Span(s)
		buf = binary.BigEndian.AppendUint64(buf, sp.Start)
		buf = binary.BigEndian.AppendUint64(buf, sp.End)
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(r.Key)))
	buf = append(buf, r.Key...)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(r.Identity)))
	buf = append(buf, r.Identity...)
	buf = binary.BigEndian.AppendUint64(buf, r.Offset)
	buf = binary.BigEndian.AppendUint64(buf, r.Length)
	if r.Data.Set {
		buf = binary.BigEndian.AppendUint32(append(buf, 1), r.Data.CRC)
	}
	sum := crc32.Checksum(buf, Castagnoli)
	if cap(buf) <= maxPooledRecordBuffer {
		*pooled = buf
		recordBuffers.Put(pooled)
	}
	return sum
}

// maxPooledRecordBuffer bounds what the pool keeps: a record with many
// survivors needs a large buffer once, not for ever.
const maxPooledRecordBuffer = 4 << 10

var recordBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, 256)
	return &b
}}
