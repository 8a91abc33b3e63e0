package resolver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/metad/metad/fsm"
)

// hangingRelease is a Pinner whose Release never completes on its own,
// like a proposal to a Raft that has lost its quorum: it returns only
// once its context ends. It records the deadline each release was given.
type hangingRelease struct {
	*fakePinner
	deadlines []time.Time // zero: the release had no deadline
	ended     []bool      // the release's context had ended when it returned
}

func (h *hangingRelease) Release(ctx context.Context, p Pin) error {
	dl, _ := ctx.Deadline()
	h.deadlines = append(h.deadlines, dl)
	<-ctx.Done()
	h.ended = append(h.ended, ctx.Err() != nil)
	return ctx.Err()
}

// supersededPin makes the first pin of a resolve of offset 4 stale before
// its recheck (a newer generation is published), so the resolve must
// release it.
func supersededPin(t *testing.T) (*rig, *hangingRelease) {
	w := twoGenerations(t)
	r := newRig(w)
	r.pinner.onPin = func(n int) {
		if n == 1 {
			w.publish(fsm.Committed, 2, fsm.Range{Start: 0, End: 10}, true, rec{rng: fsm.Range{Start: 0, End: 10}, key: "g2"})
		}
	}
	h := &hangingRelease{fakePinner: r.pinner}
	return r, h
}

func (r *rig) resolverWith(t *testing.T, cfg Config, p Pinner) *Resolver {
	t.Helper()
	res, err := New(cfg, Deps{Reader: r.reader, Pinner: p, Repairer: r.repairer, Reporter: r.reporter, Clock: r.clock})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestResolveDeadlineHoldsWhileAReleaseHangs: a resolve given 100ms whose
// superseded pin's release hangs returns by its deadline. The release is
// handed a context that ends no later than the caller's (not its own
// ReleaseTimeout of 1s counted from whenever it started), and the resolve
// returns, retryably and naming the deadline, once that context ends.
func TestResolveDeadlineHoldsWhileAReleaseHangs(t *testing.T) {
	r, h := supersededPin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	deadline, _ := ctx.Deadline()
	start := time.Now()
	_, err := r.resolverWith(t, DefaultConfig(), h).Resolve(ctx, Request{Stream: r.w.sid, View: fsm.Committed, Offset: 4})
	t.Logf("resolve with a 100ms deadline and a hanging release returned after %s", time.Since(start))
	if len(h.deadlines) != 1 {
		t.Fatalf("%d releases, want the superseded pin's one", len(h.deadlines))
	}
	if dl := h.deadlines[0]; dl.IsZero() || dl.After(deadline) {
		t.Fatalf("release deadline %v, want one no later than the caller's %v", dl, deadline)
	}
	if !h.ended[0] {
		t.Fatal("release returned before its context ended (the fake must hang)")
	}
	var ue *UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, context.DeadlineExceeded) || !ue.Deadline.Equal(deadline) {
		t.Fatalf("got %v, want a retryable failure at the caller's deadline %v", err, deadline)
	}
	if !hasRefusal(ue.Tried, ReasonRecheckChanged, 1) {
		t.Fatalf("tried %v lacks the superseded candidate", ue.Tried)
	}
}

// TestReleaseKeepsItsOwnBound: with time to spare, a release is still
// bounded by ReleaseTimeout, not by the caller's whole deadline; and once
// the caller's context has ended, nothing is released at all (the pin
// expires by itself).
func TestReleaseKeepsItsOwnBound(t *testing.T) {
	r, h := supersededPin(t)
	cfg := DefaultConfig()
	cfg.ReleaseTimeout = 10 * time.Millisecond // the fake release waits it out
	res := r.resolverWith(t, cfg, h)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	deadline, _ := ctx.Deadline()
	before := time.Now()
	res.release(ctx, Pin{ID: 1})
	if len(h.deadlines) != 1 {
		t.Fatalf("%d releases, want 1", len(h.deadlines))
	}
	if dl := h.deadlines[0]; !dl.Before(deadline) || dl.After(time.Now().Add(cfg.ReleaseTimeout)) || dl.Before(before) {
		t.Fatalf("release deadline %v, want ReleaseTimeout (%s) from the release, well before the caller's %v",
			dl, cfg.ReleaseTimeout, deadline)
	}

	cancel()
	res.release(ctx, Pin{ID: 2})
	if len(h.deadlines) != 1 {
		t.Fatalf("a release was attempted after the caller's context ended: %d releases", len(h.deadlines))
	}
}
