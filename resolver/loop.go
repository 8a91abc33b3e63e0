package resolver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/metad/metad/fsm"
)

// call is the state of one Resolve call.
type call struct {
	req      Request // Exclude grows as candidates fail
	deadline time.Time
	attempts int
	backoff  time.Duration
	tried    []Refusal
	seen     map[Refusal]bool
	// repaired is set once the call has asked for a repair: one repair per
	// call, so a record repair refuses (say, evidence whose object was
	// reported unusable) costs one round trip to the leader, not one per
	// attempt. The caller retries the whole resolve later.
	repaired bool
}

func (c *call) note(rs ...Refusal) {
	for _, r := range rs {
		if !c.seen[r] {
			c.seen[r] = true
			c.tried = append(c.tried, r)
		}
	}
}

func (c *call) exclude(id CandidateID, reason Reason, detail string) {
	c.req.Exclude = append(c.req.Exclude, id)
	c.note(Refusal{Candidate: id, Reason: reason, Detail: detail})
}

func (c *call) unavailable(cause error) error {
	return &UnavailableError{Deadline: c.deadline, Attempts: c.attempts, Tried: c.tried, Cause: cause}
}

// step is what one attempt decided.
type step int

const (
	stepReplan step = iota // plan again now
	stepRetry              // plan again after a backoff
	stepDone               // the call has its answer
)

// Resolve turns (stream, view, offset) into one pinned, rechecked target,
// a boundary outcome, or a retryable *UnavailableError carrying the
// original deadline and every refused candidate. It never falls back to
// another view, and it never reports EOF or a trim because a candidate
// failed: those come only from the stream's committed end and trim point.
func (r *Resolver) Resolve(ctx context.Context, req Request) (Result, error) {
	c := &call{req: req, backoff: r.cfg.RetryBackoff, seen: make(map[Refusal]bool)}
	c.req.Exclude = append([]CandidateID(nil), req.Exclude...)
	c.deadline, _ = ctx.Deadline()
	for {
		if err := ctx.Err(); err != nil {
			return Result{}, c.unavailable(err)
		}
		if c.attempts == r.cfg.MaxAttempts {
			return Result{}, c.unavailable(errAttempts)
		}
		c.attempts++
		res, next, err := r.attempt(ctx, c)
		switch {
		case err != nil:
			return Result{}, err
		case next == stepDone:
			res.Attempts, res.Tried = c.attempts, c.tried
			return res, nil
		case next == stepRetry:
			if err := r.sleep(ctx, c); err != nil {
				return Result{}, c.unavailable(err)
			}
		}
	}
}

// attempt is one pass of steps 1–8: plan, then act on the plan.
func (r *Resolver) attempt(ctx context.Context, c *call) (Result, step, error) {
	if cand, ok := r.cached(c); ok {
		res, next, err := r.tryCandidates(ctx, c, Plan{Outcome: Candidates, Candidates: []Candidate{cand}, cached: true})
		if next == stepDone {
			return res, next, err
		}
		r.deps.Cache.Invalidate(cand.ID())
	}
	plan, err := r.plan(ctx, c.req)
	if err != nil {
		c.note(Refusal{Reason: ReasonReadFailed, Detail: err.Error()})
		return Result{}, stepRetry, nil
	}
	c.note(plan.Refused...)
	s := plan.Stream
	switch plan.Outcome {
	case NotFound, EOF, Trimmed:
		return Result{Outcome: plan.Outcome, Trim: s.Trim, CommittedEnd: s.CommittedEnd, ReadIndex: plan.ReadIndex}, stepDone, nil
	case ViewEnd:
		return Result{Outcome: ViewEnd, Trim: s.Trim, CommittedEnd: s.CommittedEnd, ViewEnd: plan.ViewEnd, ReadIndex: plan.ReadIndex}, stepDone, nil
	case NoCandidate:
		return Result{}, stepDone, c.unavailable(errNoCandidate)
	case NeedsRepair:
		return r.repair(ctx, c)
	case Candidates:
		if plan.RepairHint {
			r.deps.Repairer.Hint(c.req.Stream, c.req.Offset)
		}
		return r.tryCandidates(ctx, c, plan)
	}
	panic(fmt.Sprintf("resolver: plan outcome %v", plan.Outcome))
}

