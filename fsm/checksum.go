package fsm

import (
	"encoding/binary"
	"hash/crc32"
	"sync"

	"github.com/metad/metad/checksum"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksumDomain separates record checksums from any other CRC of the same
// bytes and versions the canonical encoding.
const checksumDomain = "metad/index-record/v1"

// RecordChecksum is the CRC-32C of an index record's canonical fields: what a
// reader needs to find the right bytes. Status and metadata version are not
// covered; they change while the record's meaning does not.
//
// Canonical encoding, all integers big-endian:
//
//	"metad/index-record/v1"
//	stream u64, view u8, generation u64, range.start u64, range.end u64,
//	len(survivors) u32, then start u64, end u64 per survivor,
//	len(key) u32, key, len(identity) u32, identity,
//	bytes.offset u64, bytes.length u64
func RecordChecksum(key IndexKey, r Range, survivors []Range, obj ObjectRef, b ByteRange) uint32 {
	// The buffer comes from a pool: the CRC function is called through a
	// function value, so a local buffer would escape anyway, and one
	// allocation per record was a fifth of Restore's garbage (it checks
	// every record's checksum).
	pooled := checksumBuffers.Get().(*[]byte)
	buf := append((*pooled)[:0], checksumDomain...)
	buf = binary.BigEndian.AppendUint64(buf, key.Stream)
	buf = append(buf, byte(key.View))
	buf = binary.BigEndian.AppendUint64(buf, key.Generation)
	buf = binary.BigEndian.AppendUint64(buf, r.Start)
	buf = binary.BigEndian.AppendUint64(buf, r.End)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(survivors)))
	for _, s := range survivors {
		buf = binary.BigEndian.AppendUint64(buf, s.Start)
		buf = binary.BigEndian.AppendUint64(buf, s.End)
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(obj.Key)))
	buf = append(buf, obj.Key...)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(obj.Identity)))
	buf = append(buf, obj.Identity...)
	buf = binary.BigEndian.AppendUint64(buf, b.Offset)
	buf = binary.BigEndian.AppendUint64(buf, b.Length)
	sum := crc32.Checksum(buf, castagnoli)
	if cap(buf) <= maxPooledChecksumBuffer {
		*pooled = buf
		checksumBuffers.Put(pooled)
	}
	return sum
}

// RecordChecksumData is RecordChecksum for a record that carries a data
// checksum: the canonical encoding above, then, only when data is set, the
// byte 1 and data.CRC u32. A record without one (every record from before
// feature level 3) has the checksum RecordChecksum gives, so records
// published before the level keep verifying.
func RecordChecksumData(key IndexKey, r Range, survivors []Range, obj ObjectRef, b ByteRange, data checksum.Data) uint32 {
	sum := RecordChecksum(key, r, survivors, obj, b)
	if !data.Set {
		return sum
	}
	var tail [5]byte
	tail[0] = 1
	binary.BigEndian.PutUint32(tail[1:], data.CRC)
	return crc32.Update(sum, castagnoli, tail[:])
}

// maxPooledChecksumBuffer bounds what the pool keeps: a record with many
// survivors needs a large buffer once, not for ever.
const maxPooledChecksumBuffer = 4 << 10

var checksumBuffers = sync.Pool{New: func() any {
	b := make([]byte, 0, 256)
	return &b
}}

// Verify reports whether the record's checksum matches its canonical fields.
func (r RecordInfo) Verify() bool {
	return r.Checksum == RecordChecksumData(r.Key, r.Range, r.Survivors, r.Object, r.Bytes, r.Data)
}
