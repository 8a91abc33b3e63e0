package integration

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/checksum"
	"github.com/metad/metad/client"
	"github.com/metad/metad/fsm"
)

// TestRewrittenSliceIsNeverServed (issue 22, must-be-true 2), on a file
// store and on S3: bytes inside one slice of a packed object change in
// place after they were committed with their CRC-32C — on a file store
// the version's file is overwritten, on S3 a proxy in front of the server
// flips the bytes of every GET body, for the servers and the readers
// alike. client.Read and `metad read` never return those bytes: with an
// older candidate in the view the read reports the slice CORRUPT and
// falls back to it; without one it fails retryably (exit 4). Another
// slice of the same object still reads. Once the bytes are back, the
// first repair scan that starts afterwards lifts the quarantines and the
// slices read again.
func TestRewrittenSliceIsNeverServed(t *testing.T) {
	onBothStores(t, []string{"--repair-scan-interval", "300ms"}, func(t *testing.T, s *storeRun) {
		b := s.b
		// [0,10) is appended as an object of its own; the packed object P
		// holds [10,20) and [20,30) as appended, and before them a
		// compactor's rewrite of [0,10), published later as generation 1.
		aBytes := []byte("offsets 0-9 as appended")
		a := s.putVersion(t, "s/own-0", aBytes)
		pBytes := []byte("offsets 0-9 compacted|offsets 10-19|offsets 20-29")
		p := s.putVersion(t, "s/packed", pBytes)
		own := sliceOf(t, a, aBytes, 0, string(aBytes))
		p0 := sliceOf(t, p, pBytes, 0, "offsets 0-9 compacted")
		p1 := sliceOf(t, p, pBytes, 22, "offsets 10-19")
		p2 := sliceOf(t, p, pBytes, 36, "offsets 20-29")
		if r := s.commit(t, 10, own); r.Start != 0 {
			t.Fatalf("first append at %v", r)
		}
		s.commit(t, 10, p1)
		s.commit(t, 10, p2)
		for _, c := range []struct {
			off uint64
			sl  slice
		}{{0, own}, {10, p1}, {20, p2}} {
			s.expectRead(t, c.off, c.sl.data)
		}

		// One byte of p0 and one of p1 change in place; p2 keeps its bytes.
		restore := s.rewriteInPlace(t, p, int64(p0.off)+3, int64(p1.off)+3)

		// [10,20) has no other candidate: a retryable failure, no bytes.
		res, err := s.read(b.c, 10, 5*time.Second)
		if err == nil {
			t.Fatalf("client.Read of offset 10 returned %q from %s [%d,+%d) whose bytes were rewritten in place (committed %q); want CORRUPT and a retryable failure",
				res.Data, res.Target.GetObject().GetKey(), res.Target.GetBytes().GetOffset(), res.Target.GetBytes().GetLength(), p1.data)
		}
		var re *client.ReadError
		if !errors.As(err, &re) || !re.Retryable() || len(re.Tried) == 0 {
			t.Fatalf("client.Read of offset 10: %v; want a retryable ReadError naming the candidate", err)
		}
		for _, f := range re.Tried {
			if f.Kind != metadpb.FailureKind_CORRUPT {
				t.Fatalf("client.Read of offset 10 tried %+v, want only CORRUPT", f)
			}
		}
		if out, errOut, code := s.cliRead(t, 0, 10, 5*time.Second); code != 4 || out != "" {
			t.Fatalf("metad read 10: exit %d, stdout %q; want exit 4 and no bytes\n%s", code, out, errOut)
		}
		// Another slice of the same object is intact and reads.
		s.expectRead(t, 20, p2.data)

		// Generation 1 over [0,10) names p0 with the CRC of the bytes the
		// compactor wrote: the read reports it and falls back to
		// generation 0, in the same view.
		key := fsm.IndexKey{Stream: b.stream, View: fsm.Committed, Generation: 1, Start: 0}
		rng, br, crc := fsm.Range{Start: 0, End: 10}, fsm.ByteRange{Offset: p0.off, Length: uint64(len(p0.data))}, checksum.Of(p0.data)
		if _, err := client.Call(b.ctx(), b.c, b.c.Metad.PublishGeneration, &metadpb.PublishGenerationRequest{
			StreamId: b.stream, View: metadpb.View_COMMITTED, Generation: 1, WriterEpoch: b.epoch,
			Coverage: &metadpb.Range{Start: 0, End: 10}, Complete: true, RequestId: client.NewRequestID(),
			Records: []*metadpb.IndexRecord{{
				Range: &metadpb.Range{Start: 0, End: 10}, Object: &metadpb.ObjectRef{Key: p.Key, Identity: p.Identity},
				Bytes: p0.byteRange(), DataCrc32C: crc.Ptr(), Checksum: fsm.RecordChecksumData(key, rng, nil, p, br, crc),
			}},
		}); err != nil {
			t.Fatalf("publish generation 1 over p0: %v", err)
		}
		res, err = s.read(b.c, 0, 20*time.Second)
		if err != nil || string(res.Data) != string(own.data) {
			t.Fatalf("client.Read of offset 0: %+v %v; want generation 0's %q", res, err, own.data)
		}
		if res.Target.Key.Generation != 0 || res.Target.Key.View != metadpb.View_COMMITTED || len(res.Fallbacks) == 0 {
			t.Fatalf("client.Read of offset 0 answered from %v after %+v; want generation 0 of COMMITTED after generation 1 failed", res.Target.Key, res.Fallbacks)
		}
		for _, f := range res.Fallbacks {
			if f.Kind != metadpb.FailureKind_CORRUPT || f.Candidate.Key.Generation != 1 {
				t.Fatalf("client.Read of offset 0 fell back after %+v, want generation 1 CORRUPT", f)
			}
		}
		if out, errOut, code := s.cliRead(t, 1, 0, 20*time.Second); code != 0 || out != string(own.data) {
			t.Fatalf("metad read 0: exit %d, %q; want %q\n%s", code, out, own.data, errOut)
		}

		// The reports quarantined both records over the rewritten bytes.
		waitUntil(t, "generation 1 at 0 and generation 0 at 10 quarantined", 30*time.Second, func() bool {
			q := s.quarantined(t)
			return len(q) == 2 && q[fsm.IndexKey{Stream: b.stream, View: fsm.Committed, Generation: 1, Start: 0}] &&
				q[fsm.IndexKey{Stream: b.stream, View: fsm.Committed, Generation: 0, Start: 10}]
		})
		s.expectRead(t, 20, p2.data)

		// The bytes back: the first repair scan started after that lifts
		// both quarantines. Scans are counted on the leader (one scan pass
		// and then one quarantine pass per tick): at the third count after
		// the restore, a whole tick has run after it. Nothing resolves
		// meanwhile, so no read's own repair can be what heals.
		restore()
		leader := s.c.WaitLeader(0)
		scans := metricOn(s.c, leader, "metad_repair_scan_passes_total")
		if scans < 0 {
			t.Fatal("no metad_repair_scan_passes_total on the leader")
		}
		waitUntil(t, "three more repair scans on the leader", 60*time.Second, func() bool {
			return metricOn(s.c, leader, "metad_repair_scan_passes_total") >= scans+3
		})
		if q := s.quarantined(t); len(q) != 0 {
			t.Fatalf("still quarantined one repair scan after the bytes were restored: %v", q)
		}
		for _, c := range []struct {
			off uint64
			sl  slice
		}{{0, p0}, {10, p1}, {20, p2}} {
			s.expectRead(t, c.off, c.sl.data)
		}
	})
}

