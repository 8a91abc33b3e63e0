package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/internal/proc"
	"github.com/metad/metad/objectstore"

	"github.com/metad/metad/internal/waitfor"
)

// Scenario tests of the read path on a real 3-node cluster, one per rule
// of the read path, G5–G10 (issue "The whole read path").

// readCluster is a formed 3-node cluster with fast GC and a broker whose
// stream holds [0,10) in generation 0 ("g0"), a rewrite in generation 1
// ("g1") and another in generation 2 ("g2").
func readCluster(t *testing.T, extra ...string) (*proc.Cluster, *broker) {
	t.Helper()
	// A broker registers an object and then publishes the generation that
	// names it; a min-idle of 2s keeps GC off objects in that window.
	c := proc.New(t, 3, append([]string{"--gc-interval", "200ms", "--gc-min-idle", "2s"}, extra...)...)
	c.StartAll()
	formed(t, c, 3)
	b := newBroker(t, c, "reads")
	b.append(10, []byte("g0"), true)
	b.rewrite(1, fsm.Range{Start: 0, End: 10}, []byte("g1"))
	b.rewrite(2, fsm.Range{Start: 0, End: 10}, []byte("g2"))
	return c, b
}

func TestNewestHealthyGenerationIsChosen(t *testing.T) {
	_, b := readCluster(t)
	tg := b.mustTarget(metadpb.View_COMMITTED, 4)
	if tg.Key.Generation != 2 || tg.Resolved.Start != 4 || tg.Resolved.End != 10 || tg.PinId == 0 {
		t.Fatalf("target %v", tg)
	}
	res, err := b.read(metadpb.View_COMMITTED, 4, 10*time.Second)
	if err != nil || string(res.Data) != "g2" || len(res.Fallbacks) != 0 {
		t.Fatalf("read %v %v", res, err)
	}
}

// TestUnusableNewestFallsBackInTheSameView: the newest candidate's bytes
// are gone; the read reports it, excludes it and falls back to the older
// candidate of the same view; later resolves skip it (quarantined).
func TestUnusableNewestFallsBackInTheSameView(t *testing.T) {
	_, b := readCluster(t)
	g2 := b.mustTarget(metadpb.View_COMMITTED, 0)
	if err := b.store.Delete(b.ctx(), g2.Object.Key, g2.Object.Identity); err != nil {
		t.Fatal(err)
	}
	res, err := b.read(metadpb.View_COMMITTED, 3, 10*time.Second)
	if err != nil || string(res.Data) != "g1" || res.Target.Key.View != metadpb.View_COMMITTED {
		t.Fatalf("read %v %v, want generation 1's bytes", res, err)
	}
	if len(res.Fallbacks) != 1 || res.Fallbacks[0].Kind != metadpb.FailureKind_OBJECT_MISSING || res.Fallbacks[0].Candidate.Key.Generation != 2 {
		t.Fatalf("fallbacks %+v", res.Fallbacks)
	}
	waitFor(t, "generation 2 quarantined", func() bool {
		resp, err := b.resolve(metadpb.View_COMMITTED, 3)
		return err == nil && resp.Target.Key.Generation == 1 && hasReason(resp.Tried, "QUARANTINED")
	})
}

// TestSharedPinIsNotReleasable: a shared pin protects every concurrent
// reader of its object, so no reader may release it (G9): the release is
// refused naming the field, and the pin keeps serving resolves until it
// expires.
func TestSharedPinIsNotReleasable(t *testing.T) {
	_, b := readCluster(t)
	tg := b.mustTarget(metadpb.View_COMMITTED, 4)
	if !tg.PinShared {
		t.Fatalf("target %v: want a shared pin (the default)", tg)
	}
	_, err := client.Call(b.ctx(), b.c, b.c.Metad.ReleasePin, &metadpb.ReleasePinRequest{PinId: tg.PinId, RequestId: client.NewRequestID()})
	e, ok := client.AsError(err)
	if !ok || e.Code != codes.FailedPrecondition || !errors.Is(err, client.ErrPinShared) || e.Field != "pin_id" || !e.Definite {
		t.Fatalf("releasing a shared pin: %v, want FailedPrecondition PIN_SHARED on pin_id", err)
	}
	if again := b.mustTarget(metadpb.View_COMMITTED, 5); again.PinId != tg.PinId {
		t.Fatalf("the next resolve took pin %d, want the shared pin %d still held", again.PinId, tg.PinId)
	}
}

