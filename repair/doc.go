// Package repair rebuilds COMMITTED generation-0 index records from append
// evidence (G11).
//
// Planning (package repair/plan) is pure: PlanOffset decides, from one consistent state,
// whether the record covering an offset is healthy, must be rebuilt, or
// cannot be (the offset is trimmed or past the end; the evidence is missing;
// its object is gone, or a reader proved its bytes unusable and the record
// was quarantined — rebuilding the same record would only re-offer them). A rebuild is a conditional RepairGen0 command whose
// premises — the evidence version and the exact set of overlapping
// generation-0 records — are re-checked when it is applied, so of any number
// of repairs planned from the same state, on any leader, at most one takes
// effect. Scan walks streams and evidence in bounded slices for the
// periodic pass. TOPIC_COMPACTED is never repaired: only COMMITTED has
// evidence to derive it from.
//
// Service (service.go) is the leader-only loop: Run is started for each
// leadership term, after the new leader's barrier, and stopped on step-down.
// It serves Repair requests from resolves (bounded queue) and runs a
// periodic scan bounded in records, repairs and time per pass, at most one
// pass per ScanInterval. Every requested repair is bounded in time
// (RequestTimeout, from when it is queued, and never past the resolve's own
// deadline): out of time it returns ErrTimeout and leaves the item to a
// later attempt.
//
// Work that reads an object's bytes is slow in a way Raft work is not: a
// re-hash of a large object on a stalled store lasts as long as it is
// allowed to. So Run keeps it apart. The quick lane (Run's goroutine)
// plans and commits rebuilds; the verify lane (a goroutine Run starts and
// joins) runs the Verifier — requested repairs of quarantined records,
// from its own bounded queue (VerifyQueueSize), and the periodic
// re-verification of quarantined records (TimePerPass a pass, resuming
// after a check that ran out of time). A stalled object then costs the
// items behind it on the verify lane at most their bounds, and rebuilds
// of other items nothing. Both lanes commit through the same conditional
// commands, so at most one repair of an item still takes effect.
//
// Missing evidence is never skipped: it is logged at ERROR, counted, and
// returned to the resolve that asked, which puts it in its diagnostic. The
// loop reads time and waits only on its clock.Clock (WithClock), so tests
// move time themselves.
package repair
