// Package model is what metad promises, written from GUARANTEES.md and
// metad.proto rather than from metad's code, and the checkers that hold a
// history to it.
//
// Stream is the sequential model of one stream: committed end, trim point,
// writer epoch, append evidence, the generations of both views, and which
// object keys were re-registered with new bytes. Step applies one recorded
// operation: a mutation must have the outcome the model decides (an
// acknowledged write the model would refuse is an anomaly, and so is a
// refusal with another reason), a read must show exactly the model's
// state. Generation 0 of COMMITTED is the append evidence itself, so it does
// not matter whether a record was written with the append or rebuilt by
// repair. Resolve is checked in full: EOF only at or past the committed
// end, OFFSET_TRIMMED only below the trim point, VIEW_END only for the
// sparse view and where the newest published generation covering the
// offset says the view ends, and a TARGET must name a record of the
// requested view that covers the offset (for the sparse view, starting at
// the next surviving offset), carries the canonical checksum, still names
// the bytes its key holds, and is the newest admissible candidate the
// caller did not exclude.
//
// Porcupine checks linearizability (G1), one partition per stream. A
// mutation whose outcome is unknown returns "never", so it may take effect
// anywhere after its call or not at all; definite failures are left out.
// A resolve's target was pinned and then rechecked, so its linearization
// point is after the pin was applied: for a pin the resolve took itself,
// the pin's expiry minus its TTL is the leader's machine time at that
// apply, on the same wall clock as the history, and narrows the resolve's
// call time (not while a clock fault makes machine time differ, and not for
// a shared pin, whose lease says nothing about when it was applied). This
// is what lets a missing recheck show.
//
// The model's rules for object versions follow the cluster's feature
// level, which the history records: from level 3 a key keeps many
// versions, so a new version registered under it (a reupload, a
// replacement) leaves every record naming another version admissible,
// and nothing counts as replaced; below it the new identity replaces the
// old. Every append and record carries the data checksum its writer
// committed (DataCRC, CRC-32C computed here), and a target must carry the
// same (from level 3, always).
//
// The other checkers read the history alone: CheckMonotone (G3),
// CheckResolveShapes (G5, G6), CheckData (G8: bytes read are exactly the
// payloads of the target's offsets and pass the data checksum their writer
// committed; targets and the final evidence carry that checksum; bytes a
// reader refused as corrupt need a fault that rewrote them; a failed read
// under a pin is G9),
// CheckPins (G9, explicit pins watched while GC may collect),
// CheckDurable (G2, against the final read-back), CheckStore
// (report.go): CheckReports (G10: a false report on intact bytes is never
// confirmed), CheckIntact (every committed offset above the final trim
// whose bytes the harness did not replace reads back at the end) and
// CheckQuarantine (G12: nothing with intact bytes stays quarantined once
// the repair job had time), CheckWatch (G14: each watcher's events a
// gap-free, duplicate-free, in-order slice of the stream's committed
// history, each resume right after the last event seen; watch.go) and
// CheckMembership (the Raft configuration the amnesia and long-partition
// nemeses saw is the one before the fault; membership.go). Reads of an
// object the flapping nemesis hid, or the corrupt nemesis rewrote, may
// fail (never return wrong bytes). In the model a confirmed
// report makes its record suspect from then on — quarantined, and later
// healed at a time the history does not show — so a resolve may pass it
// over; nothing else may.
package model
