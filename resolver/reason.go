package resolver

import (
	"fmt"
)

// Reason says why a candidate was not returned. Reasons are UPPER_SNAKE
// strings because they travel to clients in diagnostics unchanged.
type Reason string

// Refusals made while planning, from state alone.
const (
	ReasonUnpublished         Reason = "UNPUBLISHED"
	ReasonRetired             Reason = "RETIRED"
	ReasonQuarantined         Reason = "QUARANTINED"
	ReasonInvalidStatus       Reason = "INVALID_STATUS"
	ReasonChecksumMismatch    Reason = "CHECKSUM_MISMATCH"
	ReasonObjectNotRegistered Reason = "OBJECT_NOT_REGISTERED"
	ReasonObjectNotLive       Reason = "OBJECT_NOT_LIVE"
	ReasonIdentityMismatch    Reason = "IDENTITY_MISMATCH"
	ReasonExcluded            Reason = "EXCLUDED"
)

// Refusals made by the resolve loop, after planning.
const (
	// ReasonPinRefused: the pin was refused (object no longer live, or its
	// identity changed); the candidate is excluded for this call.
	ReasonPinRefused Reason = "PIN_REFUSED"
	// ReasonPinFailed: the pin could not be taken for a transient reason.
	ReasonPinFailed Reason = "PIN_FAILED"
	// ReasonRecheckChanged: state changed between planning and the
	// linearizable recheck after the pin; the request was planned again.
	ReasonRecheckChanged Reason = "RECHECK_CHANGED"
	// ReasonPhysicalMismatch: the object store does not hold the bytes the
	// identity names.
	ReasonPhysicalMismatch Reason = "PHYSICAL_MISMATCH"
	// ReasonPhysicalUnavailable: the object store could not be asked.
	ReasonPhysicalUnavailable Reason = "PHYSICAL_UNAVAILABLE"
	// ReasonRepairFailed: generation 0 was missing and repair did not
	// rebuild it (evidence missing, not leader, deadline).
	ReasonRepairFailed Reason = "REPAIR_FAILED"
	// ReasonReadFailed: the linearizable read itself failed (no leader,
	// metadata lagging).
	ReasonReadFailed Reason = "READ_FAILED"
)

// Refusal is one entry of a resolve's diagnostic: a candidate (or, for
// whole-request reasons, just the request's generation or nothing) and why
// it was not returned.
type Refusal struct {
	Candidate CandidateID
	Reason    Reason
	Detail    string
}

func (r Refusal) String() string {
	return fmt.Sprintf("%v: %s (%s)", r.Candidate, r.Reason, r.Detail)
}
