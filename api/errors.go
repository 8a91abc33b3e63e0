package api

import (
	"context"
	"errors"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/raftstore"
	"github.com/metad/metad/resolver"
)

// ErrorDomain is the google.rpc.ErrorInfo domain of every metad error.
const ErrorDomain = "metad.dev"

// errorSpec is one row of the error table: how one domain failure reaches
// the wire. definite means the operation certainly did not take effect;
// retry, when set, is the delay a client should wait before retrying.
type errorSpec struct {
	code     codes.Code
	definite bool
	retry    time.Duration
}

// rejectionTable maps every deterministic FSM refusal. A refusal is always
// definite: the command was applied and changed nothing.
var rejectionTable = map[fsmpb.RejectCode]errorSpec{
	fsmpb.RejectCode_INVALID_ARGUMENT:      {codes.InvalidArgument, true, 0},
	fsmpb.RejectCode_STREAM_NOT_FOUND:      {codes.NotFound, true, 0},
	fsmpb.RejectCode_STREAM_SEALED:         {codes.FailedPrecondition, true, 0},
	fsmpb.RejectCode_STALE_EPOCH:           {codes.FailedPrecondition, true, 0},
	fsmpb.RejectCode_EPOCH_AHEAD:           {codes.FailedPrecondition, true, 0},
	fsmpb.RejectCode_APPEND_NOT_AT_END:     {codes.Aborted, true, 0},
	fsmpb.RejectCode_TRIM_BEYOND_END:       {codes.FailedPrecondition, true, 0},
	fsmpb.RejectCode_TRIM_BACKWARDS:        {codes.FailedPrecondition, true, 0},
	fsmpb.RejectCode_GENERATION_NOT_NEWER:  {codes.FailedPrecondition, true, 0},
	fsmpb.RejectCode_GENERATION_NOT_FOUND:  {codes.NotFound, true, 0},
	fsmpb.RejectCode_RECORD_OVERLAP:        {codes.FailedPrecondition, true, 0},
	fsmpb.RejectCode_RECORD_OUT_OF_RANGE:   {codes.FailedPrecondition, true, 0},
	fsmpb.RejectCode_CHECKSUM_MISMATCH:     {codes.InvalidArgument, true, 0},
	fsmpb.RejectCode_OBJECT_NOT_REGISTERED: {codes.FailedPrecondition, true, 0},
	fsmpb.RejectCode_OBJECT_NOT_LIVE:       {codes.FailedPrecondition, true, 0},
	fsmpb.RejectCode_IDENTITY_MISMATCH:     {codes.FailedPrecondition, true, 0},
	fsmpb.RejectCode_OBJECT_REFERENCED:     {codes.FailedPrecondition, true, 0},
	fsmpb.RejectCode_OBJECT_PINNED:         {codes.FailedPrecondition, true, 0},
	fsmpb.RejectCode_PIN_NOT_FOUND:         {codes.NotFound, true, 0},
	fsmpb.RejectCode_CONDITION_FAILED:      {codes.Aborted, true, 0},
	fsmpb.RejectCode_REQUEST_ID_REUSED:     {codes.InvalidArgument, true, 0},
	fsmpb.RejectCode_TOO_LARGE:             {codes.InvalidArgument, true, 0},
	fsmpb.RejectCode_RECORD_NOT_FOUND:      {codes.NotFound, true, 0},
}

