package client

import (
	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/checksum"
)

// MaxRecordsPerPart bounds the records of one PublishGeneration call (a
// part of a generation): a larger generation is published in parts, the
// last one with complete set. It is the server's bound, which every
// replica applies alike; a test holds the two equal.
const MaxRecordsPerPart = 4096

// RecordChecksum is the checksum rec must carry (IndexRecord.checksum) as
// a record of generation of (stream, view): checksum.RecordSum of its
// canonical fields, its data checksum (data_crc32c) included when set. A
// writer computes the data checksum from the bytes (checksum.Of), then
// this; the server refuses a record whose checksum does not match
// (ErrChecksumMismatch), and a resolve never returns one.
func RecordChecksum(stream uint64, view metadpb.View, generation uint64, rec *metadpb.IndexRecord) uint32 {
	survivors := make([]checksum.Span, len(rec.GetSurvivors()))
	for i, s := range rec.GetSurvivors() {
		survivors[i] = checksum.Span{Start: s.GetStart(), End: s.GetEnd()}
	}
	return checksum.RecordSum(&checksum.Record{
		Stream: stream, View: uint8(view), Generation: generation,
		Range: checksum.Span{Start: rec.GetRange().GetStart(), End: rec.GetRange().GetEnd()},
		Key:   rec.GetObject().GetKey(), Identity: rec.GetObject().GetIdentity(),
		Offset: rec.GetBytes().GetOffset(), Length: rec.GetBytes().GetLength(),
		Data: checksum.FromPtr(rec.DataCrc32C),
	}, survivors)
}
