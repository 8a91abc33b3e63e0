package model

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/metad/metad/jepsen/history"
)

// View names, as the history spells them.
const (
	Committed      = "COMMITTED"
	TopicCompacted = "TOPIC_COMPACTED"
)

// viewNumber is the wire number of a view (metad.proto View), which the
// checksum's canonical encoding uses.
func viewNumber(v string) byte {
	if v == TopicCompacted {
		return 2
	}
	return 1
}

// Payload is the bytes of one offset of one stream. The salt is 0 for the
// real record; replaced objects use another salt, so bytes of a replaced
// object can never pass for the record's.
func Payload(stream, offset, salt uint64) string {
	return fmt.Sprintf("[%d.%d.%d]", stream, offset, salt)
}

// Payloads concatenates the salt-0 payloads of every offset of ranges.
func Payloads(stream uint64, ranges []history.Range) string {
	var b strings.Builder
	for _, r := range ranges {
		for o := r.Start; o < r.End; o++ {
			b.WriteString(Payload(stream, o, 0))
		}
	}
	return b.String()
}

// Layout builds the object's bytes and the byte range of each entry of
// c.Offsets (one per index record packed into the object).
func Layout(stream uint64, c history.Content) ([]byte, []history.Bytes) {
	var b strings.Builder
	b.WriteString(strings.Repeat("#", c.Prefix))
	parts := make([]history.Bytes, len(c.Offsets))
	for i, r := range c.Offsets {
		start := b.Len()
		salt := c.Salt
		if i < len(c.Salts) {
			salt = c.Salts[i]
		}
		for o := r.Start; o < r.End; o++ {
			b.WriteString(Payload(stream, o, salt))
		}
		parts[i] = history.Bytes{Offset: uint64(start), Length: uint64(b.Len() - start)}
	}
	b.WriteString(strings.Repeat("~", c.Suffix))
	return []byte(b.String()), parts
}

// Identity is the local object store's identity of bytes: their SHA-256.
func Identity(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// DataCRC is a data checksum, computed here and not with metad's
// checksum package: the CRC-32C (Castagnoli) of exactly the bytes p, as a
// writer commits it with an append or an index record and every reader
// must check it.
func DataCRC(p []byte) uint32 { return crc32.Checksum(p, castagnoli) }

// CRCOf returns a pointer to DataCRC(p), the way the history and the
// protobuf optional field carry it.
func CRCOf(p []byte) *uint32 {
	c := DataCRC(p)
	return &c
}

// Checksum is an index record's checksum, computed here from the canonical
// encoding documented on metad.proto's IndexRecord (not from metad's code):
// CRC-32C over "metad/index-record/v1", stream u64, view u8, generation u64,
// range start u64, end u64, survivor count u32 and each start/end u64,
// len(key) u32 + key, len(identity) u32 + identity, byte offset u64, byte
// length u64; integers big-endian; then, only for a record that carries a
// data checksum, the byte 1 and that CRC u32 (data nil: none).
func Checksum(stream uint64, view string, gen uint64, r history.Range, survivors []history.Range, obj history.Object, b history.Bytes, data *uint32) uint32 {
	buf := []byte("metad/index-record/v1")
	buf = binary.BigEndian.AppendUint64(buf, stream)
	buf = append(buf, viewNumber(view))
	buf = binary.BigEndian.AppendUint64(buf, gen)
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
	if data != nil {
		buf = binary.BigEndian.AppendUint32(append(buf, 1), *data)
	}
	return crc32.Checksum(buf, castagnoli)
}
