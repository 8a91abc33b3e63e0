// Package gc is metad's leader-only, two-phase garbage collector of
// objects (G9).
//
// An object becomes garbage when nothing references it: no record of a live
// generation and no append evidence above trim (the state machine counts
// references; unlinking — a retire, a trim, a delete — is committed in Raft
// first). After MinIdle of machine time, GC commits MarkObjectDeleting:
// from then on the state machine refuses new pins and new references to it.
// GC then waits until every earlier pin has ended — released or pruned, or
// watched by this leader for longer than any pin may last, on its own
// monotonic clock so a skewed wall clock cannot shorten the wait — deletes
// the bytes by (key, identity), and commits MarkObjectDeleted, which the
// state machine re-checks.
//
// Decide is the pure rule; Collector.Run is the loop, started for each
// leadership term and bounded in objects examined and deletes per pass. It
// reads time and waits only through its clock.Clock (WithClock), so tests
// move time themselves.
package gc
