package fsm

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/fsm/fsmpb"
)

// protoFramed is what the writer produced before the hand encoding: the
// deterministic proto marshalling of r, after its uvarint length.
func protoFramed(t *testing.T, r *fsmpb.SnapshotRecord) []byte {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return append(binary.AppendUvarint(nil, uint64(len(b))), b...)
}

// randomValue is 0, a small number, the largest, or anything, so that
// both left-out zero fields and varints of every length occur.
func randomValue(rng *rand.Rand) uint64 {
	switch rng.IntN(4) {
	case 0:
		return 0
	case 1:
		return uint64(rng.IntN(200))
	case 2:
		return math.MaxUint64
	}
	return rng.Uint64() >> rng.IntN(64)
}

func randomString(rng *rand.Rand) string {
	return []string{"", "k", "ключ/☃", string(bytes.Repeat([]byte("x"), 200))}[rng.IntN(4)]
}

func randomRange(rng *rand.Rand) Range { return Range{randomValue(rng), randomValue(rng)} }

// TestHandEncodingMatchesProto: the hand-written encoding of index records
// and evidence entries gives proto's bytes, for values at every edge.
func TestHandEncodingMatchesProto(t *testing.T) {
	rng := rand.New(rand.NewPCG(seedOf("hand-encoding"), 0))
	for range 20_000 {
		obj := ObjectRef{randomString(rng), randomString(rng)}
		var survivors []Range
		for range rng.IntN(3) {
			survivors = append(survivors, randomRange(rng))
		}
		key := IndexKey{randomValue(rng), View(int32(randomValue(rng))), randomValue(rng), randomValue(rng)}
		r := record{
			rng: randomRange(rng), bytes: ByteRange{randomValue(rng), randomValue(rng)}, version: randomValue(rng),
			target: (&target{ref: obj}).withSurvivors(survivors), checksum: uint32(randomValue(rng)),
			status: RecordStatus(int32(randomValue(rng))),
		}
		want := protoFramed(t, &fsmpb.SnapshotRecord{Record: &fsmpb.SnapshotRecord_IndexRecord{IndexRecord: &fsmpb.IndexRecordState{
			Key: key.PB(),
			Record: &fsmpb.IndexRecord{
				Range: r.rng.PB(), Survivors: RangesPB(survivors), Object: obj.PB(), Bytes: r.bytes.PB(), Checksum: r.checksum,
			},
			Version: r.version, Status: r.status,
		}}})
		if got := appendIndexRecordRecord(nil, key, r); !bytes.Equal(got, want) {
			t.Fatalf("index record %+v %+v:\nhand  %x\nproto %x", key, r, got, want)
		}

		stream := randomValue(rng)
		e := evidence{rng: randomRange(rng), bytes: ByteRange{randomValue(rng), randomValue(rng)},
			epoch: randomValue(rng), version: randomValue(rng), target: &target{ref: obj}}
		want = protoFramed(t, &fsmpb.SnapshotRecord{Record: &fsmpb.SnapshotRecord_Evidence{Evidence: &fsmpb.EvidenceState{
			StreamId: stream, Range: e.rng.PB(), Object: obj.PB(), Bytes: e.bytes.PB(), WriterEpoch: e.epoch, Version: e.version,
		}}})
		if got := appendEvidenceRecord(nil, stream, e); !bytes.Equal(got, want) {
			t.Fatalf("evidence %d %+v:\nhand  %x\nproto %x", stream, e, got, want)
		}
	}
}
