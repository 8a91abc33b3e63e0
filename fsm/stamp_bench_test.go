package fsm

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/fsm/fsmpb"
)

// forwardedCommand is a typical forwarded write, encoded as a follower
// sends it.
func forwardedCommand(b *testing.B) []byte {
	data, err := proto.Marshal(&fsmpb.Command{RequestId: "0123456789abcdef0123456789abcdef",
		Op: &fsmpb.Command_CommitAppend{CommitAppend: &fsmpb.CommitAppend{StreamId: 7, WriterEpoch: 2,
			ExpectedStart: 1 << 20, End: 1<<20 + 4096, Object: &fsmpb.ObjectRef{Key: "streams/7/segments/000123", Identity: "etag-0123456789"},
			Bytes: &fsmpb.ByteRange{Offset: 0, Length: 4096}, IndexGen0: true}}})
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkStampForwarded compares the leader's two ways of stamping a
// forwarded command: the old decode, set, re-encode, and the new check
// decode plus StampEncoded.
func BenchmarkStampForwarded(b *testing.B) {
	data := forwardedCommand(b)
	b.Run("decode-stamp-encode", func(b *testing.B) {
		for i := range b.N {
			cmd, err := DecodeCommand(data)
			if err != nil {
				b.Fatal(err)
			}
			cmd.StampUnixNano = int64(i)
			if _, err := proto.Marshal(cmd); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("check-decode-append-stamp", func(b *testing.B) {
		for i := range b.N {
			if _, err := DecodeCommand(data); err != nil {
				b.Fatal(err)
			}
			_ = StampEncoded(data, int64(i))
		}
	})
}
