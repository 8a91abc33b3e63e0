package client

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/api/reasons"
)

// Reasons: the google.rpc.ErrorInfo reasons as they arrive on the wire,
// the names of the metadpb.Reason enum (api/reasons has the table: code,
// definiteness, retry delay). The first block are the state machine's
// refusals (always definite), the second the failures of Raft, the
// resolver and the context, the last the client's own for a failure that
// never reached metad.
const (
	ReasonInvalidArgument     = "INVALID_ARGUMENT"
	ReasonStreamNotFound      = "STREAM_NOT_FOUND"
	ReasonStreamSealed        = "STREAM_SEALED"
	ReasonStaleEpoch          = "STALE_EPOCH"
	ReasonEpochAhead          = "EPOCH_AHEAD"
	ReasonAppendNotAtEnd      = "APPEND_NOT_AT_END"
	ReasonTrimBeyondEnd       = "TRIM_BEYOND_END"
	ReasonTrimBackwards       = "TRIM_BACKWARDS"
	ReasonGenerationNotNewer  = "GENERATION_NOT_NEWER"
	ReasonGenerationNotFound  = "GENERATION_NOT_FOUND"
	ReasonRecordOverlap       = "RECORD_OVERLAP"
	ReasonRecordOutOfRange    = "RECORD_OUT_OF_RANGE"
	ReasonChecksumMismatch    = "CHECKSUM_MISMATCH"
	ReasonObjectNotRegistered = "OBJECT_NOT_REGISTERED"
	ReasonObjectNotLive       = "OBJECT_NOT_LIVE"
	ReasonIdentityMismatch    = "IDENTITY_MISMATCH"
	ReasonObjectReferenced    = "OBJECT_REFERENCED"
	ReasonObjectPinned        = "OBJECT_PINNED"
	ReasonPinNotFound         = "PIN_NOT_FOUND"
	ReasonConditionFailed     = "CONDITION_FAILED"
	ReasonRequestIDReused     = "REQUEST_ID_REUSED"
	ReasonTooLarge            = "TOO_LARGE"
	ReasonRecordNotFound      = "RECORD_NOT_FOUND"

	ReasonNotLeader          = "NOT_LEADER"
	ReasonNoLeader           = "NO_LEADER"
	ReasonNotReady           = "NOT_READY"
	ReasonLeadershipLost     = "LEADERSHIP_LOST"
	ReasonCommitTimeout      = "COMMIT_TIMEOUT"
	ReasonShuttingDown       = "SHUTTING_DOWN"
	ReasonDeadlineExceeded   = "DEADLINE_EXCEEDED"
	ReasonCancelled          = "CANCELLED"
	ReasonResolveUnavailable = "RESOLVE_UNAVAILABLE"
	ReasonOverloaded         = "OVERLOADED"
	ReasonNotFound           = "NOT_FOUND"
	ReasonPinShared          = "PIN_SHARED"
	ReasonInternal           = "INTERNAL"

	ReasonAlreadyLeader        = "ALREADY_LEADER"        // a transfer named the current leader
	ReasonLastVoter            = "LAST_VOTER"            // removing the server would leave no voter
	ReasonConfigurationRefused = "CONFIGURATION_REFUSED" // Raft refused a configuration change for now
	ReasonFeatureLevel         = "FEATURE_LEVEL"         // the command needs a higher cluster feature level
	ReasonDiskFull             = "DISK_FULL"             // the leader's disk is below its reserve
	// ReasonQuarantineNotVerified: a lift was asked, but the bytes do not
	// verify (FailedPrecondition), or the store could not say (Unavailable).
	ReasonQuarantineNotVerified = "QUARANTINE_NOT_VERIFIED"

	ReasonWatchCompacted    = "WATCH_COMPACTED"     // a watch's resume point is older than the history held (CompactedError)
	ReasonWatchSlowConsumer = "WATCH_SLOW_CONSUMER" // a watcher fell Buffer events behind; resume from last_version
	ReasonWatchReset        = "WATCH_RESET"         // the member's state was replaced by a snapshot; resume

	ReasonUnauthenticated   = "UNAUTHENTICATED"     // the call presented no identity (or one the server refused)
	ReasonPermissionDenied  = "PERMISSION_DENIED"   // the caller's role may not make the call
	ReasonClusterIDMismatch = "CLUSTER_ID_MISMATCH" // a node-to-node call from another cluster
	ReasonUnimplemented     = "UNIMPLEMENTED"       // the call is not served there (e.g. watch not enabled)

	ReasonUnavailable = "UNAVAILABLE" // the connection failed
)

