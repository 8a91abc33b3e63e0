package integration

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/checksum"
	"github.com/metad/metad/client"
	"github.com/metad/metad/internal/proc"
)

var streamsetSeed = flag.Uint64("streamset.seed", 0, "seed for TestStreamSetLeaderKillLeavesNoPartialObject (0: time-based)")

// TestStreamSetAllOrNone: against three real servers, a 50-stream
// CommitObject with one stale writer epoch is refused whole, naming that
// stream, and changes nothing on any node; the same object with the right
// epoch commits in all 50 streams at one version on every node; and a
// retry by request id after the leader is killed right after the
// acknowledgement returns the first outcome and applies nothing twice.
func TestStreamSetAllOrNone(t *testing.T) {
	c := proc.New(t, 3)
	c.StartAll()
	c.WaitFormed(3)
	waitFeatureLevel(t, c, 4)
	ctx := ctxT(t, 120*time.Second)
	cl := c.Client()
	const n, stale, count = 50, 17, 4
	ids, epochs := openStreams(ctx, t, cl, "set", n)
	starts := make([]uint64, n)

	// Another writer opens one stream: the epoch this writer holds for it
	// is fenced.
	open, err := client.Call(ctx, cl, cl.Metad.OpenForWrite, &metadpb.OpenForWriteRequest{StreamId: ids[stale], RequestId: client.NewRequestID()})
	if err != nil {
		t.Fatal(err)
	}
	first := setObject("sets/first", ids, epochs, starts, count)
	_, err = client.Call(ctx, cl, cl.Metad.CommitObject, first)
	e, ok := client.AsError(err)
	if !ok || !errors.Is(err, client.ErrStaleEpoch) || !e.Definite || len(e.Appends) != 1 {
		t.Fatalf("commit with stream %d's epoch stale: %v (appends %v), want a definite STALE_EPOCH naming one append", ids[stale], err, e)
	}
	if r := e.Appends[0]; r.Index != stale || r.StreamId != ids[stale] || r.Reason != client.ReasonStaleEpoch || r.WriterEpoch != open.WriterEpoch {
		t.Fatalf("refusal %v, want appends[%d] stream %d STALE_EPOCH at epoch %d", r, stale, ids[stale], open.WriterEpoch)
	}
	refusedAt := appliedIndex(ctx, t, cl, ids[0])
	for i := range c.Nodes {
		node := c.Client(i)
		waitApplied(t, c, i, ids[0], refusedAt)
		for _, id := range ids {
			end, ev := localStream(ctx, t, node, id)
			if end != 0 || len(ev) != 0 {
				t.Errorf("node %d stream %d after the refusal: committed end %d, evidence %v; want nothing", i, id, end, ev)
			}
		}
		if _, err := client.Call(ctx, node, node.Metad.DescribeObject, &metadpb.DescribeObjectRequest{Key: first.Object.Key, Consistency: metadpb.Consistency_STALE}); !errors.Is(err, client.ErrNotFound) {
			t.Errorf("node %d: object of the refused commit: %v, want not registered", i, err)
		}
	}

	// The same object with the stream's current epoch commits everywhere.
	epochs[stale] = open.WriterEpoch
	second := setObject("sets/first", ids, epochs, starts, count)
	resp, err := client.Call(ctx, cl, cl.Metad.CommitObject, second)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.CommittedEnds) != n {
		t.Fatalf("committed ends %v, want %d", resp.CommittedEnds, n)
	}
	for i := range c.Nodes {
		waitApplied(t, c, i, ids[0], resp.Version)
		checkObjectEverywhere(ctx, t, c.Client(i), fmt.Sprintf("node %d", i), second, resp.Version, 1)
	}
	for j := range starts {
		starts[j] = count
	}

	// A retry by request id after the leader is killed right after the
	// acknowledgement: the survivors answer with the first outcome.
	leader := c.WaitLeader(0)
	third := setObject("sets/third", ids, epochs, starts, count)
	acked, err := client.Call(ctx, cl, cl.Metad.CommitObject, third)
	if err != nil {
		t.Fatal(err)
	}
	c.Kill(leader)
	var survivors []int
	for i := range c.Nodes {
		if i != leader {
			survivors = append(survivors, i)
		}
	}
	rest := c.Client(survivors...)
	retried, err := client.Call(ctx, rest, rest.Metad.CommitObject, third)
	if err != nil {
		t.Fatalf("retry of an acknowledged commit after killing the leader: %v", err)
	}
	if retried.Version != acked.Version || !slices.Equal(retried.CommittedEnds, acked.CommittedEnds) {
		t.Fatalf("retry answered version %d ends %v; the first answer was version %d ends %v", retried.Version, retried.CommittedEnds, acked.Version, acked.CommittedEnds)
	}
	at := appliedIndex(ctx, t, rest, ids[0])
	c.Start(leader)
	for i := range c.Nodes {
		waitApplied(t, c, i, ids[0], at)
		checkObjectEverywhere(ctx, t, c.Client(i), fmt.Sprintf("node %d", i), third, acked.Version, 2)
	}
}

