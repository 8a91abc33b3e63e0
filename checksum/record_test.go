package checksum

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
)

// theirRange stands for a range type of another package (the state
// machine's), shaped like Span.
type theirRange struct{ Start, End uint64 }

func sampleRecord() *Record {
	return &Record{Stream: 7, View: 2, Generation: 3, Range: Span{10, 20}, Key: "objects/a", Identity: "sha256:ab",
		Offset: 100, Length: 50, Data: Of([]byte("the bytes"))}
}

// TestRecordSumIsTheDocumentedEncoding: the checksum is the CRC-32C of the
// encoding RecordSum's comment documents, spelled out here field by field,
// with and without the data checksum.
func TestRecordSumIsTheDocumentedEncoding(t *testing.T) {
	r := sampleRecord()
	survivors := []Span{{11, 12}, {15, 20}}
	enc := func(withData bool) []byte {
		b := []byte("metad/index-record/v1")
		b = binary.BigEndian.AppendUint64(b, 7)
		b = append(b, 2)
		b = binary.BigEndian.AppendUint64(b, 3)
		b = binary.BigEndian.AppendUint64(b, 10)
		b = binary.BigEndian.AppendUint64(b, 20)
		b = binary.BigEndian.AppendUint32(b, 2)
		for _, v := range []uint64{11, 12, 15, 20} {
			b = binary.BigEndian.AppendUint64(b, v)
		}
		b = binary.BigEndian.AppendUint32(b, 9)
		b = append(b, "objects/a"...)
		b = binary.BigEndian.AppendUint32(b, 9)
		b = append(b, "sha256:ab"...)
		b = binary.BigEndian.AppendUint64(b, 100)
		b = binary.BigEndian.AppendUint64(b, 50)
		if withData {
			b = binary.BigEndian.AppendUint32(append(b, 1), crc32.Checksum([]byte("the bytes"), Castagnoli))
		}
		return b
	}
	if got, want := RecordSum(r, survivors), crc32.Checksum(enc(true), Castagnoli); got != want {
		t.Errorf("with a data checksum: %08x, want %08x", got, want)
	}
	r.Data = Data{}
	if got, want := RecordSum(r, survivors), crc32.Checksum(enc(false), Castagnoli); got != want {
		t.Errorf("without one: %08x, want %08x", got, want)
	}
}

// TestRecordSumCoversEveryField: changing any field changes the checksum.
func TestRecordSumCoversEveryField(t *testing.T) {
	base := RecordSum(sampleRecord(), []Span{{11, 12}})
	for name, change := range map[string]func(*Record){
		"stream": func(r *Record) { r.Stream++ }, "view": func(r *Record) { r.View = 1 }, "generation": func(r *Record) { r.Generation++ },
		"start": func(r *Record) { r.Range.Start++ }, "end": func(r *Record) { r.Range.End++ }, "key": func(r *Record) { r.Key += "x" },
		"identity": func(r *Record) { r.Identity += "x" }, "offset": func(r *Record) { r.Offset++ }, "length": func(r *Record) { r.Length++ },
		"data": func(r *Record) { r.Data.CRC++ }, "no data": func(r *Record) { r.Data = Data{} },
	} {
		r := sampleRecord()
		change(r)
		if RecordSum(r, []Span{{11, 12}}) == base {
			t.Errorf("changing %s leaves the checksum as it was", name)
		}
	}
	if RecordSum(sampleRecord(), []Span{{11, 13}}) == base || RecordSum(sampleRecord(), []Span(nil)) == base {
		t.Error("changing the survivors leaves the checksum as it was")
	}
}

// TestRecordSumTakesAnySpanShapedType: another package's range type gives
// the same checksum as Span, and checking a record allocates nothing (a
// restore checks every record).
func TestRecordSumTakesAnySpanShapedType(t *testing.T) {
	r := sampleRecord()
	ours, theirs := []Span{{11, 12}, {15, 20}}, []theirRange{{11, 12}, {15, 20}}
	if RecordSum(r, ours) != RecordSum(r, theirs) {
		t.Fatal("the same survivors in another range type give another checksum")
	}
	if n := testing.AllocsPerRun(100, func() { RecordSum(r, theirs) }); n != 0 {
		t.Errorf("RecordSum allocates %v times per record", n)
	}
}
