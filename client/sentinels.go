package client

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"

	"github.com/metad/metad/api/metadpb"
)

// Reasons: the google.rpc.ErrorInfo reasons of api/errors.go's table, as
// they arrive on the wire. The first block are the state machine's
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
	// ReasonQuarantineNotVerified: a lift was asked, but the bytes do not
	// verify (FailedPrecondition), or the store could not say (Unavailable).
	ReasonQuarantineNotVerified = "QUARANTINE_NOT_VERIFIED"

	ReasonWatchCompacted    = "WATCH_COMPACTED"     // a watch's resume point is older than the history held (CompactedError)
	ReasonWatchSlowConsumer = "WATCH_SLOW_CONSUMER" // a watcher fell Buffer events behind; resume from last_version
	ReasonWatchReset        = "WATCH_RESET"         // the member's state was replaced by a snapshot; resume

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
)

// Reason sentinels: one per reason, each also matching its group.
var (
	ErrStreamNotFound      = errors.New("metad: stream not found")
	ErrSealed              = errors.New("metad: stream sealed")
	ErrStaleEpoch          = errors.New("metad: stale writer epoch (fenced)")
	ErrEpochAhead          = errors.New("metad: writer epoch ahead of the stream's")
	ErrAppendNotAtEnd      = errors.New("metad: append not at the committed end")
	ErrTrimBeyondEnd       = errors.New("metad: trim beyond the committed end")
	ErrTrimBackwards       = errors.New("metad: trim backwards")
	ErrGenerationNotNewer  = errors.New("metad: generation not newer")
	ErrGenerationNotFound  = errors.New("metad: generation not found")
	ErrRecordOverlap       = errors.New("metad: index records overlap")
	ErrRecordOutOfRange    = errors.New("metad: index record out of range")
	ErrChecksumMismatch    = errors.New("metad: checksum mismatch")
	ErrObjectNotRegistered = errors.New("metad: object not registered")
	ErrObjectNotLive       = errors.New("metad: object not live")
	ErrIdentityMismatch    = errors.New("metad: object identity mismatch")
	ErrObjectReferenced    = errors.New("metad: object referenced")
	ErrObjectPinned        = errors.New("metad: object pinned")
	ErrPinNotFound         = errors.New("metad: pin not found")
	ErrConditionFailed     = errors.New("metad: condition failed")
	ErrRequestIDReused     = errors.New("metad: request id reused")
	ErrTooLarge            = errors.New("metad: too large")
	ErrRecordNotFound      = errors.New("metad: record not found")
	ErrPinShared           = errors.New("metad: pin shared")

	ErrNotLeader          = errors.New("metad: not the leader")
	ErrNoLeader           = errors.New("metad: no leader")
	ErrNotReady           = errors.New("metad: not ready")
	ErrLeadershipLost     = errors.New("metad: leadership lost")
	ErrCommitTimeout      = errors.New("metad: commit timeout")
	ErrShuttingDown       = errors.New("metad: shutting down")
	ErrResolveUnavailable = errors.New("metad: resolve unavailable")
	ErrOverloaded         = errors.New("metad: overloaded")

	ErrAlreadyLeader        = errors.New("metad: already the leader")
	ErrLastVoter            = errors.New("metad: the last voter")
	ErrConfigurationRefused = errors.New("metad: configuration change refused")
	ErrFeatureLevel         = errors.New("metad: the cluster's feature level is too low")
	// ErrQuarantineNotVerified: a quarantine lift was refused because the
	// record's bytes did not verify; it also matches the group of its code
	// (ErrFailedPrecondition, or ErrUnavailable when the store did not
	// answer).
	ErrQuarantineNotVerified = errors.New("metad: quarantined bytes do not verify")

	ErrWatchCompacted    = errors.New("metad: watch history no longer held")
	ErrWatchSlowConsumer = errors.New("metad: watcher cut off as a slow consumer")
	ErrWatchReset        = errors.New("metad: watch reset by a snapshot install")
)

