package proc

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/checksum"
	"github.com/metad/metad/client"
)

// Writer appends to one stream through a client, the way a broker does:
// it registers a (synthetic) object, then commits the append at the
// stream's committed end with its generation-0 index record.
//
// After an indeterminate failure the next Append retries the same requests
// (same request ids, same expected start): the cluster applies them at
// most once and answers a retry with the first outcome. End only moves on
// an acknowledged append.
type Writer struct {
	Stream uint64
	Epoch  uint64
	End    uint64 // committed end after the last acknowledged append
	// Client is where appends go; a test may switch it between appends.
	Client *client.Client

	pending *metadpb.CommitAppendRequest
	obj     *metadpb.RegisterObjectRequest
}

// NewWriter creates the stream name and opens it for writing; it fails the
// test if either does not succeed within 30s.
func NewWriter(t testing.TB, c *client.Client, name string) *Writer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.Call(ctx, c, c.Metad.CreateStream, &metadpb.CreateStreamRequest{Name: name, RequestId: client.NewRequestID()})
	if err != nil {
		t.Fatalf("create stream: %v", err)
	}
	o, err := client.Call(ctx, c, c.Metad.OpenForWrite, &metadpb.OpenForWriteRequest{StreamId: s.StreamId, RequestId: client.NewRequestID()})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return &Writer{Client: c, Stream: s.StreamId, Epoch: o.WriterEpoch}
}

// Append commits n offsets, or returns why not, leaving the caller to
// decide what a failure under faults means.
func (w *Writer) Append(ctx context.Context, n uint64) error {
	if w.pending == nil {
		ref := &metadpb.ObjectRef{Key: fmt.Sprintf("s%d/%d", w.Stream, w.End), Identity: fmt.Sprintf("sha256:%064x", w.End+1)}
		w.obj = &metadpb.RegisterObjectRequest{Object: ref, Size: n, RequestId: client.NewRequestID()}
		w.pending = &metadpb.CommitAppendRequest{
			StreamId: w.Stream, WriterEpoch: w.Epoch, ExpectedStart: w.End, End: w.End + n, Object: ref,
			Bytes: &metadpb.ByteRange{Length: n}, IndexGen0: true, RequestId: client.NewRequestID(),
			// The object is registered, never written; its appends carry a
			// data checksum (of zeros) as a broker's do.
			DataCrc32C: checksum.Of(make([]byte, n)).Ptr(),
		}
	}
	if _, err := client.Call(ctx, w.Client, w.Client.Metad.RegisterObject, w.obj); err != nil {
		return w.settle(err)
	}
	resp, err := client.Call(ctx, w.Client, w.Client.Metad.CommitAppend, w.pending)
	if err != nil {
		return w.settle(err)
	}
	w.Forget()
	w.End = resp.CommittedEnd
	return nil
}

// MustAppend appends n offsets within 30s or fails the test.
func (w *Writer) MustAppend(t testing.TB, n uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Append(ctx, n); err != nil {
		t.Fatalf("append: %v", err)
	}
}

// Pending reports whether an append's outcome is still unknown: the next
// Append retries it.
func (w *Writer) Pending() bool { return w.pending != nil }

// Forget drops the pending append, for a test that knows it cannot have
// committed; the next Append starts a new one.
func (w *Writer) Forget() { w.pending, w.obj = nil, nil }

// settle forgets the pending append if its failure was definite.
func (w *Writer) settle(err error) error {
	if e, ok := client.AsError(err); ok && e.Definite {
		w.Forget()
	}
	return err
}