// TestReplacedObjectIsDetectedNeverServed: new bytes put under the newest
// candidate's key are a new version, and the read, which names its
// version, still returns generation 2's bytes. The version's own bytes
// overwritten in place (a tool writing the file, as a store without
// versions would) are detected as CORRUPT and never returned: the read
// falls back to generation 1.
func TestReplacedObjectIsDetectedNeverServed(t *testing.T) {
	_, b := readCluster(t)
	g2 := b.mustTarget(metadpb.View_COMMITTED, 0)
	if _, err := b.store.Put(b.ctx(), g2.Object.Key, bytesReader("EVIL")); err != nil {
		t.Fatal(err)
	}
	res, err := b.read(metadpb.View_COMMITTED, 0, 10*time.Second)
	if err != nil || string(res.Data) != "g2" {
		t.Fatalf("read after a put under the key: %+v %v, want generation 2's bytes", res, err)
	}
	overwriteInPlace(t, b.store, g2.Object.Key, g2.Object.Identity, "EV")
	res, err = b.read(metadpb.View_COMMITTED, 0, 10*time.Second)
	if err != nil || string(res.Data) != "g1" {
		t.Fatalf("read %+v %v, want generation 1's bytes", res, err)
	}
	if res.Fallbacks[0].Kind != metadpb.FailureKind_CORRUPT {
		t.Fatalf("fallbacks %+v", res.Fallbacks)
	}
}

