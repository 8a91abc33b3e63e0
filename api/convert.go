package api

import (
	"fmt"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/resolver"
)

// Conversions between the public API (metadpb) and the log format (fsmpb)
// and the core's types. The two schemas are kept apart on purpose: the log
// format is persisted and replayed, the API evolves with clients.

func sprintf(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// The view enums share numbering; a value outside it stays invalid and is
// refused by fsm.Validate naming the field.
func viewToFSM(v metadpb.View) fsm.View               { return fsm.View(v) }
func viewToPB(v fsm.View) metadpb.View                { return metadpb.View(v) }
func kindToFSM(k metadpb.FailureKind) fsm.FailureKind { return fsm.FailureKind(k) }

func rangeToFSM(r *metadpb.Range) *fsmpb.Range {
	if r == nil {
		return nil
	}
	return &fsmpb.Range{Start: r.Start, End: r.End}
}

func rangesToFSM(rs []*metadpb.Range) []*fsmpb.Range {
	out := make([]*fsmpb.Range, len(rs))
	for i, r := range rs {
		out[i] = rangeToFSM(r)
	}
	return out
}

func byteRangeToFSM(b *metadpb.ByteRange) *fsmpb.ByteRange {
	if b == nil {
		return nil
	}
	return &fsmpb.ByteRange{Offset: b.Offset, Length: b.Length}
}

func objectToFSM(o *metadpb.ObjectRef) *fsmpb.ObjectRef {
	if o == nil {
		return nil
	}
	return &fsmpb.ObjectRef{Key: o.Key, Identity: o.Identity}
}

func recordToFSM(r *metadpb.IndexRecord) *fsmpb.IndexRecord {
	if r == nil {
		return nil
	}
	return &fsmpb.IndexRecord{
		Range: rangeToFSM(r.Range), Survivors: rangesToFSM(r.Survivors), Object: objectToFSM(r.Object),
		Bytes: byteRangeToFSM(r.Bytes), Checksum: r.Checksum, DataCrc32C: r.DataCrc32C,
	}
}

func appendToFSM(req *metadpb.CommitAppendRequest) *fsmpb.CommitAppend {
	return &fsmpb.CommitAppend{
		StreamId: req.StreamId, WriterEpoch: req.WriterEpoch, ExpectedStart: req.ExpectedStart, End: req.End,
		Object: objectToFSM(req.Object), Bytes: byteRangeToFSM(req.Bytes), IndexGen0: req.IndexGen0,
		DataCrc32C: req.DataCrc32C,
	}
}

func rangePB(r fsm.Range) *metadpb.Range { return &metadpb.Range{Start: r.Start, End: r.End} }

func rangesPB(rs []fsm.Range) []*metadpb.Range {
	out := make([]*metadpb.Range, len(rs))
	for i, r := range rs {
		out[i] = rangePB(r)
	}
	return out
}

func byteRangePB(b fsm.ByteRange) *metadpb.ByteRange {
	return &metadpb.ByteRange{Offset: b.Offset, Length: b.Length}
}

func objectPB(o fsm.ObjectRef) *metadpb.ObjectRef {
	return &metadpb.ObjectRef{Key: o.Key, Identity: o.Identity}
}

func indexKeyPB(k fsm.IndexKey) *metadpb.IndexKey {
	return &metadpb.IndexKey{StreamId: k.Stream, View: viewToPB(k.View), Generation: k.Generation, Start: k.Start}
}

func indexKeyToFSM(k *metadpb.IndexKey) fsm.IndexKey {
	return fsm.IndexKey{Stream: k.GetStreamId(), View: fsm.View(k.GetView()), Generation: k.GetGeneration(), Start: k.GetStart()}
}

func streamPB(s fsm.StreamInfo) *metadpb.Stream {
	return &metadpb.Stream{
		Id: s.ID, Name: s.Name, WriterEpoch: s.WriterEpoch, Status: metadpb.StreamStatus(s.Status),
		Version: s.Version, CommittedEnd: s.CommittedEnd, Trim: s.Trim, CreatedVersion: s.CreatedVersion,
	}
}

func generationPB(g fsm.GenerationInfo) *metadpb.Generation {
	return &metadpb.Generation{
		View: viewToPB(g.View), Number: g.Number, Status: metadpb.GenerationStatus(g.Status),
		Version: g.Version, Coverage: rangePB(g.Coverage), Records: uint64(g.Records),
	}
}

func storedRecordPB(r fsm.RecordInfo) *metadpb.StoredIndexRecord {
	return &metadpb.StoredIndexRecord{
		Key: indexKeyPB(r.Key), Version: r.Version, Status: metadpb.RecordStatus(r.Status),
		Record: &metadpb.IndexRecord{
			Range: rangePB(r.Range), Survivors: rangesPB(r.Survivors), Object: objectPB(r.Object),
			Bytes: byteRangePB(r.Bytes), Checksum: r.Checksum, DataCrc32C: r.Data.Ptr(),
		},
	}
}

func evidencePB(e fsm.EvidenceInfo) *metadpb.Evidence {
	return &metadpb.Evidence{
		Range: rangePB(e.Range), Object: objectPB(e.Object), Bytes: byteRangePB(e.Bytes),
		WriterEpoch: e.WriterEpoch, Version: e.Version, DataCrc32C: e.Data.Ptr(),
	}
}

func objectInfoPB(o fsm.ObjectInfo) *metadpb.Object {
	return &metadpb.Object{
		Ref: objectPB(o.Ref), Size: o.Size, Status: metadpb.ObjectStatus(o.Status),
		Version: o.Version, References: o.References, Pins: o.Pins,
	}
}

func candidatePB(id resolver.CandidateID) *metadpb.CandidateRef {
	return &metadpb.CandidateRef{Key: indexKeyPB(id.Key), Version: id.Version}
}

func refusalsPB(rs []resolver.Refusal) []*metadpb.Refusal {
	out := make([]*metadpb.Refusal, len(rs))
	for i, r := range rs {
		out[i] = &metadpb.Refusal{Candidate: candidatePB(r.Candidate), Reason: string(r.Reason), Detail: r.Detail}
	}
	return out
}
