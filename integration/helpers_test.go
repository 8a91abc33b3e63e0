package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/internal/proc"
)

// writer appends to one stream through a client, remembering every append
// the cluster acknowledged.
type writer struct {
	t      testing.TB
	c      *client.Client
	stream uint64
	epoch  uint64
	end    uint64
	acked  []uint64 // committed ends acknowledged, in order
	// pending is an append whose outcome is unknown, retried as is.
	pending    *metadpb.CommitAppendRequest
	pendingObj *metadpb.RegisterObjectRequest
}

func newWriter(t testing.TB, c *client.Client, name string) *writer {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	s, err := client.Call(ctx, c, c.Metad.CreateStream, &metadpb.CreateStreamRequest{Name: name, RequestId: client.NewRequestID()})
	if err != nil {
		t.Fatalf("create stream: %v", err)
	}
	o, err := client.Call(ctx, c, c.Metad.OpenForWrite, &metadpb.OpenForWriteRequest{StreamId: s.StreamId, RequestId: client.NewRequestID()})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return &writer{t: t, c: c, stream: s.StreamId, epoch: o.WriterEpoch}
}

// append commits n offsets; it returns the error instead of failing so
// that callers under faults can decide. After an indeterminate failure the
// next call retries the same request (same request id, same expected
// start): the cluster applies it at most once and answers the retry with
// the first outcome.
func (w *writer) append(ctx context.Context, n uint64) error {
	if w.pending == nil {
		obj := &metadpb.ObjectRef{Key: fmt.Sprintf("s%d/%d", w.stream, w.end), Identity: fmt.Sprintf("sha256:%064x", w.end+1)}
		w.pendingObj = &metadpb.RegisterObjectRequest{Object: obj, Size: n, RequestId: client.NewRequestID()}
		w.pending = &metadpb.CommitAppendRequest{
			StreamId: w.stream, WriterEpoch: w.epoch, ExpectedStart: w.end, End: w.end + n, Object: obj,
			Bytes: &metadpb.ByteRange{Length: n}, IndexGen0: true, RequestId: client.NewRequestID(),
		}
	}
	if _, err := client.Call(ctx, w.c, w.c.Metad.RegisterObject, w.pendingObj); err != nil {
		return w.settle(err)
	}
	resp, err := client.Call(ctx, w.c, w.c.Metad.CommitAppend, w.pending)
	if err != nil {
		return w.settle(err)
	}
	w.pending, w.pendingObj = nil, nil
	w.end = resp.CommittedEnd
	w.acked = append(w.acked, w.end)
	return nil
}

// settle forgets the pending append if its failure was definite.
func (w *writer) settle(err error) error {
	if e, ok := client.AsError(err); ok && e.Definite {
		w.pending, w.pendingObj = nil, nil
	}
	return err
}

func (w *writer) mustAppend(n uint64) {
	w.t.Helper()
	if err := w.append(ctxT(w.t, 30*time.Second), n); err != nil {
		w.t.Fatalf("append: %v", err)
	}
}

// describe reads the stream through server i only.
func describe(t testing.TB, c *proc.Cluster, i int, stream uint64) (*metadpb.Stream, error) {
	cl := c.Client(i)
	resp, err := cl.Metad.DescribeStream(ctxT(t, 10*time.Second), &metadpb.DescribeStreamRequest{StreamId: stream})
	if err != nil {
		return nil, err
	}
	return resp.Stream, nil
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// voters counts leaders and voters in server i's status.
func roles(c *proc.Cluster, i int) (leaders, voters int, err error) {
	st, err := c.Status(i)
	if err != nil {
		return 0, 0, err
	}
	for _, n := range st.Nodes {
		if n.State == "Leader" {
			leaders++
		}
		if n.Voter {
			voters++
		}
	}
	return leaders, voters, nil
}
