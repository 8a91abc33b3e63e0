package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/internal/proc"
	"github.com/metad/metad/objectstore"
)

// streamSetLevel is the cluster feature level CommitObject needs.
const streamSetLevel = 4

// TestWriterSurvivesLeaderKill: one client.Writer writes to 1,000 streams
// at once (each stream a goroutine making several Appends of several
// records) over a 3-node cluster of real processes sharing a file object
// store, and the leader is killed with SIGKILL halfway through. Every
// Append is acknowledged (the Writer retries what the kill left in doubt
// under the same request id), and afterwards every stream reads back
// through client.Read, offset by offset from 0 to its committed end, with
// exactly the bytes acknowledged at each offset: no gap, no duplicate, no
// foreign byte.
func TestWriterSurvivesLeaderKill(t *testing.T) {
	const (
		streams = 1000
		rounds  = 4 // Appends per stream
		records = 2 // records per Append
	)
	c := proc.New(t, 3)
	c.StartAll()
	formed(t, c, 3)
	waitFeatureLevel(t, c, streamSetLevel)
	store, err := objectstore.NewLocal(filepath.Join(c.Dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	cl, err := client.New(client.Config{Addrs: addrs(c), Timeout: 20 * time.Second, Objects: store, Holder: "test-writer", Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	ctx := ctxT(t, 3*time.Minute)
	began := time.Now()
	ids := createStreams(ctx, t, cl, streams)
	t.Logf("%d streams created in %s", streams, time.Since(began).Round(time.Millisecond))
	leader := c.WaitLeader(0) // found now, so that the kill lands at once

	w, err := cl.NewWriter(client.WriterConfig{FlushInterval: 20 * time.Millisecond, OpenConcurrency: 64})
	if err != nil {
		t.Fatal(err)
	}
	// record is the bytes of a stream's offset: distinct per stream and
	// offset, and of varying length, so a misplaced range cannot match.
	record := func(stream, offset uint64) []byte {
		return []byte(fmt.Sprintf("s%d/o%d/%s;", stream, offset, bytes.Repeat([]byte("x"), int(offset%7))))
	}
	var acked atomic.Int64
	half := make(chan struct{})
	var once sync.Once
	errs := make(chan error, streams)
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var next uint64
			for range rounds {
				var recs [][]byte
				for k := range uint64(records) {
					recs = append(recs, record(id, next+k))
				}
				ack, err := w.Append(ctx, id, recs...)
				if err != nil {
					errs <- fmt.Errorf("stream %d, append at %d: %w", id, next, err)
					return
				}
				if ack.StreamID != id || ack.Start != next || ack.End != next+records {
					errs <- fmt.Errorf("stream %d: acknowledged [%d,%d), want [%d,%d)", id, ack.Start, ack.End, next, next+records)
					return
				}
				next = ack.End
				if acked.Add(1) == streams*rounds/2 {
					once.Do(func() { close(half) })
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	select {
	case <-half:
	case <-done:
		t.Fatal("every append was acknowledged before the halfway mark")
	}
	killed := time.Now()
	c.Kill(leader)
	t.Logf("killed leader %s with SIGKILL after %d of %d appends were acknowledged", c.Nodes[leader].ID, acked.Load(), streams*rounds)
	<-done
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("all %d appends acknowledged %s after the kill", streams*rounds, time.Since(killed).Round(time.Millisecond))
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("writer: %v flushes, %v objects, %v stream-appends, %v retries, %v bytes uploaded",
		metricValue(t, reg, "metad_client_writer_flushes_total"), metricValue(t, reg, "metad_client_writer_objects_committed_total"),
		metricValue(t, reg, "metad_client_writer_stream_appends_committed_total"), metricValue(t, reg, "metad_client_writer_retries_total"),
		metricValue(t, reg, "metad_client_writer_uploaded_bytes_total"))

	read := time.Now()
	checkReadBack(ctx, t, cl, ids, rounds*records, record)
	t.Logf("%d streams read back in %s", streams, time.Since(read).Round(time.Millisecond))
}

// waitFeatureLevel waits until every running server reports the cluster
// at level or above (a fresh cluster raises itself to its binary's).
func waitFeatureLevel(t *testing.T, c *proc.Cluster, level uint32) {
	t.Helper()
	c.WaitFor(fmt.Sprintf("cluster feature level %d on every server", level), 60*time.Second, func() bool {
		for i := range c.Nodes {
			st, err := c.Status(i)
			if err != nil || st.ClusterFeatureLevel < level {
				return false
			}
		}
		return true
	})
}

// createStreams creates n streams, 32 at a time, and returns their ids.
func createStreams(ctx context.Context, t *testing.T, cl *client.Client, n int) []uint64 {
	t.Helper()
	ids := make([]uint64, n)
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	var failed atomic.Value
	for i := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			resp, err := client.Call(ctx, cl, cl.Metad.CreateStream, &metadpb.CreateStreamRequest{Name: fmt.Sprintf("writer-%d", i), RequestId: client.NewRequestID()})
			if err != nil {
				failed.Store(err)
				return
			}
			ids[i] = resp.StreamId
		}()
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		t.Fatalf("create stream: %v", err)
	}
	return ids
}

// checkReadBack reads every stream from offset 0 to its committed end
// through client.Read, 32 streams at a time: each read's records start
// where the last ended (no gap), hold exactly the bytes made for their
// offsets, and the stream ends at want.
func checkReadBack(ctx context.Context, t *testing.T, cl *client.Client, ids []uint64, want uint64, record func(stream, offset uint64) []byte) {
	t.Helper()
	sem := make(chan struct{}, 32)
	errs := make(chan error, len(ids))
	var wg sync.WaitGroup
	for _, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := readStream(ctx, cl, id, want, record); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func readStream(ctx context.Context, cl *client.Client, id, want uint64, record func(stream, offset uint64) []byte) error {
	var off uint64
	for {
		res, err := cl.Read(ctx, id, metadpb.View_COMMITTED, off)
		if err != nil {
			return fmt.Errorf("stream %d: read at %d: %w", id, off, err)
		}
		if res.Outcome == metadpb.Outcome_EOF {
			if off != want || res.CommittedEnd != want {
				return fmt.Errorf("stream %d: EOF at %d, committed end %d; want %d", id, off, res.CommittedEnd, want)
			}
			return nil
		}
		if res.Outcome != metadpb.Outcome_TARGET {
			return fmt.Errorf("stream %d: read at %d: outcome %v", id, off, res.Outcome)
		}
		if res.Unchecked {
			return fmt.Errorf("stream %d: read at %d: no data checksum", id, off)
		}
		rr := res.Target.RecordRange
		if rr.Start != off || rr.End <= off {
			return fmt.Errorf("stream %d: read at %d returned records [%d,%d): a gap or an overlap", id, off, rr.Start, rr.End)
		}
		var exp []byte
		for o := rr.Start; o < rr.End; o++ {
			exp = append(exp, record(id, o)...)
		}
		if !bytes.Equal(res.Data, exp) {
			return fmt.Errorf("stream %d: records [%d,%d) read %q, want %q", id, rr.Start, rr.End, res.Data, exp)
		}
		off = rr.End
	}
}

// metricValue sums a gathered counter or gauge.
func metricValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			sum += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	return sum
}

// TestWriterFencedByAnotherWriter: a second Writer opening a stream fences
// the first. The first Writer's next flush carries that stream and
// another in one object: the server refuses the fenced stream's append
// (STALE_EPOCH, named in the refusal), and the first Writer fails only
// that Append, as fenced and naming the stream, commits the other
// stream's records without it, and refuses further Appends to the fenced
// stream. Both streams read back exactly what was acknowledged.
func TestWriterFencedByAnotherWriter(t *testing.T) {
	c := proc.New(t, 1)
	c.StartAll()
	formed(t, c, 1)
	waitFeatureLevel(t, c, streamSetLevel)
	store, err := objectstore.NewLocal(filepath.Join(c.Dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(client.Config{Addrs: addrs(c), Timeout: 20 * time.Second, Objects: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	ctx := ctxT(t, time.Minute)
	ids := createStreams(ctx, t, cl, 2)
	a, b := ids[0], ids[1]
	// Every record is 4 bytes and the first Writer flushes at 8 (never by
	// age): each pair of its Appends shares one object.
	first, err := cl.NewWriter(client.WriterConfig{FlushBytes: 8, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	pair := func(ra, rb string) (*client.Pending, *client.Pending) {
		t.Helper()
		pa, err := first.AppendAsync(ctx, a, []byte(ra))
		if err != nil {
			t.Fatal(err)
		}
		pb, err := first.AppendAsync(ctx, b, []byte(rb))
		if err != nil {
			t.Fatal(err)
		}
		return pa, pb
	}
	pa, pb := pair("a-00", "b-00")
	for _, p := range []*client.Pending{pa, pb} {
		if _, err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	second, err := cl.NewWriter(client.WriterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if ack, err := second.Append(ctx, b, []byte("b-w2")); err != nil || ack.Start != 1 {
		t.Fatalf("the second writer's append: %+v %v, want offset 1", ack, err)
	}
	pa, pb = pair("a-01", "b-01")
	if ack, err := pa.Wait(ctx); err != nil || ack.Start != 1 || ack.End != 2 {
		t.Fatalf("stream a beside the fenced stream: %+v %v, want [1,2)", ack, err)
	}
	var ae *client.AppendError
	if _, err := pb.Wait(ctx); !errors.Is(err, client.ErrFenced) || !errors.Is(err, client.ErrStaleEpoch) || !errors.As(err, &ae) || ae.StreamID != b {
		t.Fatalf("stream b after another writer opened it: %v, want a fenced *AppendError naming stream %d", err, b)
	}
	if _, err := first.AppendAsync(ctx, b, []byte("b-02")); !errors.Is(err, client.ErrFenced) {
		t.Fatalf("an Append to the fenced stream: %v, want ErrFenced at once", err)
	}
	for _, w := range []*client.Writer{first, second} {
		if err := w.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := map[uint64][]string{a: {"a-00", "a-01"}, b: {"b-00", "b-w2"}}
	for _, id := range ids {
		if err := readStream(ctx, cl, id, 2, func(stream, offset uint64) []byte { return []byte(want[stream][offset]) }); err != nil {
			t.Error(err)
		}
	}
}