// TestStreamSetLeaderKillLeavesNoPartialObject: several writers commit
// stream-set objects of 10 to 15 streams each while the leader is killed
// with SIGKILL and restarted. Afterwards, on every node, each object's
// appends are in all of its streams or in none, each in one version, its
// version is registered exactly when they are, and every acknowledged
// object is there at the version acknowledged.
func TestStreamSetLeaderKillLeavesNoPartialObject(t *testing.T) {
	seed := *streamsetSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -streamset.seed=%d)", seed, seed)
	c := proc.New(t, 3)
	c.StartAll()
	c.WaitFormed(3)
	waitFeatureLevel(t, c, 4)
	ctx := ctxT(t, 150*time.Second)
	cl := c.Client()
	const writers, perWriter = 4, 15

	h := &setHistory{progress: make(chan struct{}, 1)}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var all []uint64
	var ids, epochs [writers][]uint64
	for w := range writers {
		ids[w], epochs[w] = openStreams(ctx, t, cl, fmt.Sprintf("w%d-", w), perWriter)
		all = append(all, ids[w]...)
	}
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.write(ctx, cl, rand.New(rand.NewPCG(seed, uint64(w))), fmt.Sprintf("w%d", w), ids[w], epochs[w], stop); err != nil {
				t.Errorf("writer %d: %v", w, err)
			}
		}()
	}
	leader := c.WaitLeader(0)
	h.waitAcked(ctx, t, 15)
	c.Kill(leader)
	t.Logf("killed leader %s after %d acknowledged objects", c.Nodes[leader].ID, h.ackedCount())
	h.waitAcked(ctx, t, h.ackedCount()+15)
	c.Start(leader)
	h.waitAcked(ctx, t, h.ackedCount()+10)
	close(stop)
	wg.Wait()
	if t.Failed() {
		return
	}
	at := appliedIndex(ctx, t, cl, all[0])
	t.Logf("%d objects attempted, %d acknowledged, %d sent again by request id after a failure; checking every node at index %d",
		len(h.attempts), h.ackedCount(), h.retried.Load(), at)
	for i := range c.Nodes {
		waitApplied(t, c, i, all[0], at)
		h.check(ctx, t, c.Client(i), fmt.Sprintf("node %d", i), all)
	}
}

// setAttempt is one CommitObject a writer sent, and what it knows of its
// outcome.
type setAttempt struct {
	req     *metadpb.CommitObjectRequest
	acked   bool
	version uint64
}

// setHistory records every writer's attempts.
type setHistory struct {
	progress chan struct{} // signalled after each acknowledgement
	acked    atomic.Int64
	retried  atomic.Int64 // objects sent more than once: the first send's outcome was unknown

	mu       sync.Mutex // guards attempts
	attempts []*setAttempt
}