// expectRead: client.Read and `metad read` of offset return want without
// falling back.
func (s *storeRun) expectRead(t *testing.T, offset uint64, want []byte) {
	t.Helper()
	res, err := s.read(s.b.c, offset, 20*time.Second)
	if err != nil || string(res.Data) != string(want) || len(res.Fallbacks) != 0 {
		t.Fatalf("client.Read of %d: %+v %v; want %q without fallback", offset, res, err, want)
	}
	if out, errOut, code := s.cliRead(t, 2, offset, 20*time.Second); code != 0 || out != string(want) {
		t.Fatalf("metad read %d: exit %d, %q; want %q\n%s", offset, code, out, want, errOut)
	}
}

// rewriteInPlace changes the bytes at the given offsets of version obj for
// every reader, and returns what restores them: on a file store it
// overwrites them inside the version's file; on S3 the proxy inverts them
// in GET bodies until switched off.
func (s *storeRun) rewriteInPlace(t *testing.T, obj fsm.ObjectRef, offsets ...int64) (restore func()) {
	t.Helper()
	if s.local == nil {
		s.proxy.Flip("/metad/cluster/"+obj.Key, offsets...)
		return s.proxy.Off
	}
	path, ok := s.local.VersionPath(obj.Key, obj.Identity)
	if !ok {
		t.Fatalf("%s is no identity of a file store", obj.Identity)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	orig := make([]byte, len(offsets))
	for i, off := range offsets {
		if _, err := f.ReadAt(orig[i:i+1], off); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte{orig[i] ^ 0xff}, off); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for i, off := range offsets {
			if _, err := f.WriteAt(orig[i:i+1], off); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// quarantined lists the quarantined records of the broker's stream.
func (s *storeRun) quarantined(t *testing.T) map[fsm.IndexKey]bool {
	t.Helper()
	resp, err := client.Call(s.b.ctx(), s.b.c, s.b.c.Metad.ListQuarantined, &metadpb.ListQuarantinedRequest{Limit: 1000})
	if err != nil {
		t.Fatalf("list quarantined: %v", err)
	}
	out := map[fsm.IndexKey]bool{}
	for _, r := range resp.Records {
		if r.Key.StreamId == s.b.stream {
			out[fsm.IndexKey{Stream: r.Key.StreamId, View: fsm.View(r.Key.View), Generation: r.Key.Generation, Start: r.Key.Start}] = true
		}
	}
	return out
}