// Reasons of failures that are not FSM refusals.
const (
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
	ReasonInvalidArgument    = "INVALID_ARGUMENT"
	ReasonNotFound           = "NOT_FOUND"
	ReasonPinShared          = "PIN_SHARED"
	// ReasonAlreadyLeader: a leadership transfer named the current leader.
	ReasonAlreadyLeader = "ALREADY_LEADER"
	// ReasonLastVoter: removing the server would leave raft without a voter.
	ReasonLastVoter = "LAST_VOTER"
	// ReasonConfigurationRefused: raft refused a configuration change (e.g.
	// another one is not committed yet).
	ReasonConfigurationRefused = "CONFIGURATION_REFUSED"
	// ReasonFeatureLevel: the command needs a higher cluster feature level.
	ReasonFeatureLevel = "FEATURE_LEVEL"
	// ReasonQuarantineNotVerified: a lift was asked, but the bytes do not
	// verify (or the store could not say).
	ReasonQuarantineNotVerified = "QUARANTINE_NOT_VERIFIED"
	ReasonInternal              = "INTERNAL"
	// Watch (watch.go).
	ReasonWatchCompacted    = "WATCH_COMPACTED"
	ReasonWatchSlowConsumer = "WATCH_SLOW_CONSUMER"
	ReasonWatchReset        = "WATCH_RESET"
)

// failureTable maps the failures of Raft, the resolver and the context.
// Indeterminate rows are those where a command may have been committed.
var failureTable = []struct {
	err    error
	reason string
	spec   errorSpec
	field  string // the request field at fault, if the failure names one
}{
	{raftstore.ErrNotLeader, ReasonNotLeader, errorSpec{codes.Unavailable, true, 50 * time.Millisecond}, ""},
	{raftstore.ErrNoLeader, ReasonNoLeader, errorSpec{codes.Unavailable, true, 200 * time.Millisecond}, ""},
	{raftstore.ErrNotReady, ReasonNotReady, errorSpec{codes.Unavailable, true, 100 * time.Millisecond}, ""},
	{raftstore.ErrLeadershipLost, ReasonLeadershipLost, errorSpec{codes.Unavailable, false, 200 * time.Millisecond}, ""},
	{raftstore.ErrTimeout, ReasonCommitTimeout, errorSpec{codes.Unavailable, false, 200 * time.Millisecond}, ""},
	{raftstore.ErrClosed, ReasonShuttingDown, errorSpec{codes.Unavailable, false, 500 * time.Millisecond}, ""},
	{raftstore.ErrOverloaded, ReasonOverloaded, errorSpec{codes.ResourceExhausted, true, 100 * time.Millisecond}, ""},
	{raftstore.ErrUnknownServer, ReasonNotFound, errorSpec{codes.NotFound, true, 0}, ""},
	{raftstore.ErrAlreadyLeader, ReasonAlreadyLeader, errorSpec{codes.FailedPrecondition, true, 0}, "to_node_id"},
	{raftstore.ErrLastVoter, ReasonLastVoter, errorSpec{codes.FailedPrecondition, true, 0}, "node_id"},
	{raftstore.ErrConfigurationRefused, ReasonConfigurationRefused, errorSpec{codes.Aborted, true, 200 * time.Millisecond}, ""},
	// Refused before the proposal: definite, and no retry helps until the
	// cluster's level is raised (every voter upgraded).
	{raftstore.ErrFeatureLevel, ReasonFeatureLevel, errorSpec{codes.FailedPrecondition, true, 0}, ""},
	{resolver.ErrUnavailable, ReasonResolveUnavailable, errorSpec{codes.Unavailable, true, 50 * time.Millisecond}, ""},
	{context.DeadlineExceeded, ReasonDeadlineExceeded, errorSpec{codes.DeadlineExceeded, false, 0}, ""},
	{context.Canceled, ReasonCancelled, errorSpec{codes.Canceled, false, 0}, ""},
}

// rejectionError turns a refusal into its status. The FSM names fields as
// dotted paths from the Command ("commit_append.object.key"); the API's
// request messages are the operations themselves, so the operation prefix
// is dropped.
func rejectionError(rej *fsmpb.Rejection) error {
	spec, ok := rejectionTable[rej.Code]
	if !ok {
		spec = errorSpec{codes.Internal, true, 0}
	}
	field := rej.Field
	if i := strings.IndexByte(field, '.'); i >= 0 {
		field = field[i+1:]
	}
	return build(spec, rej.Code.String(), rej.Message, field, nil)
}

