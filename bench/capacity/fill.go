package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/checksum"
	"github.com/metad/metad/client"
	"github.com/metad/metad/clock"
)

// The fill: index records are written the fast way a compactor would,
// as large published generations, over objects registered once and
// covered by commit-append evidence.

// Objects are shared by the records of many streams, as segments a broker
// wrote for several streams at once would be: each holds recordsPerObject
// records' bytes, recordBytes each.
const (
	recordsPerObject = 1024
	recordBytes      = 1 << 16
	objectBytes      = recordsPerObject * recordBytes
)

// recordData is the data checksum every record and append carries. The
// objects are registered, never written, so no reader checks it; it is
// there because a broker's records carry one, and the state measured
// should hold what theirs would.
var recordData = checksum.Of(make([]byte, recordBytes))

// stream is one filled stream as the tool knows it.
type stream struct {
	id, epoch uint64
	end, trim uint64
	segs      []segment
	gens      uint64 // published generations so far
}

// filler writes the state. streams[i] is touched by one writer at a time.
type filler struct {
	c       *client.Client
	prefix  string
	streams []*stream
	// maxStreams is --streams: how many streams the records are spread
	// over once there are that many records.
	maxStreams int
	log        io.Writer
	// objects counts registered objects, for their names.
	objects atomic.Uint64
	records atomic.Int64 // records written during the current step
}

// writer is one goroutine of the fill, with the object its records go to.
type writer struct {
	f    *filler
	obj  *metadpb.ObjectRef
	used int // records placed in obj
}

// fillStep takes the state from prev to next records over at most
// maxStreams streams with the given number of concurrent writers, and in
// trim mode trims every stream to trimPoint afterwards. It returns the
// live record count.
func (f *filler) fillStep(ctx context.Context, step, prev, next, writers int, trim float64) (int64, error) {
	add := distribute(prev, next, f.maxStreams)
	for len(f.streams) < len(add) {
		f.streams = append(f.streams, nil)
	}
	f.records.Store(0)
	stop := f.progress(ctx, next-prev)
	defer stop()
	err := parallel(ctx, len(add), writers, func(ctx context.Context, w *writer, i int) error {
		if add[i] == 0 {
			return nil
		}
		return w.fillStream(ctx, i, uint64(add[i]), uint64(step))
	}, f)
	if err != nil {
		return 0, err
	}
	if trim > 0 {
		err = parallel(ctx, len(f.streams), writers, func(ctx context.Context, w *writer, i int) error {
			return w.trim(ctx, f.streams[i], trimPoint(f.streams[i].end, trim))
		}, f)
		if err != nil {
			return 0, err
		}
	}
	var live int64
	for _, s := range f.streams {
		live += int64(liveRecords(s.segs, s.trim))
	}
	return live, nil
}

// progress prints the records written every 5 s until stopped.
func (f *filler) progress(ctx context.Context, total int) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	start := clock.Real.Now()
	go func() {
		defer close(done)
		const every = 5 * time.Second
		t := clock.Real.NewTimer(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C():
				t.Reset(every)
				n := f.records.Load()
				fmt.Fprintf(f.log, "    fill: %d of %d records (%.0f/s)\n", n, total, float64(n)/clock.Since(clock.Real, start).Seconds())
			}
		}
	}()
	return func() { cancel(); <-done }
}

// parallel runs fn(0..n-1) on `writers` goroutines, each with its own
// writer, and returns the first error (the rest are cancelled).
func parallel(ctx context.Context, n, writers int, fn func(ctx context.Context, w *writer, i int) error, f *filler) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(n, writers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := &writer{f: f}
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(ctx, w, i); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}