// Group sentinels: one per kind of failure a caller acts on.
var (
	// ErrInvalidArgument: the request is wrong; fix it, do not retry.
	ErrInvalidArgument = errors.New("metad: invalid argument")
	// ErrNotFound: the stream, generation, record, pin or server does not
	// exist.
	ErrNotFound = errors.New("metad: not found")
	// ErrFailedPrecondition: the state does not allow the operation
	// (sealed, fenced, trimmed, pinned ...); it will not succeed as is.
	ErrFailedPrecondition = errors.New("metad: failed precondition")
	// ErrConflict: a compare-and-set lost (APPEND_NOT_AT_END,
	// CONDITION_FAILED); re-read and decide again.
	ErrConflict = errors.New("metad: conflict")
	// ErrUnavailable: the cluster could not serve the call now (no
	// leader, overloaded, shutting down, unreachable).
	ErrUnavailable = errors.New("metad: unavailable")
	// ErrRetryable matches every error the server asked to be retried
	// (it carried RetryInfo), and broken connections.
	ErrRetryable = errors.New("metad: retryable")
	// ErrIndeterminate matches failures after which the operation may
	// have taken effect; retry it under the same request id.
	ErrIndeterminate = errors.New("metad: indeterminate")
	// ErrDeadlineExceeded: the call's deadline passed. Also matches
	// context.DeadlineExceeded.
	ErrDeadlineExceeded = errors.New("metad: deadline exceeded")
	// ErrCancelled: the caller cancelled. Also matches context.Canceled.
	ErrCancelled = errors.New("metad: cancelled")
	// ErrInternal: a failure metad did not classify; indeterminate.
	ErrInternal = errors.New("metad: internal error")
	// ErrUnauthenticated: the call presented no identity the server
	// accepts; present a client certificate or a bearer token.
	ErrUnauthenticated = errors.New("metad: unauthenticated")
	// ErrPermissionDenied: the caller's role may not make the call.
	ErrPermissionDenied = errors.New("metad: permission denied")
	// ErrUnimplemented: the server does not serve the call (watch not
	// enabled there, or a server too old to know the RPC).
	ErrUnimplemented = errors.New("metad: unimplemented")
)

