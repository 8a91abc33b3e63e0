package fsm

import "github.com/metad/metad/checksum"

// RecordChecksum is the record checksum (checksum.RecordSum) of a record
// without a data checksum: the CRC-32C of the canonical fields a reader
// needs to find the right bytes. Status and metadata version are not
// covered; they change while the record's meaning does not.
func RecordChecksum(key IndexKey, r Range, survivors []Range, obj ObjectRef, b ByteRange) uint32 {
	return RecordChecksumData(key, r, survivors, obj, b, checksum.Data{})
}

// RecordChecksumData is the record checksum (checksum.RecordSum, which
// documents the canonical encoding) of a record that may carry a data
// checksum. A record without one (every record from before feature level
// 3) has the checksum RecordChecksum gives, so records published before
// the level keep verifying. The encoding lives in package checksum so
// that writers (the client, the tools) build records without this package.
func RecordChecksumData(key IndexKey, r Range, survivors []Range, obj ObjectRef, b ByteRange, data checksum.Data) uint32 {
	return checksum.RecordSum(&checksum.Record{
		Stream: key.Stream, View: uint8(key.View), Generation: key.Generation,
		Range: checksum.Span(r), Key: obj.Key, Identity: obj.Identity, Offset: b.Offset, Length: b.Length, Data: data,
	}, survivors)
}

// Verify reports whether the record's checksum matches its canonical fields.
func (r RecordInfo) Verify() bool {
	return r.Checksum == RecordChecksumData(r.Key, r.Range, r.Survivors, r.Object, r.Bytes, r.Data)
}