// write commits objects over a random 10 to len(ids) of the writer's
// streams until stop is closed, retrying each by its request id until its
// outcome is known. Only a definite refusal is an error: this writer's
// epochs and ends are right.
func (h *setHistory) write(ctx context.Context, cl *client.Client, rng *rand.Rand, name string, ids, epochs []uint64, stop <-chan struct{}) error {
	ends := make([]uint64, len(ids))
	for seq := 0; ; seq++ {
		select {
		case <-stop:
			return nil
		default:
		}
		pick := rng.Perm(len(ids))[:10+rng.IntN(len(ids)-9)]
		var sIDs, sEpochs, sStarts []uint64
		for _, j := range pick {
			sIDs, sEpochs, sStarts = append(sIDs, ids[j]), append(sEpochs, epochs[j]), append(sStarts, ends[j])
		}
		a := &setAttempt{req: setObject(fmt.Sprintf("sets/%s/%d", name, seq), sIDs, sEpochs, sStarts, uint64(1+rng.IntN(3)))}
		h.mu.Lock()
		h.attempts = append(h.attempts, a)
		h.mu.Unlock()
		resp, err := commitUntilKnown(ctx, cl, a.req, &h.retried)
		if err != nil {
			return fmt.Errorf("object %s: %w", a.req.Object.Key, err)
		}
		h.mu.Lock()
		a.acked, a.version = true, resp.Version
		h.mu.Unlock()
		for k, j := range pick {
			ends[j] = resp.CommittedEnds[k]
		}
		h.acked.Add(1)
		select {
		case h.progress <- struct{}{}:
		default:
		}
	}
}

// commitUntilKnown sends req until it is acknowledged or definitely
// refused; an indeterminate failure (the leader died with it in flight)
// is retried with the same request id, which the cluster applies at most
// once.
func commitUntilKnown(ctx context.Context, cl *client.Client, req *metadpb.CommitObjectRequest, retried *atomic.Int64) (*metadpb.CommitObjectResponse, error) {
	sent := 0
	commit := func(ctx context.Context, req *metadpb.CommitObjectRequest, opts ...grpc.CallOption) (*metadpb.CommitObjectResponse, error) {
		if sent++; sent == 2 {
			retried.Add(1)
		}
		return cl.Metad.CommitObject(ctx, req, opts...)
	}
	for {
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := client.Call(callCtx, cl, commit, req)
		cancel()
		if err == nil {
			return resp, nil
		}
		if e, ok := client.AsError(err); (ok && e.Definite) || ctx.Err() != nil {
			return nil, err
		}
	}
}

func (h *setHistory) ackedCount() int { return int(h.acked.Load()) }

// waitAcked waits for n acknowledged objects in all.
func (h *setHistory) waitAcked(ctx context.Context, t *testing.T, n int) {
	t.Helper()
	for h.ackedCount() < n {
		select {
		case <-h.progress:
		case <-ctx.Done():
			t.Fatalf("waiting for %d acknowledged objects, have %d: %v", n, h.ackedCount(), ctx.Err())
		}
	}
}

