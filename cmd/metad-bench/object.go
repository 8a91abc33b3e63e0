package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/bench/load"
	"github.com/metad/metad/client"
)

// The commit-object workload: each operation is one CommitObject, a
// stream-set object whose appends go to --streams-per-object streams, all
// owned by the worker, so no two operations ever race on a stream's
// expected start. Its objects are synthetic, as commit-append's are
// without an object store: the tool makes up each version's key and
// identity (the command registers them itself), so only metadata is
// measured.

// maxStreamsPerObject bounds --streams-per-object. The server has its own,
// lower bound (--max-object-streams, default 1000); this one only keeps a
// typo from creating millions of streams before the server says no.
const maxStreamsPerObject = 100_000

// setupWidth is how many streams are created and opened at once before a
// commit-object run, whatever --concurrency is: at -c 1 with 1000 streams
// per object, one at a time would take most of the run's setup.
const setupWidth = 32

// objectWriter is one worker's streams: an append to each of them per
// object. Touched only by its worker once the run starts.
type objectWriter struct {
	worker  int
	streams []uint64 // stream ids, in the order of every object's appends
	epochs  []uint64 // epochs[i]: the worker's writer epoch of streams[i]
	ends    []uint64 // ends[i]: streams[i]'s committed end
	seq     uint64   // objects committed or tried so far: names the next
}

// makeObjectWriters creates and opens --streams-per-object streams for
// each of --concurrency workers.
func (e *benchEnv) makeObjectWriters(ctx context.Context) error {
	n, per := e.opts.concurrency, e.opts.streamsPerObject
	e.objects = make([]*objectWriter, n)
	for w := range e.objects {
		e.objects[w] = &objectWriter{worker: w, streams: make([]uint64, per), epochs: make([]uint64, per), ends: make([]uint64, per)}
	}
	return e.parallelWidth(ctx, n*per, setupWidth, func(ctx context.Context, i int) error {
		ow := e.objects[i/per]
		name := fmt.Sprintf("%s-o%d-s%d", e.opts.prefix, ow.worker, i%per)
		cr, err := setupCall(ctx, e, e.c.Metad.CreateStream, &metadpb.CreateStreamRequest{Name: name, RequestId: client.NewRequestID()})
		if err != nil {
			return err
		}
		op, err := setupCall(ctx, e, e.c.Metad.OpenForWrite, &metadpb.OpenForWriteRequest{StreamId: cr.StreamId, RequestId: client.NewRequestID()})
		if err != nil {
			return err
		}
		// A new stream's committed end is 0.
		ow.streams[i%per], ow.epochs[i%per] = cr.StreamId, op.WriterEpoch
		return nil
	})
}

// setupAttempts bounds how often setupCall sends one request.
const setupAttempts = 5

// setupCall is call, sent again (the same request, so the same request id:
// at most once applied) when it failed CANCELLED while ctx is live. The
// client closes its leader connection when one call says the leader
// moved, and every other call then in flight on it fails so, not
// retryable; tens of thousands of setup calls on a loaded machine meet
// one such election often enough to fail the whole run.
func setupCall[Req, Resp any](ctx context.Context, e *benchEnv, rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req) (Resp, error) {
	for attempt := 1; ; attempt++ {
		resp, err := call(ctx, e, rpc, req)
		if err == nil || !errors.Is(err, client.ErrCancelled) || ctx.Err() != nil || attempt == setupAttempts {
			return resp, err
		}
	}
}

// objectRequest is ow's next object: a made-up version of a new key, one
// --payload-byte range of it per stream, each append --offsets offsets at
// its stream's committed end (with the generation-0 index record), each
// carrying the data checksum of its bytes (zeros), as a broker's would.
func (e *benchEnv) objectRequest(ow *objectWriter) *metadpb.CommitObjectRequest {
	key := fmt.Sprintf("bench/%s/o%d/%020d", e.opts.prefix, ow.worker, ow.seq)
	sum := sha256.Sum256([]byte(key))
	payload := uint64(e.opts.payload)
	req := &metadpb.CommitObjectRequest{
		Object: &metadpb.ObjectRef{Key: key, Identity: "sha256:" + hex.EncodeToString(sum[:])},
		Size:   payload * uint64(len(ow.streams)), RequestId: client.NewRequestID(),
		Appends: make([]*metadpb.ObjectAppend, len(ow.streams)),
	}
	crc := e.objectChecksum.Ptr()
	for i, id := range ow.streams {
		req.Appends[i] = &metadpb.ObjectAppend{
			StreamId: id, WriterEpoch: ow.epochs[i], ExpectedStart: ow.ends[i], End: ow.ends[i] + e.opts.offsets,
			Bytes: &metadpb.ByteRange{Offset: uint64(i) * payload, Length: payload}, IndexGen0: true, DataCrc32C: crc,
		}
	}
	return req
}

// objectOnce commits ow's next object.
func (e *benchEnv) objectOnce(ctx context.Context, ow *objectWriter) error {
	req := e.objectRequest(ow)
	ow.seq++
	resp, err := call(ctx, e, e.c.Metad.CommitObject, req)
	if err == nil && len(resp.CommittedEnds) != len(ow.ends) {
		err = fmt.Errorf("commit-object: %d committed ends for %d appends", len(resp.CommittedEnds), len(ow.ends))
	}
	if err != nil {
		// Where are the ends now? All or none of the appends landed (a
		// retried commit may have); nobody else writes these streams.
		e.resyncObject(ctx, ow)
		return err
	}
	copy(ow.ends, resp.CommittedEnds)
	return nil
}

// resyncObject reads the committed end of each of ow's streams.
func (e *benchEnv) resyncObject(ctx context.Context, ow *objectWriter) {
	for i, id := range ow.streams {
		d, err := call(ctx, e, e.c.Metad.DescribeStream, &metadpb.DescribeStreamRequest{StreamId: id})
		if err == nil {
			ow.ends[i] = d.Stream.CommittedEnd
		}
	}
}

// prepareObjects sets up the commit-object workload.
func (e *benchEnv) prepareObjects(ctx context.Context, rep benchReport) (load.Op, benchReport, error) {
	b := e.opts
	e.say("creating %d streams (%d workers x %d)", b.concurrency*b.streamsPerObject, b.concurrency, b.streamsPerObject)
	e.objectChecksum = e.dataChecksum(make([]byte, b.payload))
	if err := e.makeObjectWriters(ctx); err != nil {
		return nil, rep, err
	}
	rep.Streams = b.concurrency * b.streamsPerObject
	rep.EntriesPerOp = b.streamsPerObject
	rep.MessageBytes = proto.Size(e.objectRequest(e.objects[0]))
	return func(ctx context.Context, w int) (string, error) {
		return "commit-object", e.objectOnce(ctx, e.objects[w])
	}, rep, nil
}
