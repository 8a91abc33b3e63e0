package fsm

import (
	"strconv"

	"github.com/metad/metad/checksum"
	"github.com/metad/metad/fsm/fsmpb"
)

// Conversions between the log format and the machine's own types. A nil
// message converts to the zero value; Validate has refused nil where a
// value is required.

func rangeOf(r *fsmpb.Range) Range {
	if r == nil {
		return Range{}
	}
	return Range{Start: r.Start, End: r.End}
}

func rangesOf(rs []*fsmpb.Range) []Range {
	if len(rs) == 0 {
		return nil
	}
	out := make([]Range, len(rs))
	for i, r := range rs {
		out[i] = rangeOf(r)
	}
	return out
}

func byteRangeOf(b *fsmpb.ByteRange) ByteRange {
	if b == nil {
		return ByteRange{}
	}
	return ByteRange{Offset: b.Offset, Length: b.Length}
}

func refOf(o *fsmpb.ObjectRef) ObjectRef {
	if o == nil {
		return ObjectRef{}
	}
	return ObjectRef{Key: o.Key, Identity: o.Identity}
}

func indexKeyOf(k *fsmpb.IndexKey) IndexKey {
	if k == nil {
		return IndexKey{}
	}
	return IndexKey{Stream: k.StreamId, View: k.View, Generation: k.Generation, Start: k.Start}
}

// PB converts a Range to its log form.
func (r Range) PB() *fsmpb.Range { return &fsmpb.Range{Start: r.Start, End: r.End} }

// PB converts a ByteRange to its log form.
func (b ByteRange) PB() *fsmpb.ByteRange { return &fsmpb.ByteRange{Offset: b.Offset, Length: b.Length} }

// PB converts an ObjectRef to its log form.
func (o ObjectRef) PB() *fsmpb.ObjectRef { return &fsmpb.ObjectRef{Key: o.Key, Identity: o.Identity} }

// PB converts an IndexKey to its log form.
func (k IndexKey) PB() *fsmpb.IndexKey {
	return &fsmpb.IndexKey{StreamId: k.Stream, View: k.View, Generation: k.Generation, Start: k.Start}
}

// RangesPB converts ranges to their log form.
func RangesPB(rs []Range) []*fsmpb.Range {
	out := make([]*fsmpb.Range, len(rs))
	for i, r := range rs {
		out[i] = r.PB()
	}
	return out
}

// NewIndexRecord builds a publishable record without a data checksum,
// its record checksum filled in.
func NewIndexRecord(key IndexKey, rng Range, survivors []Range, obj ObjectRef, b ByteRange) *fsmpb.IndexRecord {
	return NewIndexRecordData(key, rng, survivors, obj, b, checksum.Data{})
}

// NewIndexRecordData builds a publishable record carrying data, the
// writer's CRC-32C of the bytes, with its record checksum filled in.
func NewIndexRecordData(key IndexKey, rng Range, survivors []Range, obj ObjectRef, b ByteRange, data checksum.Data) *fsmpb.IndexRecord {
	return &fsmpb.IndexRecord{
		Range: rng.PB(), Survivors: RangesPB(survivors), Object: obj.PB(), Bytes: b.PB(),
		Checksum: RecordChecksumData(key, rng, survivors, obj, b, data), DataCrc32C: data.Ptr(),
	}
}

func fieldIndex(name string, i int) string { return name + "[" + strconv.Itoa(i) + "]" }
