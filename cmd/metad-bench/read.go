package main

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/bench/load"
	"github.com/metad/metad/checksum"
)

// The read workloads measure a broker's fetch against the object store
// (issue 11): `read` is the whole path — resolve the offset to a pinned
// target, then read the target's bytes by the identity the resolve
// returned (for S3, a ranged GET by VersionId with If-Match) — and `get`
// is the bare ranged read of the same bytes with no resolve, the floor a
// broker that kept its own index would pay. Both load the same streams the
// same way and pick offsets the same way, so run back to back (as
// bench/compare.sh does) their difference is what metad adds to a read.

// prepareReads loads --streams streams with --appends appends whose
// bytes are written to the store, and returns the read or get operation.
func (e *benchEnv) prepareReads(ctx context.Context, rep benchReport) (load.Op, benchReport, error) {
	b := e.opts
	e.say("loading %d streams with %d appends each", b.streams, b.appends)
	n, err := e.loadReads(ctx)
	if err != nil {
		return nil, rep, err
	}
	rep.Streams, rep.MessageBytes, rep.ReadSize = b.streams, n, b.readSize
	e.buffers = make([][]byte, b.concurrency)
	for w := range e.buffers {
		e.buffers[w] = make([]byte, b.readSize)
	}
	switch {
	case b.workload == "get":
		return e.getOnce, rep, nil
	case b.clientRead:
		return e.clientReadOnce, rep, nil
	}
	return e.readOnce, rep, nil
}

// randomOffset picks a loaded stream and one of its committed offsets.
func (e *benchEnv) randomOffset() (benchStream, uint64) {
	s := e.reads[rand.IntN(len(e.reads))]
	return s, rand.Uint64N(s.end)
}

// readOnce is a broker's read: resolve, then read the target's bytes by
// its identity.
func (e *benchEnv) readOnce(ctx context.Context, w int) (string, error) {
	s, off := e.randomOffset()
	resp, err := e.resolve(ctx, s, off)
	if err != nil {
		return "read", err
	}
	t := resp.Target
	p := e.buffers[w][:min(uint64(len(e.buffers[w])), t.Bytes.GetLength())]
	if err := e.readAt(ctx, t.Object.GetKey(), t.Object.GetIdentity(), p, int64(t.Bytes.GetOffset())); err != nil {
		return "read", err
	}
	// A broker checks the data checksum of what it read; it can only when
	// --read-size covers the whole byte range the checksum was taken over.
	if uint64(len(p)) == t.Bytes.GetLength() {
		return "read", checksum.FromPtr(t.DataCrc32C).Check(p)
	}
	return "read", nil
}

// clientReadOnce is a broker's read as a broker makes it: one client.Read
// of a random committed offset, under the per-call --timeout. It counts
// the reads that were checked against a data checksum and those that were
// not (ReadResult.Unchecked), warm-up included.
func (e *benchEnv) clientReadOnce(ctx context.Context, _ int) (string, error) {
	s, off := e.randomOffset()
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	res, err := e.c.Read(ctx, s.id, metadpb.View_COMMITTED, off)
	switch {
	case err != nil:
		return "client-read", err
	case res.Outcome != metadpb.Outcome_TARGET:
		return "client-read", outcomeError{res.Outcome}
	case res.Unchecked:
		e.unchecked.Add(1)
	default:
		e.checked.Add(1)
	}
	return "client-read", nil
}

// getOnce reads the same bytes readOnce would, from the object the
// offset's append wrote, without asking metad.
func (e *benchEnv) getOnce(ctx context.Context, w int) (string, error) {
	s, off := e.randomOffset()
	obj := s.objects[off/e.opts.offsets]
	return "get", e.readAt(ctx, obj.Key, obj.Identity, e.buffers[w], 0)
}

// readAt reads len(p) bytes at off under the per-call --timeout; a short
// read is a failure.
func (e *benchEnv) readAt(ctx context.Context, key, identity string, p []byte, off int64) error {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	n, err := e.store.ReadAt(ctx, key, identity, p, off)
	if err == nil && n != len(p) {
		err = fmt.Errorf("read %d of %d bytes of %s", n, len(p), key)
	}
	return err
}