// repair is step 8: ask once per call for the missing generation-0 record,
// then plan again. A refused repair, or a second need for one within the
// same call, ends the call with a retryable error carrying why: retrying a
// refusal at once would only ask the leader the same question again.
func (r *Resolver) repair(ctx context.Context, c *call) (Result, step, error) {
	if c.repaired {
		return Result{}, stepDone, c.unavailable(errRepairBound)
	}
	c.repaired = true
	if err := r.deps.Repairer.Repair(ctx, c.req.Stream, c.req.Offset); err != nil {
		c.note(Refusal{Reason: ReasonRepairFailed, Detail: err.Error()})
		return Result{}, stepDone, c.unavailable(errRepairRefused)
	}
	return Result{}, stepReplan, nil
}

// cached returns a cached candidate for the call's first attempt at a
// COMMITTED offset, resolved to start at the offset.
func (r *Resolver) cached(c *call) (Candidate, bool) {
	if r.deps.Cache == nil || c.attempts != 1 || c.req.View != fsm.Committed || len(c.req.Exclude) > 0 {
		return Candidate{}, false
	}
	cand, ok := r.deps.Cache.Get(c.req.Stream, c.req.Offset)
	if !ok || !cand.Record.Range.Contains(c.req.Offset) || cand.Record.Key.View != fsm.Committed {
		return Candidate{}, false
	}
	cand.Resolved = fsm.Range{Start: c.req.Offset, End: cand.Record.Range.End}
	return cand, true
}

// plan is steps 1–3 from one linearizable read. If a shared pin on the
// best candidate's object is already committed in the very state planned
// from, the plan records it: at that read's linearization point the
// candidate was then admissible, newest, and pinned under its identity —
// all of G7 at one instant — so no new pin and no recheck are needed.
func (r *Resolver) plan(ctx context.Context, req Request) (Plan, error) {
	var p Plan
	err := r.deps.Reader.Read(ctx, func(st State) {
		p = PlanRequest(st, req)
		if p.Outcome != Candidates || r.deps.UnsafeSkipRecheck {
			return
		}
		obj := p.Candidates[0].Record.Object
		if pin, ok := r.deps.Pinner.Held(obj, r.cfg.PinTTL); ok {
			if info, ok := st.Pin(pin.ID); ok && info.Object == obj {
				p.held = &pin
			}
		}
	})
	return p, err
}

// tryCandidates walks the plan's candidates in order (steps 4–7): pin,
// recheck, verify; a candidate that cannot be pinned or verified is
// excluded and the next older one of the same view is tried.
func (r *Resolver) tryCandidates(ctx context.Context, c *call, plan Plan) (Result, step, error) {
	for i, cand := range plan.Candidates {
		if i == 0 && plan.held != nil {
			if !r.verify(ctx, c, cand) {
				r.forget(cand)
				continue
			}
			r.remember(cand)
			return targetResult(cand, *plan.held, plan), stepDone, nil
		}
		pin, err := r.deps.Pinner.Pin(ctx, cand.Record.Object, r.cfg.PinTTL)
		if errors.Is(err, ErrPinRefused) {
			r.forget(cand)
			c.exclude(cand.ID(), ReasonPinRefused, err.Error())
			continue
		}
		if err != nil {
			c.note(Refusal{Candidate: cand.ID(), Reason: ReasonPinFailed, Detail: err.Error()})
			return Result{}, stepRetry, nil
		}
		current, next := plan, stepDone
		if !r.deps.UnsafeSkipRecheck {
			current, next = r.recheck(ctx, c, cand, pin)
		}
		if next != stepDone {
			return Result{}, next, nil
		}
		if plan.cached {
			// No plan read preceded the pin: the recheck's refusals are
			// this resolve's, so a hit explains itself like a miss does.
			c.note(current.Refused...)
		}
		if !r.verify(ctx, c, cand) {
			r.forget(cand)
			r.release(ctx, pin)
			continue
		}
		r.remember(cand)
		return targetResult(cand, pin, current), stepDone, nil
	}
	// Every candidate of this plan was excluded; plan again without them.
	return Result{}, stepReplan, nil
}

