package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math/rand/v2"
	"strconv"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/clock"
)

// CompactedError is a watch's resume point that no member still holds the
// history after (WATCH_COMPACTED): the events between it and the stream's
// current state are gone. The caller re-reads the stream (its state is
// here) and watches again from Version.
type CompactedError struct {
	Stream       uint64
	From         uint64 // the version the watch tried to resume after
	Version      uint64 // the stream's current version
	CommittedEnd uint64
	Trim         uint64
	Status       string // ACTIVE or SEALED
	Err          *Error
}

func (e *CompactedError) Error() string {
	return fmt.Sprintf("metad: watch of stream %d cannot resume after version %d (history no longer held); stream is at version %d, committed end %d, trim %d, %s",
		e.Stream, e.From, e.Version, e.CommittedEnd, e.Trim, e.Status)
}

func (e *CompactedError) Unwrap() error {
	if e.Err == nil {
		return nil // not a typed nil *Error
	}
	return e.Err
}

// Watch follows one stream's changes after version from (0: from now), in
// commit order, as an iterator:
//
//	for ev, err := range c.Watch(ctx, id, 0) {
//		if err != nil { ... } // the watch is over
//		...
//	}
//
// Changes come in Version order, none twice. One WATCH_STARTED event comes
// once, after the changes between from and the watch's linearizable start
// point: the stream's state there (its Version is the start point, not a
// change); with from = 0 it is the first event. A broken connection, a failed or
// restarted member, a leader change or a slow-consumer cut-off is
// survived: the watch resumes at another member (the round robin over
// Config.Addrs) after the last version it yielded, so no change is
// missed or repeated. It ends after WATCH_DELETED (no error), or with an
// error: the context's, a *CompactedError once every member was asked
// (errors.As), or a definite failure such as the stream not existing.
func (c *Client) Watch(ctx context.Context, streamID, from uint64) iter.Seq2[*metadpb.WatchEvent, error] {
	return func(yield func(*metadpb.WatchEvent, error) bool) {
		w := &watchLoop{c: c, stream: streamID, last: from, yield: yield}
		if err := w.run(ctx); err != nil {
			yield(nil, err)
		}
	}
}

type watchLoop struct {
	c       *Client
	stream  uint64
	last    uint64 // the version to resume after
	started bool   // WATCH_STARTED was yielded once
	yield   func(*metadpb.WatchEvent, error) bool
	stopped bool // the caller broke out of the loop
}

// run reconnects until the watch ends; nil means it ended without error
// (deleted, or the caller stopped).
func (w *watchLoop) run(ctx context.Context) error {
	// Watches are spread over every member, not routed to the leader: any
	// member serves them from its own state.
	metad := metadpb.NewMetadClient(w.c.conn)
	delay := 20 * time.Millisecond
	compacted := 0
	for {
		progressed, done, err := w.once(ctx, metad)
		if done || w.stopped {
			return nil
		}
		if ctx.Err() != nil {
			return ended(ctx, err)
		}
		if progressed {
			delay, compacted = 20*time.Millisecond, 0
		}
		var ce *CompactedError
		if errors.As(err, &ce) || unimplemented(err) {
			// A member restarted from a snapshot holds less history than
			// the others, and during a rolling upgrade a member may not
			// serve Watch yet: ask each member before giving up.
			if compacted++; compacted >= len(w.c.cfg.Addrs) {
				return err
			}
		} else if !watchRetryable(err) {
			return err
		}
		if e, ok := AsError(err); ok {
			delay = max(delay, e.RetryDelay)
		}
		select {
		case <-ctx.Done():
			return ended(ctx, err)
		case <-clock.After(wall, delay/2+rand.N(delay/2+1)):
		}
		delay = min(2*delay, w.c.cfg.MaxRetryDelay)
	}
}

// ended is the error of a watch whose context ended: the context's, and
// the failure it was retrying when it did, if any (so a watch that never
// reached a member says why).
func ended(ctx context.Context, last error) error {
	if last == nil || errors.Is(last, ctx.Err()) {
		return ctx.Err()
	}
	return fmt.Errorf("%w; last failure: %w", ctx.Err(), last)
}

// once runs one Watch RPC. progressed: it yielded at least one event;
// done: the stream was deleted or the caller stopped.
func (w *watchLoop) once(ctx context.Context, metad metadpb.MetadClient) (progressed, done bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := metad.Watch(ctx, &metadpb.WatchRequest{StreamId: w.stream, FromVersion: w.last})
	if err != nil {
		return false, false, w.classify(err)
	}
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return progressed, false, fromStatus(status.Error(codes.Unavailable, "watch stream ended"))
		}
		if err != nil {
			return progressed, false, w.classify(err)
		}
		if ev.Version <= w.last && ev.Kind != metadpb.WatchEventKind_WATCH_STARTED {
			continue // never yield a change twice
		}
		w.last = max(w.last, ev.Version)
		if ev.Kind == metadpb.WatchEventKind_WATCH_STARTED {
			if w.started {
				continue // a resume, not news
			}
			w.started = true
		}
		progressed = true
		if !w.yield(ev, nil) {
			w.stopped = true
			return true, true, nil
		}
		if ev.Kind == metadpb.WatchEventKind_WATCH_DELETED {
			return true, true, nil
		}
	}
}

// classify turns a Watch failure into *Error, or *CompactedError.
func (w *watchLoop) classify(err error) error {
	e := fromStatus(err)
	if Reason(e) != ReasonWatchCompacted {
		return e
	}
	meta := errorInfoMetadata(err)
	num := func(k string) uint64 { n, _ := strconv.ParseUint(meta[k], 10, 64); return n }
	ae, _ := AsError(e)
	return &CompactedError{
		Stream: w.stream, From: w.last, Version: num("version"), CommittedEnd: num("committed_end"),
		Trim: num("trim"), Status: meta["status"], Err: ae,
	}
}

// watchRetryable: everything but a definite refusal of the request itself
// is worth resuming elsewhere.
func watchRetryable(err error) bool {
	e, ok := AsError(err)
	if !ok {
		return false
	}
	switch e.Code {
	case codes.InvalidArgument, codes.NotFound, codes.FailedPrecondition, codes.Unimplemented,
		codes.PermissionDenied, codes.Unauthenticated, codes.OutOfRange:
		return false
	}
	return true
}

func unimplemented(err error) bool {
	e, ok := AsError(err)
	return ok && e.Code == codes.Unimplemented
}

func errorInfoMetadata(err error) map[string]string {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.Metadata
		}
	}
	return nil
}
