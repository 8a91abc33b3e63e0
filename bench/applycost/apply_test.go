package applycost

import (
	"fmt"
	"strconv"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
)

// streamSetLevel is the feature level CommitObject needs.
const streamSetLevel = 4

// replica is a state machine with n streams opened for write.
type replica struct {
	m      *fsm.Machine
	index  uint64
	ids    []uint64
	epochs []uint64
	ends   []uint64
	seq    int
}

func newReplica(b *testing.B, n int) *replica {
	r := &replica{m: fsm.New()}
	if res := r.apply(&fsmpb.Command{Op: &fsmpb.Command_SetFeatureLevel{SetFeatureLevel: &fsmpb.SetFeatureLevel{Level: streamSetLevel}}}); res.Rejection != nil {
		b.Fatalf("feature level: %v", res.Rejection)
	}
	for i := range n {
		res := r.apply(&fsmpb.Command{Op: &fsmpb.Command_CreateStream{CreateStream: &fsmpb.CreateStream{Name: "s" + strconv.Itoa(i)}}})
		if res.Rejection != nil {
			b.Fatalf("create: %v", res.Rejection)
		}
		op := r.apply(&fsmpb.Command{Op: &fsmpb.Command_OpenForWrite{OpenForWrite: &fsmpb.OpenForWrite{StreamId: res.StreamId}}})
		if op.Rejection != nil {
			b.Fatalf("open: %v", op.Rejection)
		}
		r.ids, r.epochs, r.ends = append(r.ids, res.StreamId), append(r.epochs, op.WriterEpoch), append(r.ends, 0)
	}
	return r
}

// apply sends cmd through the log's encoding, then applies it with a new
// request id at the next index.
func (r *replica) apply(cmd *fsmpb.Command) *fsmpb.Result {
	r.index++
	r.seq++
	cmd.RequestId = fmt.Sprintf("%032x", r.seq)
	cmd.StampUnixNano = 1_700_000_000_000_000_000 + int64(r.index)
	raw, err := proto.Marshal(cmd)
	if err != nil {
		panic(err)
	}
	var decoded fsmpb.Command
	if err := proto.Unmarshal(raw, &decoded); err != nil {
		panic(err)
	}
	return r.m.Apply(r.index, &decoded)
}

const (
	payload = 1024 // bytes per append, as metad-bench's default
	offsets = 10   // offsets per append, as metad-bench's default
)

var crc = uint32(0x1234abcd)

// object is the next stream-set object over every stream of r.
func (r *replica) object() *fsmpb.Command {
	key := fmt.Sprintf("bench/o/%020d", r.seq)
	c := &fsmpb.CommitObject{Object: &fsmpb.ObjectRef{Key: key, Identity: "sha256:" + fmt.Sprintf("%064x", r.seq)},
		Size: payload * uint64(len(r.ids)), Appends: make([]*fsmpb.ObjectAppend, len(r.ids))}
	for i, id := range r.ids {
		c.Appends[i] = &fsmpb.ObjectAppend{StreamId: id, WriterEpoch: r.epochs[i], ExpectedStart: r.ends[i], End: r.ends[i] + offsets,
			Bytes: &fsmpb.ByteRange{Offset: uint64(i) * payload, Length: payload}, IndexGen0: true, DataCrc32C: &crc}
		r.ends[i] += offsets
	}
	return &fsmpb.Command{Op: &fsmpb.Command_CommitObject{CommitObject: c}}
}

// BenchmarkCommitObject applies objects of N streams; ns/op is per object,
// and the "ns/append" metric divides it by N.
func BenchmarkCommitObject(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("streams=%d", n), func(b *testing.B) {
			r := newReplica(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if res := r.apply(r.object()); res.Rejection != nil {
					b.Fatalf("commit object: %v", res.Rejection)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/append")
		})
	}
}

// BenchmarkCommitAppend applies single appends (each registering its
// object first, as a broker's RegisterObject and CommitAppend are two
// commands), round robin over 100 streams: the per-append cost the
// object's appends are measured against.
func BenchmarkCommitAppend(b *testing.B) {
	r := newReplica(b, 100)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		s := i % len(r.ids)
		i++
		obj := &fsmpb.ObjectRef{Key: fmt.Sprintf("bench/a/%020d", r.seq), Identity: "sha256:" + fmt.Sprintf("%064x", r.seq)}
		if res := r.apply(&fsmpb.Command{Op: &fsmpb.Command_RegisterObject{RegisterObject: &fsmpb.RegisterObject{Object: obj, Size: payload}}}); res.Rejection != nil {
			b.Fatalf("register: %v", res.Rejection)
		}
		c := &fsmpb.CommitAppend{StreamId: r.ids[s], WriterEpoch: r.epochs[s], ExpectedStart: r.ends[s], End: r.ends[s] + offsets,
			Object: obj, Bytes: &fsmpb.ByteRange{Length: payload}, IndexGen0: true, DataCrc32C: &crc}
		r.ends[s] += offsets
		if res := r.apply(&fsmpb.Command{Op: &fsmpb.Command_CommitAppend{CommitAppend: c}}); res.Rejection != nil {
			b.Fatalf("commit append: %v", res.Rejection)
		}
	}
}
