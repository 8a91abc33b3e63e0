package resolver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/fsm"
)

func twoGenerations(t *testing.T) *world {
	w := newWorld(t)
	w.appendN(10, "g0", true)
	w.publish(fsm.Committed, 1, fsm.Range{Start: 0, End: 10}, true, rec{rng: fsm.Range{Start: 0, End: 10}, key: "g1"})
	return w
}

func mustTarget(t *testing.T, res Result, err error, gen uint64) Target {
	t.Helper()
	if err != nil {
		t.Fatalf("resolve failed: %v", err)
	}
	if res.Outcome != TargetFound {
		t.Fatalf("outcome %v, want a target", res.Outcome)
	}
	if res.Target.Key.Generation != gen {
		t.Fatalf("target generation %d, want %d (tried %v)", res.Target.Key.Generation, gen, res.Tried)
	}
	return res.Target
}

func hasRefusal(rs []Refusal, reason Reason, gen uint64) bool {
	for _, r := range rs {
		if r.Reason == reason && r.Candidate.Key.Generation == gen {
			return true
		}
	}
	return false
}

func TestResolveReturnsPinnedNewestTarget(t *testing.T) {
	w := twoGenerations(t)
	r := newRig(w)
	res, err := r.resolve(t, fsm.Committed, 4)
	tg := mustTarget(t, res, err, 1)
	if tg.Resolved != (fsm.Range{Start: 4, End: 10}) || tg.RecordRange != (fsm.Range{Start: 0, End: 10}) {
		t.Fatalf("ranges %v %v", tg.Resolved, tg.RecordRange)
	}
	p, ok := w.m.Pin(tg.Pin.ID)
	if !ok || p.Object != tg.Object || tg.Object != ref("g1") {
		t.Fatalf("pin %+v (found %v) does not name the target's identity %v", p, ok, tg.Object)
	}
	rec := w.record(fsm.Committed, 1, 4)
	if tg.Version != rec.Version || tg.Checksum != rec.Checksum || tg.Bytes != rec.Bytes {
		t.Fatalf("target %+v disagrees with record %+v", tg, rec)
	}
	if res.Attempts != 1 || len(r.pinner.released) != 0 {
		t.Fatalf("attempts %d, released %v", res.Attempts, r.pinner.released)
	}
	// The answer was decided by the recheck, after the pin was applied.
	if res.ReadIndex != w.m.AppliedIndex() || res.ReadIndex < p.Version {
		t.Fatalf("read index %d, want the recheck's %d (at or after the pin at %d)", res.ReadIndex, w.m.AppliedIndex(), p.Version)
	}
}

func TestResolveFallsBackWhenPinRefused(t *testing.T) {
	w := twoGenerations(t)
	r := newRig(w)
	r.pinner.refuse["g1"] = true
	res, err := r.resolve(t, fsm.Committed, 4)
	mustTarget(t, res, err, 0)
	if !hasRefusal(res.Tried, ReasonPinRefused, 1) {
		t.Fatalf("tried %v lacks generation 1's refusal", res.Tried)
	}
}

func TestResolveRechecksAfterPin(t *testing.T) {
	t.Run("newer generation published between pin and recheck", func(t *testing.T) {
		w := twoGenerations(t)
		r := newRig(w)
		r.pinner.onPin = func(n int) {
			if n == 1 {
				w.publish(fsm.Committed, 2, fsm.Range{Start: 0, End: 10}, true, rec{rng: fsm.Range{Start: 0, End: 10}, key: "g2"})
			}
		}
		res, err := r.resolve(t, fsm.Committed, 4)
		mustTarget(t, res, err, 2)
		if len(r.pinner.released) != 1 || !hasRefusal(res.Tried, ReasonRecheckChanged, 1) {
			t.Fatalf("released %v, tried %v", r.pinner.released, res.Tried)
		}
	})
	t.Run("record quarantined between pin and recheck", func(t *testing.T) {
		w := twoGenerations(t)
		r := newRig(w)
		r.pinner.onPin = func(n int) {
			if n == 1 {
				w.quarantine(w.record(fsm.Committed, 1, 0))
			}
		}
		res, err := r.resolve(t, fsm.Committed, 4)
		mustTarget(t, res, err, 0)
	})
	t.Run("trim passes the offset between pin and recheck", func(t *testing.T) {
		w := newWorld(t)
		w.appendN(10, "a", true)
		w.appendN(10, "b", true)
		r := newRig(w)
		r.pinner.onPin = func(int) { w.trim(15) }
		res, err := r.resolve(t, fsm.Committed, 12)
		if err != nil || res.Outcome != Trimmed || res.Trim != 15 {
			t.Fatalf("got %v %+v, want OFFSET_TRIMMED at 15 (never the stale target)", err, res)
		}
		if len(r.pinner.released) != 1 {
			t.Fatalf("the stale pin was not released: %v", r.pinner.released)
		}
	})
	t.Run("object replaced between pin and recheck", func(t *testing.T) {
		w := twoGenerations(t)
		r := newRig(w)
		r.pinner.onPin = func(n int) {
			if n == 1 {
				w.register(fsm.ObjectRef{Key: "g1", Identity: "sha256:other"})
			}
		}
		res, err := r.resolve(t, fsm.Committed, 4)
		tg := mustTarget(t, res, err, 0)
		if tg.Object.Key == "g1" {
			t.Fatal("served the replaced object")
		}
	})
}

