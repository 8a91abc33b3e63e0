package client

import (
	"slices"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/checksum"
)

// This file is the Writer's pure part: the buffer of Appends not yet
// flushed, and the layout of a flush as objects. No goroutines, clocks,
// locks or I/O: the Writer (writer.go) holds the lock and passes the time
// in, and the tests drive these directly.

// buffer holds the Appends waiting for a flush, per stream, in the order
// they were made, and counts their bytes.
//
// Invariant: queued equals the sum of the record bytes of every Pending in
// streams, and oldest is zero exactly when streams is empty.
// Invariant: queued + inflight <= the Writer's MaxBufferedBytes (enforced
// by the caller through room).
type buffer struct {
	streams map[uint64][]*Pending
	queued  int       // bytes in streams
	oldest  time.Time // when the oldest Pending in streams was added
	// inflight counts the bytes taken by the flush in flight: they still
	// take room until that flush has answered every one of them.
	inflight int
}

func newBuffer() buffer { return buffer{streams: map[uint64][]*Pending{}} }

// room reports whether size more bytes fit under limit.
func (b *buffer) room(size, limit int) bool { return b.queued+b.inflight+size <= limit }

// add queues p, made at now.
func (b *buffer) add(p *Pending, now time.Time) {
	if len(b.streams) == 0 {
		b.oldest = now
	}
	b.streams[p.stream] = append(b.streams[p.stream], p)
	b.queued += p.size
}

// due reports whether a flush should start at now: flushBytes are queued,
// the oldest Append is interval old, or the writer is closing.
func (b *buffer) due(now time.Time, flushBytes int, interval time.Duration, closing bool) bool {
	if len(b.streams) == 0 {
		return false
	}
	return closing || b.queued >= flushBytes || !now.Before(b.oldest.Add(interval))
}

// wake is when the oldest queued Append falls due by age (zero: nothing
// queued).
func (b *buffer) wake(interval time.Duration) time.Time {
	if len(b.streams) == 0 {
		return time.Time{}
	}
	return b.oldest.Add(interval)
}

// take removes every queued Append for a flush, as one batch per stream
// in stream id order; their bytes move to inflight.
func (b *buffer) take() []*streamBatch {
	ids := make([]uint64, 0, len(b.streams))
	for id := range b.streams {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]*streamBatch, len(ids))
	for i, id := range ids {
		out[i] = &streamBatch{stream: id, pending: b.streams[id]}
	}
	b.inflight += b.queued
	b.streams, b.queued, b.oldest = map[uint64][]*Pending{}, 0, time.Time{}
	return out
}

// drop removes the queued Appends of stream and returns them (to be
// failed: a stream's later Appends never commit past an earlier failed
// one).
func (b *buffer) drop(stream uint64) []*Pending {
	ps := b.streams[stream]
	delete(b.streams, stream)
	for _, p := range ps {
		b.queued -= p.size
	}
	if len(b.streams) == 0 {
		b.oldest = time.Time{}
	}
	return ps
}

// settle releases the room of answered in-flight bytes.
func (b *buffer) settle(size int) { b.inflight -= size }

// streamBatch is one stream's part of a flush: its Appends, in order, and
// where they go (the writer's epoch and known committed end).
type streamBatch struct {
	stream  uint64
	epoch   uint64
	start   uint64
	pending []*Pending
}

// records counts the batch's records: the offsets it takes.
func (s *streamBatch) records() uint64 {
	var n uint64
	for _, p := range s.pending {
		n += uint64(len(p.records))
	}
	return n
}

// size is the batch's bytes.
func (s *streamBatch) size() int {
	n := 0
	for _, p := range s.pending {
		n += p.size
	}
	return n
}

// objectPlan is one object of a flush: its bytes, and one append per
// stream naming its byte range.
//
// Invariant: appends[i] is parts[i]'s append; the parts' bytes lie one
// after another in data, in parts order, and each append's bytes and
// data checksum are exactly its part's records concatenated.
type objectPlan struct {
	data    []byte
	appends []*metadpb.ObjectAppend
	parts   []*streamBatch
}

// planObjects lays out batches (each with its epoch and start) as
// objects of at most maxStreams streams each, in order: offsets count
// records, so a stream's append ends at start plus its records.
func planObjects(batches []*streamBatch, maxStreams int) []*objectPlan {
	var out []*objectPlan
	for chunk := range slices.Chunk(batches, maxStreams) {
		plan := &objectPlan{parts: chunk}
		size := 0
		for _, b := range chunk {
			size += b.size()
		}
		plan.data = make([]byte, 0, size)
		for _, b := range chunk {
			off := len(plan.data)
			for _, p := range b.pending {
				for _, r := range p.records {
					plan.data = append(plan.data, r...)
				}
			}
			bytes := plan.data[off:]
			plan.appends = append(plan.appends, &metadpb.ObjectAppend{
				StreamId: b.stream, WriterEpoch: b.epoch, ExpectedStart: b.start, End: b.start + b.records(),
				Bytes:     &metadpb.ByteRange{Offset: uint64(off), Length: uint64(len(bytes))},
				IndexGen0: true, DataCrc32C: checksum.Of(bytes).Ptr(),
			})
		}
		out = append(out, plan)
	}
	return out
}

// without returns the plan less the parts at the given indexes (refused
// appends): the same object and byte ranges, fewer appends.
func (p *objectPlan) without(refused map[int]bool) *objectPlan {
	out := &objectPlan{data: p.data}
	for i := range p.parts {
		if !refused[i] {
			out.parts = append(out.parts, p.parts[i])
			out.appends = append(out.appends, p.appends[i])
		}
	}
	return out
}

// acks are the answers to a committed part's Appends: consecutive offset
// ranges from the part's start, one per Append, in order.
func (s *streamBatch) acks(version uint64, obj *metadpb.ObjectRef) []Appended {
	out := make([]Appended, len(s.pending))
	at := s.start
	for i, p := range s.pending {
		end := at + uint64(len(p.records))
		out[i] = Appended{StreamID: s.stream, Start: at, End: end, Version: version, Object: obj}
		at = end
	}
	return out
}
