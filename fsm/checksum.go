package fsm

import (
	"encoding/binary"
	"hash/crc32"
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
	buf := make([]byte, 0, len(checksumDomain)+64+16*len(survivors)+len(obj.Key)+len(obj.Identity))
	buf = append(buf, checksumDomain...)
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
	return crc32.Checksum(buf, castagnoli)
}

// Verify reports whether the record's checksum matches its canonical fields.
func (r RecordInfo) Verify() bool {
	return r.Checksum == RecordChecksum(r.Key, r.Range, r.Survivors, r.Object, r.Bytes)
}
