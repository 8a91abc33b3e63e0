package api

import (
	"context"
	"errors"
	"strings"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/api/reasons"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/peer"
	"github.com/metad/metad/raftstore"
	"github.com/metad/metad/resolver"
)

// ErrorDomain is the google.rpc.ErrorInfo domain of every metad error.
const ErrorDomain = "metad.dev"

// The error table is package reasons: every reason's code, definiteness
// and retry delay. This file maps the layers' failures onto its reasons.

// failureTable maps the failures of Raft, the node-to-node layer (package
// peer), the resolver and the context to their reasons. Indeterminate reasons are those where a command may have
// been committed; toStatus narrows them per error.
var failureTable = []struct {
	err    error
	reason metadpb.Reason
	field  string // the request field at fault, if the failure names one
}{
	{raftstore.ErrNotLeader, metadpb.Reason_NOT_LEADER, ""},
	{raftstore.ErrNoLeader, metadpb.Reason_NO_LEADER, ""},
	{raftstore.ErrNotReady, metadpb.Reason_NOT_READY, ""},
	{raftstore.ErrLeadershipLost, metadpb.Reason_LEADERSHIP_LOST, ""},
	{peer.ErrUnanswered, metadpb.Reason_LEADERSHIP_LOST, ""},
	{raftstore.ErrTransferFailed, metadpb.Reason_CONFIGURATION_REFUSED, ""},
	{raftstore.ErrTimeout, metadpb.Reason_COMMIT_TIMEOUT, ""},
	{raftstore.ErrClosed, metadpb.Reason_SHUTTING_DOWN, ""},
	{raftstore.ErrOverloaded, metadpb.Reason_OVERLOADED, ""},
	{raftstore.ErrUnknownServer, metadpb.Reason_NOT_FOUND, ""},
	{raftstore.ErrAlreadyLeader, metadpb.Reason_ALREADY_LEADER, "to_node_id"},
	{raftstore.ErrLastVoter, metadpb.Reason_LAST_VOTER, "node_id"},
	{raftstore.ErrConfigurationRefused, metadpb.Reason_CONFIGURATION_REFUSED, ""},
	{raftstore.ErrFeatureLevel, metadpb.Reason_FEATURE_LEVEL, ""},
	{raftstore.ErrBadCommand, metadpb.Reason_INVALID_ARGUMENT, "command"},
	{peer.ErrClusterIDMismatch, metadpb.Reason_CLUSTER_ID_MISMATCH, ""},
	{raftstore.ErrDiskFull, metadpb.Reason_DISK_FULL, ""},
	{resolver.ErrUnavailable, metadpb.Reason_RESOLVE_UNAVAILABLE, ""},
	{context.DeadlineExceeded, metadpb.Reason_DEADLINE_EXCEEDED, ""},
	{context.Canceled, metadpb.Reason_CANCELLED, ""},
}

// rejectionReason is the reason of an FSM refusal: the reason of the same
// name (every RejectCode has one; errors_wire_test.go checks it).
func rejectionReason(code fsmpb.RejectCode) (metadpb.Reason, bool) {
	n, ok := metadpb.Reason_value[code.String()]
	return metadpb.Reason(n), ok && n != 0
}

// rejectionError turns a refusal into its status. The FSM names fields as
// dotted paths from the Command ("commit_append.object.key"); the API's
// request messages are the operations themselves, so the operation prefix
// is dropped.
func rejectionError(rej *fsmpb.Rejection) error {
	field := rej.Field
	if i := strings.IndexByte(field, '.'); i >= 0 {
		field = field[i+1:]
	}
	r, ok := rejectionReason(rej.Code)
	if !ok { // unreachable while every RejectCode has a reason
		spec := reasons.Of(metadpb.Reason_INTERNAL).Spec
		spec.Definite = true // the state machine refused it: nothing changed
		return build(metadpb.Reason_INTERNAL, spec, sprintf("refused with unknown code %v: %s", rej.Code, rej.Message), field, nil, nil)
	}
	return fail(r, rej.Message, field)
}

// invalidArgument is for requests refused before anything was proposed.
func invalidArgument(field, format string, args ...any) error {
	return fail(metadpb.Reason_INVALID_ARGUMENT, sprintf(format, args...), field)
}

func streamNotFound(field, format string, args ...any) error {
	return fail(metadpb.Reason_STREAM_NOT_FOUND, sprintf(format, args...), field)
}

// pinShared refuses to release a pin that concurrent resolves share.
func pinShared(id uint64) error {
	return fail(metadpb.Reason_PIN_SHARED,
		sprintf("pin %d is shared by concurrent resolves (target.pin_shared): readers must not release it; it expires by itself", id), "pin_id")
}

func notFound(field, format string, args ...any) error {
	return fail(metadpb.Reason_NOT_FOUND, sprintf(format, args...), field)
}

// ToStatus maps any error from the layers below to its status, per the
// tables above; node hands it to package peer (peer.Deps.ToStatus), whose
// Peer service answers through api's one table.
func ToStatus(err error) error { return toStatus(err) }

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
			spec := reasons.Of(row.reason).Spec
			if !errors.Is(row.err, context.DeadlineExceeded) && !errors.Is(row.err, context.Canceled) {
				// raftstore knows whether the command reached the log.
				spec.Definite = !raftstore.Indeterminate(err) && !errors.Is(err, peer.ErrUnanswered)
			}
			return build(row.reason, spec, err.Error(), row.field, err, nil)
		}
	}
	if st, ok := status.FromError(err); ok {
		// A status wrapped by an error no row names: the status inside
		// (its code and details), with the wrapping message.
		return st.Err()
	}
	return build(metadpb.Reason_INTERNAL, reasons.Of(metadpb.Reason_INTERNAL).Spec, err.Error(), "", err, nil)
}

// fail builds the status of reason r, sent the usual way (its row's Spec).
func fail(r metadpb.Reason, msg, field string) error {
	return build(r, reasons.Of(r).Spec, msg, field, nil, nil)
}

// build assembles the status of reason r sent as spec (its row's Spec or
// one of its Also), with ErrorInfo (plus the extra metadata), and
// RetryInfo, BadRequest and ResolveDiagnostic where they apply.
func build(r metadpb.Reason, spec reasons.Spec, msg, field string, cause error, extra map[string]string) error {
	meta := map[string]string{"definite": boolString(spec.Definite)}
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
	var unanswered *peer.UnansweredError
	if errors.As(cause, &unanswered) {
		meta["leader_id"], meta["leader_addr"] = unanswered.LeaderID, unanswered.LeaderAddr
	}
	var mismatch *peer.ClusterIDMismatchError
	if errors.As(cause, &mismatch) {
		for k, v := range mismatch.Metadata() {
			meta[k] = v
		}
	}
	st := status.New(spec.Code, msg)
	details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: r.String(), Domain: ErrorDomain, Metadata: meta}}
	if spec.Retry > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(spec.Retry)})
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

// asStatus returns the gRPC status err is, if it is one itself. An error
// that merely wraps a status (a sentinel of the layers below around a
// forwarded call's answer) is not: it is classified by the table, whose
// sentinel says more than the status inside (status.FromError would
// unwrap it and lose that).
func asStatus(err error) (*status.Status, bool) {
	se, ok := err.(interface{ GRPCStatus() *status.Status }) //nolint:errorlint // the error itself, not what it wraps
	if !ok {
		return nil, false
	}
	st := se.GRPCStatus()
	return st, st != nil
}

// reasonOf returns the reason of a status error (REASON_UNSPECIFIED if it
// carries none this build knows).
func reasonOf(err error) metadpb.Reason { return reasons.FromError(err) }
