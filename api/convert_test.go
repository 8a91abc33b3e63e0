package api

import (
	"testing"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/checksum"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/resolver"
)

// TestDataChecksumCrossesTheAPI: the writer's data checksum reaches the
// log format unchanged, and every answer naming bytes — stored records,
// evidence, targets — carries it back, absent staying absent (a record
// from before data checksums must not read as a checksum of 0).
func TestDataChecksumCrossesTheAPI(t *testing.T) {
	sum := checksum.Of([]byte("payload!"))
	for _, data := range []checksum.Data{sum, {CRC: 0, Set: true}, {}} {
		in := &metadpb.IndexRecord{Range: &metadpb.Range{End: 1}, DataCrc32C: data.Ptr()}
		if got := checksum.FromPtr(recordToFSM(in).DataCrc32C); got != data {
			t.Errorf("recordToFSM: %v, want %v", got, data)
		}
		if got := checksum.FromPtr(appendToFSM(&metadpb.CommitAppendRequest{DataCrc32C: data.Ptr()}).DataCrc32C); got != data {
			t.Errorf("appendToFSM: %v, want %v", got, data)
		}
		if got := checksum.FromPtr(storedRecordPB(fsm.RecordInfo{Data: data}).Record.DataCrc32C); got != data {
			t.Errorf("storedRecordPB: %v, want %v", got, data)
		}
		if got := checksum.FromPtr(evidencePB(fsm.EvidenceInfo{Data: data}).DataCrc32C); got != data {
			t.Errorf("evidencePB: %v, want %v", got, data)
		}
		s := &Server{}
		if got := checksum.FromPtr(s.targetPB(resolver.Target{Data: data}).DataCrc32C); got != data {
			t.Errorf("targetPB: %v, want %v", got, data)
		}
	}
}