func TestResolveRepairsMissingGeneration0(t *testing.T) {
	w := newWorld(t)
	w.appendN(10, "a", true)
	w.appendN(10, "b", false)
	r := newRig(w)
	res, err := r.resolve(t, fsm.Committed, 13)
	tg := mustTarget(t, res, err, 0)
	if r.repairer.calls != 1 || tg.RecordRange != (fsm.Range{Start: 10, End: 20}) || res.Attempts != 2 {
		t.Fatalf("repairs %d, target %v, attempts %d", r.repairer.calls, tg.RecordRange, res.Attempts)
	}
}

func TestResolveHintsRepairWithoutWaiting(t *testing.T) {
	w := newWorld(t)
	w.appendN(10, "a", false)
	w.publish(fsm.Committed, 1, fsm.Range{Start: 0, End: 10}, true, rec{rng: fsm.Range{Start: 0, End: 10}, key: "g1"})
	r := newRig(w)
	res, err := r.resolve(t, fsm.Committed, 3)
	mustTarget(t, res, err, 1)
	if r.repairer.hints != 1 || r.repairer.calls != 0 {
		t.Fatalf("hints %d calls %d", r.repairer.hints, r.repairer.calls)
	}
}

// TestResolveFailuresAreRetryable: whatever fails, the answer is a
// retryable UnavailableError listing what was tried — never EOF or TRIMMED.
func TestResolveFailuresAreRetryable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(r *rig)
		reason Reason
		gen    uint64
	}{
		{"every pin refused", func(r *rig) { r.pinner.refuse["g0"], r.pinner.refuse["g1"] = true, true }, ReasonPinRefused, 0},
		{"pins keep failing", func(r *rig) { r.pinner.transient = 1000 }, ReasonPinFailed, 1},
		{"no leader", func(r *rig) { r.reader.fails = 1000 }, ReasonReadFailed, 0},
		{"objects replaced in the store", func(r *rig) {
			mismatch := fmt.Errorf("%w: HEAD says other bytes", ErrPhysicalMismatch)
			r.verifier = fakeVerifier{bad: map[string]error{"g0": mismatch, "g1": mismatch}}
		}, ReasonPhysicalMismatch, 1},
		{"store unreachable", func(r *rig) {
			down := errors.New("connection refused")
			r.verifier = fakeVerifier{bad: map[string]error{"g0": down, "g1": down}}
		}, ReasonPhysicalUnavailable, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := twoGenerations(t)
			r := newRig(w)
			tc.setup(r)
			res, err := r.resolve(t, fsm.Committed, 4)
			var ue *UnavailableError
			if !errors.As(err, &ue) || !errors.Is(err, ErrUnavailable) {
				t.Fatalf("got %+v, %v; want a retryable UnavailableError", res, err)
			}
			if !hasRefusal(ue.Tried, tc.reason, tc.gen) {
				t.Fatalf("diagnostic %v lacks %s for generation %d", ue.Tried, tc.reason, tc.gen)
			}
			if ue.Attempts < 1 || ue.Attempts > DefaultConfig().MaxAttempts {
				t.Fatalf("attempts %d", ue.Attempts)
			}
		})
	}
}

func TestResolveUnavailableListsEveryCandidate(t *testing.T) {
	w := twoGenerations(t)
	r := newRig(w)
	r.pinner.refuse["g0"], r.pinner.refuse["g1"] = true, true
	_, err := r.resolve(t, fsm.Committed, 4)
	var ue *UnavailableError
	if !errors.As(err, &ue) {
		t.Fatalf("%v", err)
	}
	if !hasRefusal(ue.Tried, ReasonPinRefused, 1) || !hasRefusal(ue.Tried, ReasonPinRefused, 0) {
		t.Fatalf("diagnostic %v must name both candidates", ue.Tried)
	}
	if !errors.Is(err, errNoCandidate) {
		t.Fatalf("cause %v", ue.Cause)
	}
}

func TestResolveDeadlineCarriesOriginalDeadline(t *testing.T) {
	w := twoGenerations(t)
	r := newRig(w)
	r.pinner.transient = 1000
	deadline := time.Now().Add(-time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	_, err := r.resolver(t).Resolve(ctx, Request{Stream: w.sid, View: fsm.Committed, Offset: 4})
	var ue *UnavailableError
	if !errors.As(err, &ue) || !ue.Deadline.Equal(deadline) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v (deadline %v), want unavailable with the original deadline %v", err, ue, deadline)
	}
}

func TestResolveRepairFailureIsRetryable(t *testing.T) {
	w := newWorld(t)
	w.appendN(10, "a", false)
	r := newRig(w)
	r.repairer.err = errors.New("evidence missing for [0,10)")
	_, err := r.resolve(t, fsm.Committed, 3)
	var ue *UnavailableError
	if !errors.As(err, &ue) || !hasRefusal(ue.Tried, ReasonRepairFailed, 0) || !errors.Is(err, errRepairRefused) {
		t.Fatalf("got %v", err)
	}
	if r.repairer.calls != 1 {
		t.Fatalf("repair asked %d times in one call, want once", r.repairer.calls)
	}
}