// invalidArgument is for requests refused before anything was proposed.
func invalidArgument(field, format string, args ...any) error {
	return build(errorSpec{codes.InvalidArgument, true, 0}, ReasonInvalidArgument, sprintf(format, args...), field, nil)
}

func streamNotFound(field, format string, args ...any) error {
	return build(errorSpec{codes.NotFound, true, 0}, fsmpb.RejectCode_STREAM_NOT_FOUND.String(), sprintf(format, args...), field, nil)
}

// pinShared refuses to release a pin that concurrent resolves share.
func pinShared(id uint64) error {
	return build(errorSpec{codes.FailedPrecondition, true, 0}, ReasonPinShared,
		sprintf("pin %d is shared by concurrent resolves (target.pin_shared): readers must not release it; it expires by itself", id), "pin_id", nil)
}

func notFound(field, format string, args ...any) error {
	return build(errorSpec{codes.NotFound, true, 0}, ReasonNotFound, sprintf(format, args...), field, nil)
}

// toStatus maps any error from the layers below to its status, per the
// tables above. An unclassified error is INTERNAL and indeterminate: we do
// not know whether it took effect.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := asStatus(err); ok {
		return err // already a status (from a forwarded call)
	}
	for _, row := range failureTable {
		if errors.Is(err, row.err) {
			spec := row.spec
			if !errors.Is(row.err, context.DeadlineExceeded) && !errors.Is(row.err, context.Canceled) {
				// raftstore knows whether the command reached the log.
				spec.definite = !raftstore.Indeterminate(err)
			}
			return build(spec, row.reason, err.Error(), row.field, err)
		}
	}
	return build(errorSpec{codes.Internal, false, 0}, ReasonInternal, err.Error(), "", err)
}

// build assembles a status with ErrorInfo, and RetryInfo, BadRequest and
// ResolveDiagnostic where they apply.
func build(spec errorSpec, reason, msg, field string, cause error) error {
	return buildWithMeta(spec, reason, msg, field, cause, nil)
}

// buildWithMeta is build with extra ErrorInfo metadata.
func buildWithMeta(spec errorSpec, reason, msg, field string, cause error, extra map[string]string) error {
	meta := map[string]string{"definite": boolString(spec.definite)}
	for k, v := range extra {
		meta[k] = v
	}
	if field != "" {
		meta["field"] = field
	}
	var nle *raftstore.NotLeaderError
	if errors.As(cause, &nle) {
		meta["leader_id"], meta["leader_addr"] = nle.LeaderID, nle.LeaderAddr
	}
	st := status.New(spec.code, msg)
	details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain, Metadata: meta}}
	if spec.retry > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(spec.retry)})
	}
	if field != "" {
		details = append(details, &errdetails.BadRequest{FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: msg}}})
	}
	var ue *resolver.UnavailableError
	if errors.As(cause, &ue) {
		details = append(details, diagnosticPB(ue))
	}
	if withDetails, err := st.WithDetails(details...); err == nil {
		st = withDetails
	}
	return st.Err()
}

func diagnosticPB(ue *resolver.UnavailableError) *metadpb.ResolveDiagnostic {
	d := &metadpb.ResolveDiagnostic{Attempts: uint32(ue.Attempts), Tried: refusalsPB(ue.Tried)}
	if !ue.Deadline.IsZero() {
		d.Deadline = timestamppb.New(ue.Deadline)
	}
	if ue.Cause != nil {
		d.Cause = ue.Cause.Error()
	}
	return d
}

func boolString(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// asStatus returns the gRPC status an error carries, if it carries one.
func asStatus(err error) (*status.Status, bool) {
	if err == nil {
		return nil, false
	}
	return status.FromError(err)
}

// reasonOf returns the ErrorInfo reason of a status error ("" if none).
func reasonOf(err error) string {
	st, ok := asStatus(err)
	if !ok {
		return ""
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.Reason
		}
	}
	return ""
}