// check reads node's own state (STALE: no forwarding, no read index) and
// checks every attempted object against it: present in all its streams or
// in none, and present when acknowledged.
func (h *setHistory) check(ctx context.Context, t *testing.T, node *client.Client, where string, streams []uint64) {
	t.Helper()
	type placed struct {
		stream uint64
		ev     *metadpb.Evidence
	}
	byKey := map[string][]placed{}
	for _, id := range streams {
		end, evs := localStream(ctx, t, node, id)
		var last uint64
		for _, ev := range evs {
			if ev.Range.GetStart() != last {
				t.Errorf("%s stream %d: evidence %v does not start at %d", where, id, ev.Range, last)
			}
			last = ev.Range.GetEnd()
			byKey[ev.Object.GetKey()] = append(byKey[ev.Object.GetKey()], placed{id, ev})
		}
		if end != last {
			t.Errorf("%s stream %d: committed end %d, evidence ends at %d", where, id, end, last)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, a := range h.attempts {
		key := a.req.Object.Key
		got := byKey[key]
		delete(byKey, key)
		_, err := client.Call(ctx, node, node.Metad.DescribeObject, &metadpb.DescribeObjectRequest{Key: key, Consistency: metadpb.Consistency_STALE})
		if len(got) == 0 {
			if a.acked {
				t.Errorf("%s: acknowledged object %s (version %d) is in none of its %d streams", where, key, a.version, len(a.req.Appends))
			}
			if !errors.Is(err, client.ErrNotFound) {
				t.Errorf("%s: object %s is in no stream, but describing it gave %v, want not registered", where, key, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: object %s is in %d streams but not registered: %v", where, key, len(got), err)
		}
		if len(got) != len(a.req.Appends) {
			t.Errorf("%s: PARTIAL object %s: in %d of its %d streams (acknowledged %v)", where, key, len(got), len(a.req.Appends), a.acked)
			continue
		}
		for k, ap := range a.req.Appends {
			at := slices.IndexFunc(got, func(p placed) bool { return p.stream == ap.StreamId })
			if at < 0 {
				t.Errorf("%s: PARTIAL object %s: appends[%d] missing from stream %d", where, key, k, ap.StreamId)
				continue
			}
			p := got[at]
			if p.ev.Range.GetStart() != ap.ExpectedStart || p.ev.Range.GetEnd() != ap.End ||
				p.ev.Version != got[0].ev.Version || (a.acked && p.ev.Version != a.version) {
				t.Errorf("%s: object %s appends[%d] (stream %d [%d,%d)) found as %v at version %d (first at %d, acknowledged %v at %d)",
					where, key, k, ap.StreamId, ap.ExpectedStart, ap.End, p.ev.Range, p.ev.Version, got[0].ev.Version, a.acked, a.version)
			}
		}
	}
	for key := range byKey {
		t.Errorf("%s: evidence names object %s, which no writer committed", where, key)
	}
}

// setObject is a stream-set object of count offsets in each stream at
// starts, with a new request id. Its bytes are never written (nothing
// reads them); each append carries the data checksum of zeros, as a
// broker's carries one of its bytes.
func setObject(key string, ids, epochs, starts []uint64, count uint64) *metadpb.CommitObjectRequest {
	req := &metadpb.CommitObjectRequest{
		Object: &metadpb.ObjectRef{Key: key, Identity: fmt.Sprintf("sha256:%x", sha256.Sum256([]byte(key)))},
		Size:   count * uint64(len(ids)), RequestId: client.NewRequestID(),
	}
	crc := checksum.Of(make([]byte, count)).Ptr()
	for i, id := range ids {
		req.Appends = append(req.Appends, &metadpb.ObjectAppend{
			StreamId: id, WriterEpoch: epochs[i], ExpectedStart: starts[i], End: starts[i] + count,
			Bytes: &metadpb.ByteRange{Offset: uint64(i) * count, Length: count}, IndexGen0: true, DataCrc32C: crc,
		})
	}
	return req
}

// checkObjectEverywhere checks that node holds obj committed at version
// in every stream, as the nth append of each, and registered.
func checkObjectEverywhere(ctx context.Context, t *testing.T, node *client.Client, where string, obj *metadpb.CommitObjectRequest, version uint64, nth int) {
	t.Helper()
	for _, a := range obj.Appends {
		end, evs := localStream(ctx, t, node, a.StreamId)
		if end != a.End || len(evs) != nth {
			t.Errorf("%s stream %d: committed end %d with %d appends, want %d with %d", where, a.StreamId, end, len(evs), a.End, nth)
			continue
		}
		ev := evs[nth-1]
		if ev.Object.GetKey() != obj.Object.Key || ev.Version != version || ev.Range.GetStart() != a.ExpectedStart || ev.Range.GetEnd() != a.End {
			t.Errorf("%s stream %d: last append %v, want %s [%d,%d) at version %d", where, a.StreamId, ev, obj.Object.Key, a.ExpectedStart, a.End, version)
		}
	}
	d, err := client.Call(ctx, node, node.Metad.DescribeObject, &metadpb.DescribeObjectRequest{Key: obj.Object.Key, Consistency: metadpb.Consistency_STALE})
	if err != nil || d.Object.Ref.GetIdentity() != obj.Object.Identity || d.Object.Version != version || d.Object.Size != obj.Size {
		t.Errorf("%s: object %s: %v %v, want registered at version %d", where, obj.Object.Key, d, err, version)
	}
}

// openStreams creates n streams named prefix0.. and opens each for write.
func openStreams(ctx context.Context, t *testing.T, cl *client.Client, prefix string, n int) (ids, epochs []uint64) {
	t.Helper()
	for i := range n {
		s, err := client.Call(ctx, cl, cl.Metad.CreateStream, &metadpb.CreateStreamRequest{Name: fmt.Sprintf("%s%d", prefix, i), RequestId: client.NewRequestID()})
		if err != nil {
			t.Fatalf("create stream: %v", err)
		}
		o, err := client.Call(ctx, cl, cl.Metad.OpenForWrite, &metadpb.OpenForWriteRequest{StreamId: s.StreamId, RequestId: client.NewRequestID()})
		if err != nil {
			t.Fatalf("open stream %d: %v", s.StreamId, err)
		}
		ids, epochs = append(ids, s.StreamId), append(epochs, o.WriterEpoch)
	}
	return ids, epochs
}

// localStream is a stream's committed end and all its evidence as node
// has them, read STALE: from node's own state, not forwarded.
func localStream(ctx context.Context, t *testing.T, node *client.Client, id uint64) (uint64, []*metadpb.Evidence) {
	t.Helper()
	d, err := client.Call(ctx, node, node.Metad.DescribeStream, &metadpb.DescribeStreamRequest{StreamId: id, Consistency: metadpb.Consistency_STALE})
	if err != nil {
		t.Fatalf("describe stream %d: %v", id, err)
	}
	var evs []*metadpb.Evidence
	for from := uint64(0); ; {
		l, err := client.Call(ctx, node, node.Metad.ListEvidence, &metadpb.ListEvidenceRequest{StreamId: id, From: from, Consistency: metadpb.Consistency_STALE})
		if err != nil {
			t.Fatalf("list evidence of stream %d: %v", id, err)
		}
		if l.AppliedIndex != d.AppliedIndex {
			// Applied in between: read both again at one index.
			return localStream(ctx, t, node, id)
		}
		evs = append(evs, l.Evidence...)
		if len(l.Evidence) == 0 || l.Evidence[len(l.Evidence)-1].Range.GetEnd() >= d.Stream.CommittedEnd {
			return d.Stream.CommittedEnd, evs
		}
		from = l.Evidence[len(l.Evidence)-1].Range.GetEnd()
	}
}

// appliedIndex is the index a linearizable read through cl is answered at:
// every write acknowledged before it is applied there.
func appliedIndex(ctx context.Context, t *testing.T, cl *client.Client, stream uint64) uint64 {
	t.Helper()
	d, err := client.Call(ctx, cl, cl.Metad.DescribeStream, &metadpb.DescribeStreamRequest{StreamId: stream})
	if err != nil {
		t.Fatal(err)
	}
	return d.AppliedIndex
}

// waitApplied waits until server i has applied index, by its own
// (STALE) reads.
func waitApplied(t *testing.T, c *proc.Cluster, i int, stream, index uint64) {
	t.Helper()
	node := c.Client(i)
	var at uint64
	c.WaitFor(fmt.Sprintf("server %d to apply index %d", i, index), 30*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		d, err := node.Metad.DescribeStream(ctx, &metadpb.DescribeStreamRequest{StreamId: stream, Consistency: metadpb.Consistency_STALE})
		if err == nil {
			at = d.AppliedIndex
		}
		return at >= index
	})
}