// recheck is step 5: plan again, linearizably, after the pin, and accept
// only if the same candidate, at the same version, still comes first and
// resolves to the same range. Anything else (a newer generation, a trim, a
// retired or repaired record, a replaced object) releases the pin and
// resolves again under the remaining deadline (step 6).
//
// It returns the recheck's plan, and stepDone if the candidate stands: the
// recheck is the resolve's linearization point.
func (r *Resolver) recheck(ctx context.Context, c *call, cand Candidate, pin Pin) (Plan, step) {
	again, err := r.plan(ctx, c.req)
	if err != nil {
		r.release(ctx, pin)
		c.note(Refusal{Candidate: cand.ID(), Reason: ReasonReadFailed, Detail: "recheck: " + err.Error()})
		return again, stepRetry
	}
	if again.Outcome == Candidates && again.Candidates[0].ID() == cand.ID() && again.Candidates[0].Resolved == cand.Resolved {
		return again, stepDone
	}
	r.release(ctx, pin)
	c.note(Refusal{Candidate: cand.ID(), Reason: ReasonRecheckChanged, Detail: describeChange(again, cand)})
	return again, stepReplan
}

func describeChange(again Plan, cand Candidate) string {
	if again.Outcome != Candidates {
		return "recheck planned " + again.Outcome.String()
	}
	first := again.Candidates[0]
	if first.Record.Key == cand.Record.Key && first.Record.Version != cand.Record.Version {
		return fmt.Sprintf("record version changed to %d", first.Record.Version)
	}
	return fmt.Sprintf("best candidate is now %v", first.ID())
}

// verify checks the physical identity when a Verifier is configured. A
// mismatch excludes the candidate and reports it, so it is quarantined for
// everyone; a store that cannot answer excludes it for this call only.
func (r *Resolver) verify(ctx context.Context, c *call, cand Candidate) bool {
	if r.deps.Verifier == nil {
		return true
	}
	err := r.deps.Verifier.Verify(ctx, cand.Record)
	switch {
	case err == nil:
		return true
	case errors.Is(err, ErrPhysicalMismatch):
		c.exclude(cand.ID(), ReasonPhysicalMismatch, err.Error())
		kind := fsm.FailureIdentityMismatch
		if errors.Is(err, ErrPhysicalCorrupt) {
			kind = fsm.FailureCorrupt
		}
		if r.deps.Reporter != nil {
			// Best effort: the exclusion already protects this call.
			_ = r.deps.Reporter.ReportFailure(ctx, cand.ID(), kind, err.Error())
		}
	default:
		c.exclude(cand.ID(), ReasonPhysicalUnavailable, err.Error())
	}
	return false
}

// release gives back a pin this call will not return (step 6). It is best
// effort — a pin not released simply expires, and GC honours it until then
// (G9) — so it gets no more time than ReleaseTimeout and no more than what
// is left of the caller's deadline: a release stalled on a slow or
// leaderless Raft must never keep the resolve past its deadline. Once the
// caller's context has ended nothing is proposed at all.
func (r *Resolver) release(ctx context.Context, p Pin) {
	if ctx.Err() != nil {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, r.cfg.ReleaseTimeout)
	defer cancel()
	_ = r.deps.Pinner.Release(rctx, p)
}

func (r *Resolver) sleep(ctx context.Context, c *call) error {
	d := c.backoff
	c.backoff = min(2*c.backoff, r.cfg.MaxRetryBackoff)
	if !c.deadline.IsZero() {
		if left := c.deadline.Sub(r.deps.Clock.Now()); left < d {
			d = max(left, 0)
		}
	}
	t := r.deps.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}

func targetResult(c Candidate, pin Pin, checked Plan) Result {
	rec := c.Record
	s := checked.Stream
	return Result{
		Outcome: TargetFound, Trim: s.Trim, CommittedEnd: s.CommittedEnd, ReadIndex: checked.ReadIndex,
		Target: Target{
			Key: rec.Key, Version: rec.Version, Checksum: rec.Checksum, RecordRange: rec.Range,
			Resolved: c.Resolved, Object: rec.Object, Bytes: rec.Bytes, Data: rec.Data, Pin: pin,
		},
	}
}

func (r *Resolver) forget(cand Candidate) {
	if r.deps.Cache != nil {
		r.deps.Cache.Invalidate(cand.ID())
	}
}

func (r *Resolver) remember(cand Candidate) {
	if r.deps.Cache != nil && cand.Record.Key.View == fsm.Committed {
		r.deps.Cache.Put(cand)
	}
}