// TestResolveRepairsAtMostOncePerCall: a repair that reports success but
// leaves the offset uncovered (here: it commits nothing) is not asked again
// within the same call; the call ends retryably.
func TestResolveRepairsAtMostOncePerCall(t *testing.T) {
	w := newWorld(t)
	w.appendN(10, "a", false)
	r := newRig(w)
	r.repairer.noop = true
	_, err := r.resolve(t, fsm.Committed, 3)
	var ue *UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, errRepairBound) || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("got %v", err)
	}
	if r.repairer.calls != 1 {
		t.Fatalf("repair asked %d times in one call, want once", r.repairer.calls)
	}
}

func TestResolvePhysicalMismatchIsReported(t *testing.T) {
	w := twoGenerations(t)
	r := newRig(w)
	r.verifier = fakeVerifier{bad: map[string]error{"g1": fmt.Errorf("%w: replaced", ErrPhysicalMismatch)}}
	res, err := r.resolve(t, fsm.Committed, 4)
	mustTarget(t, res, err, 0)
	if len(r.reporter.reports) != 1 || r.reporter.reports[0].Key.Generation != 1 || r.reporter.kinds[0] != fsm.FailureIdentityMismatch {
		t.Fatalf("reports %v %v", r.reporter.reports, r.reporter.kinds)
	}
	if len(r.pinner.released) != 1 {
		t.Fatalf("released %v", r.pinner.released)
	}
}

// TestResolveCorruptBytesAreReportedCorrupt: bytes that are there but fail
// their digest or data checksum (ErrPhysicalCorrupt) exclude the candidate
// like any physical mismatch, and are reported as CORRUPT.
func TestResolveCorruptBytesAreReportedCorrupt(t *testing.T) {
	w := twoGenerations(t)
	r := newRig(w)
	r.verifier = fakeVerifier{bad: map[string]error{"g1": fmt.Errorf("%w: data checksum mismatch", ErrPhysicalCorrupt)}}
	res, err := r.resolve(t, fsm.Committed, 4)
	mustTarget(t, res, err, 0)
	if len(r.reporter.reports) != 1 || r.reporter.reports[0].Key.Generation != 1 || r.reporter.kinds[0] != fsm.FailureCorrupt {
		t.Fatalf("reports %v %v, want generation 1 CORRUPT", r.reporter.reports, r.reporter.kinds)
	}
	if !errors.Is(ErrPhysicalCorrupt, ErrPhysicalMismatch) {
		t.Fatal("ErrPhysicalCorrupt must be an ErrPhysicalMismatch: callers classify by the wider one")
	}
}

func TestResolveHonoursCallerExclusions(t *testing.T) {
	w := twoGenerations(t)
	r := newRig(w)
	g1 := w.record(fsm.Committed, 1, 0)
	res, err := r.resolve(t, fsm.Committed, 4, CandidateID{Key: g1.Key, Version: g1.Version})
	mustTarget(t, res, err, 0)
	// A stale exclusion (an older version of the record) excludes nothing.
	res, err = r.resolve(t, fsm.Committed, 4, CandidateID{Key: g1.Key, Version: g1.Version - 1})
	mustTarget(t, res, err, 1)
}

func TestResolveBoundaryOutcomes(t *testing.T) {
	w := boundaryWorld(t)
	r := newRig(w)
	for offset, want := range map[uint64]Outcome{9: Trimmed, 10: TargetFound, 29: TargetFound, 30: EOF} {
		res, err := r.resolve(t, fsm.Committed, offset)
		if err != nil || res.Outcome != want || res.Trim != 10 || res.CommittedEnd != 30 {
			t.Errorf("offset %d: %v %+v, want %v", offset, err, res, want)
		}
	}
	res, err := r.resolver(t).Resolve(context.Background(), Request{Stream: 42, View: fsm.Committed})
	if err != nil || res.Outcome != NotFound {
		t.Fatalf("unknown stream: %v %v", res.Outcome, err)
	}
	res, err = r.resolve(t, fsm.TopicCompacted, 12)
	if err != nil || res.Outcome != ViewEnd || res.ViewEnd != 12 {
		t.Fatalf("compacted view with no generation: %v %+v", err, res)
	}
}

func TestConfigValidateListsEveryProblem(t *testing.T) {
	err := Config{PinTTL: time.Hour, MaxAttempts: 0, RetryBackoff: time.Second, MaxRetryBackoff: time.Millisecond, ReleaseTimeout: -1}.Validate()
	if err == nil {
		t.Fatal("accepted a bad config")
	}
	for _, want := range []string{"--pin-ttl", "MaxAttempts", "ReleaseTimeout", "MaxRetryBackoff"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q missing from %v", want, err)
		}
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := New(DefaultConfig(), Deps{}); err == nil {
		t.Fatal("New accepted missing dependencies")
	}
}