// Reason sentinels: one per reason, each also matching its group. Their
// texts and groups come from the error table (package reasons); a reason
// whose row names no text has its group's sentinel as its own
// (INVALID_ARGUMENT: ErrInvalidArgument).
var (
	ErrStreamNotFound      = sentinel(metadpb.Reason_STREAM_NOT_FOUND)
	ErrSealed              = sentinel(metadpb.Reason_STREAM_SEALED)
	ErrStaleEpoch          = sentinel(metadpb.Reason_STALE_EPOCH)
	ErrEpochAhead          = sentinel(metadpb.Reason_EPOCH_AHEAD)
	ErrAppendNotAtEnd      = sentinel(metadpb.Reason_APPEND_NOT_AT_END)
	ErrTrimBeyondEnd       = sentinel(metadpb.Reason_TRIM_BEYOND_END)
	ErrTrimBackwards       = sentinel(metadpb.Reason_TRIM_BACKWARDS)
	ErrGenerationNotNewer  = sentinel(metadpb.Reason_GENERATION_NOT_NEWER)
	ErrGenerationNotFound  = sentinel(metadpb.Reason_GENERATION_NOT_FOUND)
	ErrRecordOverlap       = sentinel(metadpb.Reason_RECORD_OVERLAP)
	ErrRecordOutOfRange    = sentinel(metadpb.Reason_RECORD_OUT_OF_RANGE)
	ErrChecksumMismatch    = sentinel(metadpb.Reason_CHECKSUM_MISMATCH)
	ErrObjectNotRegistered = sentinel(metadpb.Reason_OBJECT_NOT_REGISTERED)
	ErrObjectNotLive       = sentinel(metadpb.Reason_OBJECT_NOT_LIVE)
	ErrIdentityMismatch    = sentinel(metadpb.Reason_IDENTITY_MISMATCH)
	ErrObjectReferenced    = sentinel(metadpb.Reason_OBJECT_REFERENCED)
	ErrObjectPinned        = sentinel(metadpb.Reason_OBJECT_PINNED)
	ErrPinNotFound         = sentinel(metadpb.Reason_PIN_NOT_FOUND)
	ErrConditionFailed     = sentinel(metadpb.Reason_CONDITION_FAILED)
	ErrRequestIDReused     = sentinel(metadpb.Reason_REQUEST_ID_REUSED)
	ErrTooLarge            = sentinel(metadpb.Reason_TOO_LARGE)
	ErrRecordNotFound      = sentinel(metadpb.Reason_RECORD_NOT_FOUND)
	ErrPinShared           = sentinel(metadpb.Reason_PIN_SHARED)

	ErrNotLeader          = sentinel(metadpb.Reason_NOT_LEADER)
	ErrNoLeader           = sentinel(metadpb.Reason_NO_LEADER)
	ErrNotReady           = sentinel(metadpb.Reason_NOT_READY)
	ErrLeadershipLost     = sentinel(metadpb.Reason_LEADERSHIP_LOST)
	ErrCommitTimeout      = sentinel(metadpb.Reason_COMMIT_TIMEOUT)
	ErrShuttingDown       = sentinel(metadpb.Reason_SHUTTING_DOWN)
	ErrResolveUnavailable = sentinel(metadpb.Reason_RESOLVE_UNAVAILABLE)
	ErrOverloaded         = sentinel(metadpb.Reason_OVERLOADED)

	ErrAlreadyLeader        = sentinel(metadpb.Reason_ALREADY_LEADER)
	ErrLastVoter            = sentinel(metadpb.Reason_LAST_VOTER)
	ErrConfigurationRefused = sentinel(metadpb.Reason_CONFIGURATION_REFUSED)
	ErrFeatureLevel         = sentinel(metadpb.Reason_FEATURE_LEVEL)
	// ErrDiskFull: the leader's disk is below its reserve; the write was
	// not applied, and a retry succeeds once space is freed.
	ErrDiskFull = sentinel(metadpb.Reason_DISK_FULL)
	// ErrQuarantineNotVerified: a quarantine lift was refused because the
	// record's bytes did not verify; it also matches the group of its code
	// (ErrFailedPrecondition, or ErrUnavailable when the store did not
	// answer).
	ErrQuarantineNotVerified = sentinel(metadpb.Reason_QUARANTINE_NOT_VERIFIED)

	ErrWatchCompacted    = sentinel(metadpb.Reason_WATCH_COMPACTED)
	ErrWatchSlowConsumer = sentinel(metadpb.Reason_WATCH_SLOW_CONSUMER)
	ErrWatchReset        = sentinel(metadpb.Reason_WATCH_RESET)

	ErrClusterIDMismatch = sentinel(metadpb.Reason_CLUSTER_ID_MISMATCH)
)

// ownSentinels holds the reason sentinels above, as sentinel made them.
var ownSentinels = map[metadpb.Reason]error{}

// sentinel makes reason r's own sentinel from its row.
func sentinel(r metadpb.Reason) error {
	err := errors.New(reasons.Of(r).Sentinel)
	ownSentinels[r] = err
	return err
}

// Resolve outcomes that are answers, not failures. OutcomeError turns
// them into errors for callers that treat "nothing to read here" as one.
var (
	// ErrEOF: the offset is at or past the stream's committed end.
	ErrEOF = errors.New("metad: offset at or past the committed end (EOF)")
	// ErrTrimmed: the offset is below the stream's trim point.
	ErrTrimmed = errors.New("metad: offset trimmed")
	// ErrViewEnd: the view's generations cover nothing at the offset yet.
	ErrViewEnd = errors.New("metad: offset past the view's end")
)

// OutcomeError is nil for a TARGET and an error matching ErrEOF,
// ErrTrimmed, ErrViewEnd or ErrStreamNotFound (and ErrNotFound) for the
// other resolve outcomes, for callers that want one error path.
func OutcomeError(o metadpb.Outcome) error {
	switch o {
	case metadpb.Outcome_TARGET:
		return nil
	case metadpb.Outcome_EOF:
		return ErrEOF
	case metadpb.Outcome_OFFSET_TRIMMED:
		return ErrTrimmed
	case metadpb.Outcome_VIEW_END:
		return ErrViewEnd
	case metadpb.Outcome_NOT_FOUND:
		return &Error{Code: codes.NotFound, Reason: ReasonStreamNotFound, Definite: true, Message: "the stream does not exist"}
	}
	return fmt.Errorf("metad: unknown resolve outcome %v", o)
}
