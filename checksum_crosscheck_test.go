package metad_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/checksum"
	"github.com/metad/metad/client"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/jepsen/history"
	"github.com/metad/metad/jepsen/model"
)

// TestJepsenChecksumMatchesTheServers: the harness computes record
// checksums from the documented canonical encoding, not from metad's code
// (so it cannot share a bug with it); the two must still agree, with and
// without a data checksum, or every publish of the harness is refused.
func TestJepsenChecksumMatchesTheServers(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	views := map[fsm.View]string{fsm.Committed: model.Committed, fsm.TopicCompacted: model.TopicCompacted}
	for i := range 500 {
		view := fsm.Committed
		if i%2 == 1 {
			view = fsm.TopicCompacted
		}
		key := fsm.IndexKey{Stream: rng.Uint64N(1 << 40), View: view, Generation: rng.Uint64N(100), Start: rng.Uint64N(1 << 30)}
		r := fsm.Range{Start: key.Start, End: key.Start + 1 + rng.Uint64N(100)}
		var surv []fsm.Range
		var hsurv []history.Range
		if view == fsm.TopicCompacted {
			surv = []fsm.Range{{Start: r.Start, End: r.Start + 1}}
			hsurv = []history.Range{{Start: r.Start, End: r.Start + 1}}
		}
		obj := fsm.ObjectRef{Key: "k" + string(rune('a'+i%26)), Identity: "sha256:" + string(rune('A'+i%26))}
		b := fsm.ByteRange{Offset: rng.Uint64N(1 << 20), Length: rng.Uint64N(1 << 20)}
		var data checksum.Data
		if i%3 != 0 {
			data = checksum.Data{CRC: rng.Uint32(), Set: true}
		}
		want := fsm.RecordChecksumData(key, r, surv, obj, b, data)
		got := model.Checksum(key.Stream, views[view], key.Generation, history.Range{Start: r.Start, End: r.End}, hsurv,
			history.Object{Key: obj.Key, Identity: obj.Identity}, history.Bytes{Offset: b.Offset, Length: b.Length}, data.Ptr())
		if got != want {
			t.Fatalf("record %d (%v, data %v): harness checksum %08x, server's %08x", i, key, data, got, want)
		}
	}
}

// TestClientRecordChecksumIsTheServers: a writer builds records with the
// client alone (client.RecordChecksum, on the wire's types); the state
// machine must compute the same checksum from its own types, or the
// server refuses every record the client builds.
func TestClientRecordChecksumIsTheServers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 500 {
		view := fsm.View(1 + i%2)
		key := fsm.IndexKey{Stream: rng.Uint64N(1 << 40), View: view, Generation: rng.Uint64N(100), Start: rng.Uint64N(1 << 30)}
		r := fsm.Range{Start: key.Start, End: key.Start + 1 + rng.Uint64N(100)}
		rec := &metadpb.IndexRecord{Range: &metadpb.Range{Start: r.Start, End: r.End},
			Object: &metadpb.ObjectRef{Key: fmt.Sprintf("k%d", i), Identity: fmt.Sprintf("sha256:%x", rng.Uint64())},
			Bytes:  &metadpb.ByteRange{Offset: rng.Uint64N(1 << 20), Length: rng.Uint64N(1 << 20)}}
		var surv []fsm.Range
		for j := range i % 3 {
			s := fsm.Range{Start: r.Start + uint64(j), End: r.Start + uint64(j) + 1}
			surv = append(surv, s)
			rec.Survivors = append(rec.Survivors, &metadpb.Range{Start: s.Start, End: s.End})
		}
		var data checksum.Data
		if i%4 != 0 {
			data = checksum.Data{CRC: rng.Uint32(), Set: true}
			rec.DataCrc32C = data.Ptr()
		}
		want := fsm.RecordChecksumData(key, r, surv, fsm.ObjectRef{Key: rec.Object.Key, Identity: rec.Object.Identity},
			fsm.ByteRange{Offset: rec.Bytes.Offset, Length: rec.Bytes.Length}, data)
		if got := client.RecordChecksum(key.Stream, metadpb.View(view), key.Generation, rec); got != want {
			t.Fatalf("record %d: client's checksum %08x, the state machine's %08x", i, got, want)
		}
	}
}

// TestClientKnowsTheServersRecordBound: a writer splits a generation into
// parts of client.MaxRecordsPerPart records; the state machine refuses a
// part of more than fsm.MaxRecordsPerCommand.
func TestClientKnowsTheServersRecordBound(t *testing.T) {
	if client.MaxRecordsPerPart != fsm.MaxRecordsPerCommand {
		t.Fatalf("client.MaxRecordsPerPart %d, fsm.MaxRecordsPerCommand %d", client.MaxRecordsPerPart, fsm.MaxRecordsPerCommand)
	}
}
