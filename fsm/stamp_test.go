package fsm

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/fsm/fsmpb"
)

// TestStampEncodedOverridesOnlyTheStamp: the stamped bytes decode to the
// same command with the new stamp, whatever stamp they carried (none, an
// older or a newer one, a negative one).
func TestStampEncodedOverridesOnlyTheStamp(t *testing.T) {
	for _, before := range []int64{0, 1, 1_700_000_000_000_000_000, -5} {
		for _, stamp := range []int64{0, 42, 1_800_000_000_000_000_000, -1} {
			cmd := &fsmpb.Command{RequestId: "r1", StampUnixNano: before,
				Op: &fsmpb.Command_CommitAppend{CommitAppend: &fsmpb.CommitAppend{StreamId: 7, WriterEpoch: 2, ExpectedStart: 3, End: 9,
					Object: &fsmpb.ObjectRef{Key: "k", Identity: "id"}}}}
			data, err := proto.Marshal(cmd)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeCommand(StampEncoded(data, stamp))
			if err != nil {
				t.Fatalf("stamped bytes do not decode: %v", err)
			}
			want := proto.Clone(cmd).(*fsmpb.Command)
			want.StampUnixNano = stamp
			if !proto.Equal(got, want) {
				t.Errorf("stamp %d over %d: got %v, want %v", stamp, before, got, want)
			}
		}
	}
}