// overwriteInPlace rewrites the file of one version of a file:// store
// (the layout objectstore/local.go documents).
func overwriteInPlace(t *testing.T, s objectstore.Store, key, identity, data string) {
	t.Helper()
	sum := sha256.Sum256([]byte(key))
	path := filepath.Join(s.(*objectstore.Local).Dir(), hex.EncodeToString(sum[:]), "sha256-"+strings.TrimPrefix(identity, "sha256:"))
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestEveryCandidateFailingIsRetryableWithDiagnostic: with every object
// gone, Read fails within its deadline with a retryable error listing each
// candidate; a resolve excluding all of them fails retryably with a
// diagnostic naming each and why.
func TestEveryCandidateFailingIsRetryableWithDiagnostic(t *testing.T) {
	_, b := readCluster(t)
	var refs []*metadpb.CandidateRef
	for gen := uint64(0); gen <= 2; gen++ {
		resp, err := b.c.Metad.ListIndex(b.ctx(), &metadpb.ListIndexRequest{StreamId: b.stream, View: metadpb.View_COMMITTED, Generation: gen})
		if err != nil {
			t.Fatal(err)
		}
		r := resp.Records[0]
		refs = append(refs, &metadpb.CandidateRef{Key: r.Key, Version: r.Version})
		if err := b.store.Delete(b.ctx(), r.Record.Object.Key, r.Record.Object.Identity); err != nil {
			t.Fatal(err)
		}
	}
	// Excluding every candidate: retryable, with a diagnostic naming each.
	// (The client retries until its deadline, hence a short one.)
	_, err := b.c.Resolve(ctxT(t, 2*time.Second), b.stream, metadpb.View_COMMITTED, 5, refs)
	e, ok := client.AsError(err)
	if !ok || !errors.Is(err, client.ErrResolveUnavailable) || !e.Retryable() || e.Diagnostic == nil {
		t.Fatalf("resolve excluding everything: %v", err)
	}
	gens := map[uint64]string{}
	for _, r := range e.Diagnostic.Tried {
		gens[r.Candidate.GetKey().GetGeneration()] = r.Reason
	}
	if len(gens) != 3 {
		t.Fatalf("diagnostic %v must name all three candidates", e.Diagnostic.Tried)
	}
	// Reading with every object gone: a retryable error within the
	// deadline, listing each candidate that failed (repair may rebuild
	// generation 0 from evidence meanwhile; its bytes are gone too).
	start := time.Now()
	_, err = b.read(metadpb.View_COMMITTED, 5, 4*time.Second)
	var re *client.ReadError
	if !errors.As(err, &re) || !re.Retryable() || len(re.Tried) < 3 {
		t.Fatalf("read: %v", err)
	}
	if elapsed := time.Since(start); elapsed > 8*time.Second {
		t.Fatalf("read took %s with a 4s deadline", elapsed)
	}
	for _, f := range re.Tried {
		if f.Kind != metadpb.FailureKind_OBJECT_MISSING {
			t.Fatalf("candidate failure %+v, want OBJECT_MISSING", f)
		}
	}
}

func TestMissingGeneration0IsRepairedInTheSameCall(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	formed(t, c, 3)
	b := newBroker(t, c, "repair")
	b.append(10, []byte("indexed"), true)
	rng, _ := b.append(10, []byte("unindexed"), false)
	resp, err := b.resolve(metadpb.View_COMMITTED, rng.Start+3)
	if err != nil || resp.Outcome != metadpb.Outcome_TARGET || resp.Target.Key.Generation != 0 || resp.Attempts < 2 {
		t.Fatalf("resolve of an unindexed offset: %v %v", resp, err)
	}
	if tg := resp.Target; tg.RecordRange.Start != rng.Start || tg.RecordRange.End != rng.End {
		t.Fatalf("rebuilt record %v, want %v", tg.RecordRange, rng)
	}
	res, err := b.read(metadpb.View_COMMITTED, rng.Start, 10*time.Second)
	if err != nil || string(res.Data) != "unindexed" {
		t.Fatalf("read %v %v", res, err)
	}
}

func TestBoundaryOutcomes(t *testing.T) {
	_, b := readCluster(t)
	b.append(5, []byte("more"), true) // committed end 15
	if _, err := client.Call(b.ctx(), b.c, b.c.Metad.Trim, &metadpb.TrimRequest{StreamId: b.stream, Offset: 12, RequestId: client.NewRequestID()}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		offset uint64
		want   metadpb.Outcome
	}{{11, metadpb.Outcome_OFFSET_TRIMMED}, {12, metadpb.Outcome_TARGET}, {14, metadpb.Outcome_TARGET}, {15, metadpb.Outcome_EOF}, {1 << 40, metadpb.Outcome_EOF}} {
		resp, err := b.resolve(metadpb.View_COMMITTED, tc.offset)
		if err != nil || resp.Outcome != tc.want || resp.Trim != 12 || resp.CommittedEnd != 15 {
			t.Errorf("offset %d: %v %v, want %v", tc.offset, resp, err, tc.want)
		}
	}
}

// TestCompactedHoleResolvesToNextSurvivor: a TOPIC_COMPACTED hole gives the
// next surviving offset, never a COMMITTED target or a dense range.
func TestCompactedHoleResolvesToNextSurvivor(t *testing.T) {
	_, b := readCluster(t)
	obj := b.put("compacted-1", []byte("compacted"))
	survivors := []fsm.Range{{Start: 2, End: 3}, {Start: 7, End: 9}}
	if err := b.publish(metadpb.View_TOPIC_COMPACTED, 1, fsm.Range{Start: 0, End: 10},
		record{rng: fsm.Range{Start: 0, End: 10}, survivors: survivors, obj: obj, length: 9}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		offset   uint64
		resolved fsm.Range
	}{{0, fsm.Range{Start: 2, End: 3}}, {3, fsm.Range{Start: 7, End: 9}}, {8, fsm.Range{Start: 8, End: 9}}} {
		tg := b.mustTarget(metadpb.View_TOPIC_COMPACTED, tc.offset)
		if tg.Key.View != metadpb.View_TOPIC_COMPACTED || tg.Resolved.Start != tc.resolved.Start || tg.Resolved.End != tc.resolved.End {
			t.Errorf("offset %d: %v, want TOPIC_COMPACTED %v", tc.offset, tg, tc.resolved)
		}
	}
	resp, err := b.resolve(metadpb.View_TOPIC_COMPACTED, 9)
	if err != nil || resp.Outcome != metadpb.Outcome_VIEW_END || resp.ViewEnd != 10 {
		t.Fatalf("after the last survivor: %v %v", resp, err)
	}
}

// TestTrimRacingResolve: resolves race a trim sweep; every answer is a
// target at an offset the trim had not passed when the resolve began, or
// OFFSET_TRIMMED — never a stale target, never EOF. Half the appends have
// no generation-0 record, so repairs race the trim too (repair proving the
// trim ends as OFFSET_TRIMMED).
func TestTrimRacingResolve(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	formed(t, c, 3)
	b := newBroker(t, c, "race")
	for i := range 40 {
		b.append(5, []byte(fmt.Sprintf("batch-%d", i)), i%2 == 0)
	}
	var mu sync.Mutex
	var trims []ackedWrite // trim points acknowledged, with time
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	trimming := make(chan struct{}) // closed when the trimmer is done
	go func() {
		defer wg.Done()
		defer close(trimming)
		for to := uint64(5); to <= 200 && ctx.Err() == nil; to += 5 {
			if _, err := client.Call(ctx, b.c, b.c.Metad.Trim, &metadpb.TrimRequest{StreamId: b.stream, Offset: to, RequestId: client.NewRequestID()}); err == nil {
				mu.Lock()
				trims = append(trims, ackedWrite{at: time.Now(), end: to})
				mu.Unlock()
			}
			time.Sleep(20 * time.Millisecond) // pacing: the trims spread over the resolves the servers (real processes) serve
		}
	}()
	// Resolves chase the trim point: each asks for an offset a little
	// below or above the last acknowledged trim, so that, whatever the
	// relative speed of trims and resolves on this machine, some land
	// below a trim (OFFSET_TRIMMED) and some above it (TARGET), and the
	// ones near it race the trim in flight.
	latest := func() uint64 {
		mu.Lock()
		defer mu.Unlock()
		if len(trims) == 0 {
			return 0
		}
		return trims[len(trims)-1].end
	}
	targets, trimmed := 0, 0
	for i := 0; latest() < 195 && !closed(trimming); i++ {
		offset := max(latest()+uint64(i%7), 3) - 3 // floor-3 .. floor+3
		began := time.Now()
		resp, err := b.resolve(metadpb.View_COMMITTED, offset)
		if err != nil {
			if e, ok := client.AsError(err); !ok || !e.Retryable() {
				t.Fatalf("offset %d: non-retryable failure %v", offset, err)
			}
			continue
		}
		mu.Lock()
		floor := trimFloor(trims, began)
		mu.Unlock()
		switch resp.Outcome {
		case metadpb.Outcome_TARGET:
			targets++
			if offset < floor {
				t.Fatalf("stale target for offset %d: trim %d was acknowledged before the resolve began", offset, floor)
			}
		case metadpb.Outcome_OFFSET_TRIMMED:
			trimmed++
			if resp.Trim <= offset {
				t.Fatalf("OFFSET_TRIMMED at %d with trim %d", offset, resp.Trim)
			}
		default:
			t.Fatalf("offset %d: outcome %v", offset, resp.Outcome)
		}
	}
	cancel()
	wg.Wait()
	if targets == 0 || trimmed == 0 {
		t.Fatalf("%d targets, %d trimmed: the race never happened", targets, trimmed)
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func trimFloor(trims []ackedWrite, before time.Time) uint64 {
	var floor uint64
	for _, tr := range trims {
		if tr.at.Before(before) && tr.end > floor {
			floor = tr.end
		}
	}
	return floor
}

// TestGCHonoursPins: an object referenced only by a generation that is
// retired while a reader holds a pin on it survives until the pin is
// released; then GC deletes it. Pins are not shared here, so the reader's
// pin is its own to release (a shared pin only expires).
func TestGCHonoursPins(t *testing.T) {
	c, b := readCluster(t, "--share-pins=false")
	tg := b.mustTarget(metadpb.View_COMMITTED, 0) // generation 2, pinned
	if _, err := client.Call(b.ctx(), b.c, b.c.Metad.RetireGeneration, &metadpb.RetireGenerationRequest{
		StreamId: b.stream, View: metadpb.View_COMMITTED, Generation: 2, RequestId: client.NewRequestID()}); err != nil {
		t.Fatal(err)
	}
	key := tg.Object.Key
	waitFor(t, "GC to mark the object DELETING", func() bool { return objectStatus(b, key) == metadpb.ObjectStatus_DELETING })
	passes := gcPasses(c)
	waitFor(t, "five more GC passes", func() bool { return gcPasses(c) >= passes+5 })
	if _, err := b.store.Stat(b.ctx(), key, tg.Object.Identity); err != nil {
		t.Fatalf("object deleted while pinned: %v", err)
	}
	if objectStatus(b, key) != metadpb.ObjectStatus_DELETING {
		t.Fatal("object left DELETING while pinned")
	}
	if _, err := client.Call(b.ctx(), b.c, b.c.Metad.ReleasePin, &metadpb.ReleasePinRequest{PinId: tg.PinId, RequestId: client.NewRequestID()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "GC to delete the released object", func() bool {
		_, err := b.store.Stat(b.ctx(), key, tg.Object.Identity)
		return errors.Is(err, objectstore.ErrNotFound) && objectStatus(b, key) == metadpb.ObjectStatus_DELETED
	})
	// The retired generation's reads fall back to generation 1.
	if tg := b.mustTarget(metadpb.View_COMMITTED, 0); tg.Key.Generation != 1 {
		t.Fatalf("after retiring generation 2: %v", tg)
	}
}

func objectStatus(b *broker, key string) metadpb.ObjectStatus {
	resp, err := b.c.Metad.DescribeObject(b.ctx(), &metadpb.DescribeObjectRequest{Key: key})
	if err != nil {
		return metadpb.ObjectStatus_OBJECT_STATUS_UNSPECIFIED
	}
	return resp.Object.Status
}

// TestLeaderChangeDuringRepair: resolves of unindexed appends trigger
// repairs while leadership moves; exactly one generation-0 record per
// append results, each matching its evidence.
func TestLeaderChangeDuringRepair(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	formed(t, c, 3)
	b := newBroker(t, c, "repairs")
	const appends = 30
	for i := range appends {
		b.append(4, []byte(fmt.Sprintf("a%d", i)), false)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 3 {
			tctx, tcancel := context.WithTimeout(ctx, 10*time.Second)
			_, _ = b.c.Cluster.TransferLeadership(tctx, &metadpb.TransferLeadershipRequest{})
			tcancel()
			time.Sleep(300 * time.Millisecond) // pacing: the servers (real processes) serve resolves a while under each leader
		}
	}()
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < appends; i += 4 {
				rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
				_, _ = b.c.Resolve(rctx, b.stream, metadpb.View_COMMITTED, uint64(i*4+1), nil)
				rcancel()
			}
		}()
	}
	wg.Wait()
	// Whatever the resolves saw, the periodic scan or a last resolve
	// finishes the job; what matters is that no repair took effect twice.
	waitFor(t, "every append indexed", func() bool { return len(gen0(t, b)) == appends })
	ev, err := b.c.Metad.ListEvidence(b.ctx(), &metadpb.ListEvidenceRequest{StreamId: b.stream, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	recs := gen0(t, b)
	for i, r := range recs {
		e := ev.Evidence[i]
		if r.Record.Range.Start != e.Range.Start || r.Record.Range.End != e.Range.End || r.Record.Object.Identity != e.Object.Identity {
			t.Fatalf("record %v does not match evidence %v", r.Record, e)
		}
		if i > 0 && recs[i-1].Record.Range.End > r.Record.Range.Start {
			t.Fatalf("overlapping generation-0 records %v and %v", recs[i-1].Record.Range, r.Record.Range)
		}
	}
}

func gen0(t *testing.T, b *broker) []*metadpb.StoredIndexRecord {
	resp, err := b.c.Metad.ListIndex(b.ctx(), &metadpb.ListIndexRequest{StreamId: b.stream, View: metadpb.View_COMMITTED, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Records
}

func hasReason(rs []*metadpb.Refusal, reason string) bool {
	for _, r := range rs {
		if r.Reason == reason {
			return true
		}
	}
	return false
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitfor.Cond(t, 30*time.Second, what, func() error {
		if !cond() {
			return errors.New("not yet")
		}
		return nil
	})
}

// gcPasses is the number of GC passes the servers have finished, as their
// metrics say (GC runs on the leader, which may move).
func gcPasses(c *proc.Cluster) int {
	n := 0
	for i := range c.Nodes {
		n += max(metricOn(c, i, "metad_gc_pass_duration_seconds_count"), 0)
	}
	return n
}