// fillStream adds n records to stream i (creating it first if new): one
// commit-append of n offsets with its generation-0 record, then a
// generation of the other n-1 records, published in parts.
func (w *writer) fillStream(ctx context.Context, i int, n, step uint64) error {
	f := w.f
	if f.streams[i] == nil {
		s, err := w.create(ctx, fmt.Sprintf("%s-%07d", f.prefix, i))
		if err != nil {
			return err
		}
		f.streams[i] = s
	}
	s := f.streams[i]
	seg := segment{start: s.end, n: n}
	obj, br, err := w.place(ctx)
	if err != nil {
		return err
	}
	_, err = call(ctx, f.c, f.c.Metad.CommitAppend, &metadpb.CommitAppendRequest{
		StreamId: s.id, WriterEpoch: s.epoch, ExpectedStart: seg.start, End: seg.end(),
		Object: obj, Bytes: br, IndexGen0: true, RequestId: client.NewRequestID(), DataCrc32C: recordData.Ptr(),
	})
	if err != nil {
		return fmt.Errorf("commit-append to stream %d: %w", s.id, err)
	}
	s.end = seg.end()
	s.segs = append(s.segs, seg)
	f.records.Add(1)
	if n > 1 {
		if err := w.publish(ctx, s, seg); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) create(ctx context.Context, name string) (*stream, error) {
	c := w.f.c
	cr, err := call(ctx, c, c.Metad.CreateStream, &metadpb.CreateStreamRequest{Name: name, RequestId: client.NewRequestID()})
	if err != nil {
		return nil, fmt.Errorf("create stream %s: %w", name, err)
	}
	op, err := call(ctx, c, c.Metad.OpenForWrite, &metadpb.OpenForWriteRequest{StreamId: cr.StreamId, RequestId: client.NewRequestID()})
	if err != nil {
		return nil, fmt.Errorf("open stream %s: %w", name, err)
	}
	return &stream{id: cr.StreamId, epoch: op.WriterEpoch}, nil
}

// place returns the object and byte range of the next record this writer
// writes, registering a new object when the current one is full.
func (w *writer) place(ctx context.Context) (*metadpb.ObjectRef, *metadpb.ByteRange, error) {
	if w.obj == nil || w.used == recordsPerObject {
		n := w.f.objects.Add(1)
		key := fmt.Sprintf("streams/%s/segments/%012d.log", w.f.prefix, n)
		sum := sha256.Sum256([]byte(key))
		obj := &metadpb.ObjectRef{Key: key, Identity: "sha256:" + hex.EncodeToString(sum[:])}
		c := w.f.c
		_, err := call(ctx, c, c.Metad.RegisterObject, &metadpb.RegisterObjectRequest{Object: obj, Size: objectBytes, RequestId: client.NewRequestID()})
		if err != nil {
			return nil, nil, fmt.Errorf("register object %s: %w", key, err)
		}
		w.obj, w.used = obj, 0
	}
	br := &metadpb.ByteRange{Offset: uint64(w.used) * recordBytes, Length: recordBytes}
	w.used++
	return w.obj, br, nil
}

// publish writes the next generation of s: one record per offset of seg
// but its first (which the generation-0 record covers), in parts of at
// most client.MaxRecordsPerPart.
func (w *writer) publish(ctx context.Context, s *stream, seg segment) error {
	c := w.f.c
	gen := s.gens + 1
	cover := &metadpb.Range{Start: seg.start, End: seg.end()}
	for from := seg.start + 1; from < seg.end(); {
		to := min(from+client.MaxRecordsPerPart, seg.end())
		req := &metadpb.PublishGenerationRequest{StreamId: s.id, View: metadpb.View_COMMITTED, Generation: gen,
			WriterEpoch: s.epoch, Coverage: cover, Complete: to == seg.end(), RequestId: client.NewRequestID()}
		for o := from; o < to; o++ {
			obj, br, err := w.place(ctx)
			if err != nil {
				return err
			}
			rec := &metadpb.IndexRecord{Range: &metadpb.Range{Start: o, End: o + 1}, Object: obj, Bytes: br, DataCrc32C: recordData.Ptr()}
			rec.Checksum = client.RecordChecksum(s.id, req.View, gen, rec)
			req.Records = append(req.Records, rec)
		}
		if _, err := call(ctx, c, c.Metad.PublishGeneration, req); err != nil {
			return fmt.Errorf("publish generation %d of stream %d: %w", gen, s.id, err)
		}
		w.f.records.Add(int64(to - from))
		from = to
	}
	s.gens = gen
	return nil
}

// trim moves s's trim point to at, if that is ahead of it.
func (w *writer) trim(ctx context.Context, s *stream, at uint64) error {
	if s == nil || at <= s.trim {
		return nil
	}
	c := w.f.c
	if _, err := call(ctx, c, c.Metad.Trim, &metadpb.TrimRequest{StreamId: s.id, Offset: at, RequestId: client.NewRequestID()}); err != nil {
		return fmt.Errorf("trim stream %d at %d: %w", s.id, at, err)
	}
	s.trim = at
	return nil
}

// callTimeout bounds each call of the tool; a publish of 4096 records
// under a snapshot being written can take seconds.
const callTimeout = 60 * time.Second

// call is client.Call under callTimeout.
func call[Req, Resp any](ctx context.Context, c *client.Client, rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req) (Resp, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return client.Call(ctx, c, rpc, req)
}
