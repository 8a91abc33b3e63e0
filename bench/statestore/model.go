package statestore

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
)

// Key prefixes. Invariant: every index record key starts with prefixRecord
// and is recordKeyLen bytes long; the applied index is the one key
// metaApplied, which sorts before every record.
const (
	prefixRecord = 'r'
	recordKeyLen = 1 + 8 + 1 + 8 + 8
	// recordSpan is the number of offsets one modelled record covers.
	recordSpan = 100
	// perStream is the number of records each stream holds after load.
	perStream = 100
	// viewCommitted is fsm's View_COMMITTED.
	viewCommitted = 1
)

var metaApplied = []byte("\x00applied")

// recordKey encodes (stream, view, generation, start) big-endian, so that
// byte order is fsm's order: by stream, view, generation, then start.
func recordKey(dst []byte, stream uint64, view byte, gen, start uint64) []byte {
	dst = append(dst[:0], prefixRecord)
	dst = binary.BigEndian.AppendUint64(dst, stream)
	dst = append(dst, view)
	dst = binary.BigEndian.AppendUint64(dst, gen)
	return binary.BigEndian.AppendUint64(dst, start)
}

// genPrefix is the key prefix shared by one generation's records.
func genPrefix(dst []byte, stream uint64, view byte, gen uint64) []byte {
	return recordKey(dst, stream, view, gen, 0)[:recordKeyLen-8]
}

// recordValue encodes what fsm's RecordInfo holds beyond the key: end,
// byte range, version, checksum, data CRC, status, record count, then the
// object key and identity. With the strings below it is 150 bytes.
func recordValue(dst []byte, stream, start, version uint64) []byte {
	dst = dst[:0]
	dst = binary.BigEndian.AppendUint64(dst, start+recordSpan)   // end
	dst = binary.BigEndian.AppendUint64(dst, start*40)           // bytes offset
	dst = binary.BigEndian.AppendUint64(dst, recordSpan*40)      // bytes length
	dst = binary.BigEndian.AppendUint64(dst, version)            // version
	dst = binary.BigEndian.AppendUint32(dst, uint32(start)^0x5a) // checksum
	dst = binary.BigEndian.AppendUint32(dst, uint32(stream)^0xa5)
	dst = append(dst, 1)                                 // status VALID
	dst = binary.BigEndian.AppendUint32(dst, recordSpan) // record count
	obj := fmt.Appendf(nil, "tenants/acme/streams/%016x/objects/%020d.seg", stream, start/(recordSpan*perStream/4))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(obj)))
	dst = append(dst, obj...)
	ident := fmt.Appendf(nil, "etag-%016x%08x", stream, start)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(ident)))
	return append(dst, ident...)
}

// valueEnd is the record's end offset, the first field of its value.
func valueEnd(v []byte) uint64 { return binary.BigEndian.Uint64(v) }

// rec is one put of an index record.
type rec struct{ key, value []byte }

// dataset is n records over n/perStream streams, generation 1 of the
// committed view, record i of a stream starting at i*recordSpan.
type dataset struct{ streams uint64 }

func newDataset(n int) dataset { return dataset{streams: uint64(n / perStream)} }

// each calls fn for every record in key order, version = its position.
func (d dataset) each(fn func(r rec) error) error {
	var k, v []byte
	version := uint64(0)
	for s := uint64(1); s <= d.streams; s++ {
		for i := uint64(0); i < perStream; i++ {
			version++
			k = recordKey(k, s, viewCommitted, 1, i*recordSpan)
			v = recordValue(v, s, i*recordSpan, version)
			if err := fn(rec{key: k, value: v}); err != nil {
				return err
			}
		}
	}
	return nil
}

// randomOffset picks a stream and an offset inside its loaded records.
func (d dataset) randomOffset(r *rand.Rand) (stream, offset uint64) {
	return 1 + r.Uint64N(d.streams), r.Uint64N(perStream * recordSpan)
}

// appender makes new records past each stream's loaded end, as appends
// and publications do: stream picked at random, start after its last.
type appender struct {
	d       dataset
	next    map[uint64]uint64
	rnd     *rand.Rand
	version uint64
}

func newAppender(d dataset, seed uint64) *appender {
	return &appender{d: d, next: map[uint64]uint64{}, rnd: rand.New(rand.NewPCG(seed, 7)), version: d.streams * perStream}
}

// batch returns n fresh records and the applied index after them.
func (a *appender) batch(n int) ([]rec, uint64) {
	out := make([]rec, n)
	for i := range out {
		s := 1 + a.rnd.Uint64N(a.d.streams)
		start, ok := a.next[s]
		if !ok {
			start = perStream * recordSpan
		}
		a.next[s] = start + recordSpan
		a.version++
		out[i] = rec{
			key:   recordKey(nil, s, viewCommitted, 1, start),
			value: recordValue(nil, s, start, a.version),
		}
	}
	return out, a.version
}
