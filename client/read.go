package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/checksum"
	"github.com/metad/metad/objectstore"
)

// ReadResult is what Read returns: an outcome, and for a target, its bytes.
type ReadResult struct {
	Outcome metadpb.Outcome
	Target  *metadpb.Target
	// Data is the target's byte range, read under the target's identity
	// and checked against the target's data checksum.
	Data []byte
	// Unchecked says Data was not checked against a data checksum: the
	// target's record predates data checksums and carries none.
	Unchecked    bool
	Trim         uint64
	CommittedEnd uint64
	ViewEnd      uint64
	// Fallbacks lists candidates that failed on the way to this answer.
	Fallbacks []CandidateFailure
}

// CandidateFailure is one candidate a Read could not use, and why.
type CandidateFailure struct {
	Candidate *metadpb.CandidateRef
	Kind      metadpb.FailureKind
	Err       error
}

// ReadError is Read's retryable failure: no candidate of the requested view
// could be read within the deadline. It is never an EOF or a trim.
type ReadError struct {
	Deadline time.Time
	Tried    []CandidateFailure
	// Cause is the last failure: a resolve error (*Error with its
	// diagnostic) or the context's.
	Cause error
}

func (e *ReadError) Error() string {
	return fmt.Sprintf("metad: read failed after %d candidate failures: %v", len(e.Tried), e.Cause)
}

func (e *ReadError) Unwrap() error { return e.Cause }

// Retryable is always true: the data may be readable later.
func (e *ReadError) Retryable() bool { return true }

// Resolve asks the cluster for one pinned target (or a boundary outcome).
func (c *Client) Resolve(ctx context.Context, stream uint64, view metadpb.View, offset uint64, exclude []*metadpb.CandidateRef) (*metadpb.ResolveResponse, error) {
	return Call(ctx, c, c.Metad.Resolve, &metadpb.ResolveRequest{
		StreamId: stream, View: view, Offset: offset, Exclude: exclude, Holder: c.cfg.Holder,
	})
}

// Read resolves (stream, view, offset), reads the target's bytes under its
// identity, and on a failure reports the candidate, excludes it, and
// resolves again — always in the same view. A replaced object (same key,
// new bytes) is detected by its identity, and bytes that fail the target's
// data checksum (a slice rewritten or rotted in place, which a ranged read
// cannot see through the identity) are reported CORRUPT; neither is ever
// returned. A target without a data checksum (a record from before them)
// is read unchecked, said in ReadResult.Unchecked and counted in
// metad_client_reads_unchecked_total. A store that does not answer
// (objectstore.ErrUnavailable) excludes the candidate for this read only,
// unreported: the bytes may be fine.
func (c *Client) Read(ctx context.Context, stream uint64, view metadpb.View, offset uint64) (*ReadResult, error) {
	if c.cfg.Objects == nil {
		return nil, errors.New("client: Read needs Config.Objects")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	deadline, _ := ctx.Deadline()
	var exclude []*metadpb.CandidateRef
	var tried []CandidateFailure
	for {
		sent := wall.Now()
		resp, err := c.Resolve(ctx, stream, view, offset, exclude)
		if err != nil {
			return nil, &ReadError{Deadline: deadline, Tried: tried, Cause: err}
		}
		res := &ReadResult{Outcome: resp.Outcome, Target: resp.Target, Trim: resp.Trim,
			CommittedEnd: resp.CommittedEnd, ViewEnd: resp.ViewEnd, Fallbacks: tried}
		if resp.Outcome != metadpb.Outcome_TARGET {
			return res, nil
		}
		data, kind, err := c.readTarget(ctx, resp.Target, sent)
		if !resp.Target.PinShared {
			c.release(resp.Target.PinId)
		}
		if err == nil {
			res.Data, res.Unchecked = data, resp.Target.DataCrc32C == nil
			if res.Unchecked {
				c.metrics.unchecked.Inc()
			}
			return res, nil
		}
		if kind == metadpb.FailureKind_CORRUPT {
			c.metrics.corrupt.Inc()
		}
		ref := &metadpb.CandidateRef{Key: resp.Target.Key, Version: resp.Target.Version}
		tried = append(tried, CandidateFailure{Candidate: ref, Kind: kind, Err: err})
		if kind != metadpb.FailureKind_FAILURE_KIND_UNSPECIFIED {
			c.report(ref, kind, err)
		}
		exclude = append(exclude, ref)
		if ctx.Err() != nil {
			return nil, &ReadError{Deadline: deadline, Tried: tried, Cause: ctx.Err()}
		}
	}
}

// readTarget reads the target's bytes before its pin lapses, measured from
// when the resolve was sent on this client's own clock.
func (c *Client) readTarget(ctx context.Context, t *metadpb.Target, sent time.Time) ([]byte, metadpb.FailureKind, error) {
	ttl := 30 * time.Second
	if t.PinTtl != nil {
		ttl = t.PinTtl.AsDuration()
	}
	ctx, cancel := context.WithDeadline(ctx, sent.Add(ttl*9/10))
	defer cancel()
	data, err := objectstore.ReadRange(ctx, c.cfg.Objects, t.Object.GetKey(), t.Object.GetIdentity(),
		int64(t.Bytes.GetOffset()), int64(t.Bytes.GetLength()), checksum.FromPtr(t.DataCrc32C))
	switch {
	case err == nil:
		return data, 0, nil
	case errors.Is(err, objectstore.ErrIdentityMismatch):
		return nil, metadpb.FailureKind_IDENTITY_MISMATCH, err
	case errors.Is(err, objectstore.ErrNotFound):
		return nil, metadpb.FailureKind_OBJECT_MISSING, err
	case errors.Is(err, objectstore.ErrCorrupt):
		// The identity's digest failed on a whole read, the range failed
		// its data checksum, or the object ends inside the range.
		return nil, metadpb.FailureKind_CORRUPT, err
	case errors.Is(err, objectstore.ErrUnavailable):
		// The store, not the candidate, failed: no kind, no report.
		return nil, metadpb.FailureKind_FAILURE_KIND_UNSPECIFIED, err
	}
	return nil, metadpb.FailureKind_IO_ERROR, err
}

// release gives the pin back in the background; if that fails it expires.
func (c *Client) release(pinID uint64) {
	if pinID == 0 {
		return
	}
	c.background(func(ctx context.Context) {
		_, _ = c.Metad.ReleasePin(ctx, &metadpb.ReleasePinRequest{PinId: pinID})
	})
}

// report tells the cluster a candidate failed, in the background: the
// exclusion already protects this read; the report protects the next ones,
// so it is retried (under one request id) like any call.
func (c *Client) report(ref *metadpb.CandidateRef, kind metadpb.FailureKind, cause error) {
	c.background(func(ctx context.Context) {
		_, _ = Call(ctx, c, c.Metad.ReportCandidateFailure, &metadpb.ReportCandidateFailureRequest{
			Candidate: ref, Kind: kind, Detail: truncate(cause.Error(), 512), RequestId: NewRequestID(),
		})
	})
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
