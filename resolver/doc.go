// Package resolver turns a broker's read request — (stream, view, offset) —
// into one physical target it may safely read, as ARCHITECTURE.md, "The
// walk of a resolve", describes.
//
// It has two halves.
//
// PlanRequest (plan.go) is a pure function over a read-only State (an
// *fsm.Machine satisfies it): steps 1–3. It checks the stream, the committed
// end and the trim point, then walks the requested view's live generations
// newest first and admits a record only if its generation is published, its
// status is VALID, its checksum verifies, and its object is LIVE under the
// identity the record names, and the caller has not excluded it. Every
// record it does not admit is listed with a Reason. A larger generation
// number alone proves nothing. COMMITTED is dense: the record containing
// the offset. TOPIC_COMPACTED is sparse: the record holding the next
// surviving offset, or ViewEnd when the newest published generation covering
// the offset says nothing survives; it never yields a dense range and is
// never replaced by COMMITTED, nor COMMITTED by it.
//
// Resolver.Resolve (loop.go) is steps 4–9: pin the best candidate's
// (object, identity), recheck linearizably by planning again and requiring
// the same candidate at the same version to come first, optionally verify
// the physical identity, and on any change release the pin and plan again
// under the remaining deadline. An unusable candidate is excluded and the
// next older one of the same view is tried. A committed offset without a
// valid generation-0 record asks the Repairer and waits. When nothing
// works, the answer is a retryable *UnavailableError carrying the caller's
// original deadline and every refusal — never EOF, never OFFSET_TRIMMED:
// those come only from the stream's own committed end and trim point.
//
// The loop reaches Raft, the object store and the clock only through the
// small interfaces declared in resolve.go, so it runs deterministically in
// tests with fakes and in the server over real Raft. Nothing in this package
// imports raft, gRPC, net, os or a logger (see the architecture test).
package resolver