// reasonSentinels: each reason's own sentinel first, then its groups.
var reasonSentinels = map[string][]error{
	ReasonInvalidArgument:     {ErrInvalidArgument},
	ReasonStreamNotFound:      {ErrStreamNotFound, ErrNotFound},
	ReasonStreamSealed:        {ErrSealed, ErrFailedPrecondition},
	ReasonStaleEpoch:          {ErrStaleEpoch, ErrFailedPrecondition},
	ReasonEpochAhead:          {ErrEpochAhead, ErrFailedPrecondition},
	ReasonAppendNotAtEnd:      {ErrAppendNotAtEnd, ErrConflict},
	ReasonTrimBeyondEnd:       {ErrTrimBeyondEnd, ErrFailedPrecondition},
	ReasonTrimBackwards:       {ErrTrimBackwards, ErrFailedPrecondition},
	ReasonGenerationNotNewer:  {ErrGenerationNotNewer, ErrFailedPrecondition},
	ReasonGenerationNotFound:  {ErrGenerationNotFound, ErrNotFound},
	ReasonRecordOverlap:       {ErrRecordOverlap, ErrFailedPrecondition},
	ReasonRecordOutOfRange:    {ErrRecordOutOfRange, ErrFailedPrecondition},
	ReasonChecksumMismatch:    {ErrChecksumMismatch, ErrInvalidArgument},
	ReasonObjectNotRegistered: {ErrObjectNotRegistered, ErrFailedPrecondition},
	ReasonObjectNotLive:       {ErrObjectNotLive, ErrFailedPrecondition},
	ReasonIdentityMismatch:    {ErrIdentityMismatch, ErrFailedPrecondition},
	ReasonObjectReferenced:    {ErrObjectReferenced, ErrFailedPrecondition},
	ReasonObjectPinned:        {ErrObjectPinned, ErrFailedPrecondition},
	ReasonPinNotFound:         {ErrPinNotFound, ErrNotFound},
	ReasonConditionFailed:     {ErrConditionFailed, ErrConflict},
	ReasonRequestIDReused:     {ErrRequestIDReused, ErrInvalidArgument},
	ReasonTooLarge:            {ErrTooLarge, ErrInvalidArgument},
	ReasonRecordNotFound:      {ErrRecordNotFound, ErrNotFound},
	ReasonPinShared:           {ErrPinShared, ErrFailedPrecondition},
	ReasonNotFound:            {ErrNotFound},

	ReasonNotLeader:          {ErrNotLeader, ErrUnavailable},
	ReasonNoLeader:           {ErrNoLeader, ErrUnavailable},
	ReasonNotReady:           {ErrNotReady, ErrUnavailable},
	ReasonLeadershipLost:     {ErrLeadershipLost, ErrUnavailable},
	ReasonCommitTimeout:      {ErrCommitTimeout, ErrUnavailable},
	ReasonShuttingDown:       {ErrShuttingDown, ErrUnavailable},
	ReasonResolveUnavailable: {ErrResolveUnavailable, ErrUnavailable},
	ReasonOverloaded:         {ErrOverloaded, ErrUnavailable},
	ReasonUnavailable:        {ErrUnavailable},
	ReasonDeadlineExceeded:   {ErrDeadlineExceeded, context.DeadlineExceeded},
	ReasonCancelled:          {ErrCancelled, context.Canceled},
	ReasonInternal:           {ErrInternal},

	ReasonAlreadyLeader:        {ErrAlreadyLeader, ErrFailedPrecondition},
	ReasonLastVoter:            {ErrLastVoter, ErrFailedPrecondition},
	ReasonConfigurationRefused: {ErrConfigurationRefused, ErrConflict},
	ReasonFeatureLevel:         {ErrFeatureLevel, ErrFailedPrecondition},
	// Its group follows the code (see Sentinel's caller), not a fixed one.
	ReasonQuarantineNotVerified: {ErrQuarantineNotVerified},

	ReasonWatchCompacted:    {ErrWatchCompacted, ErrFailedPrecondition},
	ReasonWatchSlowConsumer: {ErrWatchSlowConsumer, ErrUnavailable},
	ReasonWatchReset:        {ErrWatchReset, ErrUnavailable},
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
