package fsm

import (
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/metad/metad/fsm/fsmpb"
)

// stampField is Command.stamp_unix_nano's field number.
var stampField = protowire.Number((&fsmpb.Command{}).ProtoReflect().Descriptor().Fields().ByName("stamp_unix_nano").Number())

// StampEncoded returns an encoded Command with its stamp_unix_nano set to
// unixNano, without decoding it: protobuf reads the last occurrence of a
// singular scalar field, so appending the field overrides any stamp the
// bytes carried. It lets a leader stamp a command a follower encoded (the
// stamp is the leader's clock, fsm.proto) without a decode and re-encode.
// data must be a well-formed Command encoding (DecodeCommand accepts it);
// the result then decodes to the same Command but for its stamp.
func StampEncoded(data []byte, unixNano int64) []byte {
	out := make([]byte, len(data), len(data)+protowire.SizeTag(stampField)+protowire.SizeVarint(uint64(unixNano)))
	copy(out, data)
	out = protowire.AppendTag(out, stampField, protowire.VarintType)
	return protowire.AppendVarint(out, uint64(unixNano))
}
