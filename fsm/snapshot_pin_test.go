package fsm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// pinnedSnapshotSHA256 is the SHA-256 of the snapshots of the two machines
// below, as the encoder wrote them before its per-record allocations were
// removed (the encoder of the commit that added this test). Snapshots are
// compared across releases (level-1 snapshots stay byte-identical, README
// "Upgrading"), so a faster encoder must write the same bytes.
const pinnedSnapshotSHA256 = "1a7afbdd39ef4f0745f9859c42221633e2e8315c70e3c840719e5ead360522e2"

// TestSnapshotBytesArePinned writes every record kind a level-1 append and
// publish workload has: objects, a stream, evidence, generation-0 records,
// a published generation with its records, and dedup entries.
func TestSnapshotBytesArePinned(t *testing.T) {
	var all []byte
	for _, m := range []*Machine{buildAppends(t, 300).m, buildPublished(t, 3000).m} {
		var buf bytes.Buffer
		if err := m.WriteSnapshot(&buf); err != nil {
			t.Fatal(err)
		}
		all = append(all, buf.Bytes()...)
	}
	sum := sha256.Sum256(all)
	if got := hex.EncodeToString(sum[:]); got != pinnedSnapshotSHA256 {
		t.Fatalf("snapshot bytes changed: SHA-256 %s, pinned %s", got, pinnedSnapshotSHA256)
	}
}
