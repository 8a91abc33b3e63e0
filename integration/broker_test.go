package integration

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/checksum"
	"github.com/metad/metad/client"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/internal/proc"
	"github.com/metad/metad/objectstore"
)

// broker writes bytes to the cluster's shared object store and commits
// and indexes them, as a real broker and compactor would.
type broker struct {
	t      testing.TB
	c      *client.Client
	store  objectstore.Store
	stream uint64
	epoch  uint64
	// bytes remembers what each identity holds, to check reads (G8).
	bytes map[string][]byte
}

func newBroker(t testing.TB, cl *proc.Cluster, name string) *broker {
	t.Helper()
	store, err := objectstore.NewLocal(filepath.Join(cl.Dir, "objects"))
	if err != nil {
		t.Fatal(err)
	}
	return newBrokerWithStore(t, cl, name, store)
}

// newBrokerWithStore is a broker whose bytes live in store.
func newBrokerWithStore(t testing.TB, cl *proc.Cluster, name string, store objectstore.Store) *broker {
	t.Helper()
	c, err := client.New(client.Config{Addrs: addrs(cl), Timeout: 20 * time.Second, Objects: store, Holder: "test-broker"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	w := proc.NewWriter(t, c, name)
	return &broker{t: t, c: c, store: store, stream: w.Stream, epoch: w.Epoch, bytes: map[string][]byte{}}
}

func addrs(c *proc.Cluster) []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.GRPC)
	}
	return out
}

func (b *broker) ctx() context.Context { return ctxT(b.t, 30*time.Second) }

// put stores payload under key and registers it.
func (b *broker) put(key string, payload []byte) fsm.ObjectRef {
	b.t.Helper()
	info, err := b.store.Put(b.ctx(), key, bytes.NewReader(payload))
	if err != nil {
		b.t.Fatal(err)
	}
	ref := &metadpb.ObjectRef{Key: info.Key, Identity: info.Identity}
	if _, err := client.Call(b.ctx(), b.c, b.c.Metad.RegisterObject, &metadpb.RegisterObjectRequest{Object: ref, Size: uint64(info.Size), RequestId: client.NewRequestID()}); err != nil {
		b.t.Fatalf("register %s: %v", key, err)
	}
	b.bytes[info.Identity] = append([]byte(nil), payload...)
	return fsm.ObjectRef{Key: info.Key, Identity: info.Identity}
}

// append commits n offsets whose bytes are payload, at the committed end.
func (b *broker) append(n uint64, payload []byte, indexed bool) (fsm.Range, fsm.ObjectRef) {
	b.t.Helper()
	desc, err := client.Call(b.ctx(), b.c, b.c.Metad.DescribeStream, &metadpb.DescribeStreamRequest{StreamId: b.stream})
	if err != nil {
		b.t.Fatal(err)
	}
	start := desc.Stream.CommittedEnd
	obj := b.put(fmt.Sprintf("s%d/append-%d", b.stream, start), payload)
	_, err = client.Call(b.ctx(), b.c, b.c.Metad.CommitAppend, &metadpb.CommitAppendRequest{
		StreamId: b.stream, WriterEpoch: b.epoch, ExpectedStart: start, End: start + n,
		Object: &metadpb.ObjectRef{Key: obj.Key, Identity: obj.Identity}, Bytes: &metadpb.ByteRange{Length: uint64(len(payload))},
		IndexGen0: indexed, RequestId: client.NewRequestID(), DataCrc32C: checksum.Of(payload).Ptr(),
	})
	if err != nil {
		b.t.Fatalf("append: %v", err)
	}
	return fsm.Range{Start: start, End: start + n}, obj
}

// record is one record to publish.
type record struct {
	rng       fsm.Range
	survivors []fsm.Range
	obj       fsm.ObjectRef
	length    uint64
}

// publish publishes a complete generation with checksums: each record's
// data checksum is of the bytes it names, as this broker put them.
func (b *broker) publish(view metadpb.View, gen uint64, coverage fsm.Range, recs ...record) error {
	req := &metadpb.PublishGenerationRequest{StreamId: b.stream, View: view, Generation: gen, WriterEpoch: b.epoch,
		Coverage: &metadpb.Range{Start: coverage.Start, End: coverage.End}, Complete: true, RequestId: client.NewRequestID()}
	for _, r := range recs {
		key := fsm.IndexKey{Stream: b.stream, View: fsm.View(view), Generation: gen, Start: r.rng.Start}
		br := fsm.ByteRange{Length: r.length}
		var surv []*metadpb.Range
		for _, s := range r.survivors {
			surv = append(surv, &metadpb.Range{Start: s.Start, End: s.End})
		}
		var data checksum.Data
		if held, ok := b.bytes[r.obj.Identity]; ok && uint64(len(held)) >= r.length {
			data = checksum.Of(held[:r.length])
		}
		req.Records = append(req.Records, &metadpb.IndexRecord{
			Range: &metadpb.Range{Start: r.rng.Start, End: r.rng.End}, Survivors: surv,
			Object: &metadpb.ObjectRef{Key: r.obj.Key, Identity: r.obj.Identity},
			Bytes:  &metadpb.ByteRange{Length: r.length}, Checksum: fsm.RecordChecksumData(key, r.rng, r.survivors, r.obj, br, data),
			DataCrc32C: data.Ptr(),
		})
	}
	_, err := client.Call(b.ctx(), b.c, b.c.Metad.PublishGeneration, req)
	return err
}

// rewrite writes payload as a new object and publishes generation gen of
// the COMMITTED view with one record over rng.
func (b *broker) rewrite(gen uint64, rng fsm.Range, payload []byte) fsm.ObjectRef {
	b.t.Helper()
	obj := b.put(fmt.Sprintf("s%d/gen-%d-%d", b.stream, gen, rng.Start), payload)
	if err := b.publish(metadpb.View_COMMITTED, gen, rng, record{rng: rng, obj: obj, length: uint64(len(payload))}); err != nil {
		b.t.Fatalf("publish generation %d: %v", gen, err)
	}
	return obj
}

func (b *broker) resolve(view metadpb.View, offset uint64, exclude ...*metadpb.CandidateRef) (*metadpb.ResolveResponse, error) {
	return b.c.Resolve(b.ctx(), b.stream, view, offset, exclude)
}

func (b *broker) mustTarget(view metadpb.View, offset uint64) *metadpb.Target {
	b.t.Helper()
	resp, err := b.resolve(view, offset)
	if err != nil || resp.Outcome != metadpb.Outcome_TARGET {
		b.t.Fatalf("resolve %s %d: %v %v", view, offset, resp, err)
	}
	return resp.Target
}

// read is client.Read, checking the bytes match the target's identity.
func (b *broker) read(view metadpb.View, offset uint64, timeout time.Duration) (*client.ReadResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := b.c.Read(ctx, b.stream, view, offset)
	if err == nil && res.Outcome == metadpb.Outcome_TARGET {
		want := b.bytes[res.Target.Object.Identity]
		if !bytes.Equal(res.Data, want) {
			b.t.Fatalf("read %q under identity %s, which holds %q (G8)", res.Data, res.Target.Object.Identity, want)
		}
	}
	return res, err
}

func bytesReader(s string) *bytes.Reader { return bytes.NewReader([]byte(s)) }
