package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/api/reasons"
)

// Error is a metad failure as the server classified it (package
// api/reasons has the table). Every error a Client returns from a call that reached a
// server can be examined with AsError, and classified with errors.Is
// against the sentinels below.
type Error struct {
	Code   codes.Code
	Reason string // UPPER_SNAKE, e.g. APPEND_NOT_AT_END, NOT_LEADER
	// Definite is true when the operation certainly did not take effect.
	// When false it may have; retrying with the same request id is safe.
	Definite   bool
	Field      string // request field at fault, if any
	LeaderID   string
	LeaderAddr string
	// RetryDelay is set on retryable errors.
	RetryDelay time.Duration
	// Diagnostic is set on a failed Resolve: every candidate tried and why.
	Diagnostic *metadpb.ResolveDiagnostic
	// Appends is set on a refused CommitObject: every refused append (by
	// its index in the request), with its own reason; nothing committed.
	Appends []*metadpb.AppendRefusal
	Message string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("metad: %s (%s): %s", e.Reason, e.Code, e.Message)
	if e.Field != "" {
		s += " [field " + e.Field + "]"
	}
	return s
}

// Retryable reports whether the server asked to be retried.
func (e *Error) Retryable() bool { return e.RetryDelay > 0 }

// Is makes errors.Is(err, client.ErrX) true for the sentinels of e's
// reason, its group, and its retry and definiteness classes. An
// UNAVAILABLE, DEADLINE_EXCEEDED or CANCELLED error also matches the
// context's errors, so callers can test for deadlines one way.
func (e *Error) Is(target error) bool {
	if target == ErrRetryable {
		return e.Retryable()
	}
	if target == ErrIndeterminate {
		return !e.Definite
	}
	for _, s := range sentinelsOf(e) {
		if s == target {
			return true
		}
	}
	return false
}

// AsError extracts the server's classification from err.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// Reason returns the error's reason (UPPER_SNAKE, the server's
// google.rpc.ErrorInfo reason, or the gRPC code's name for a failure that
// never reached metad), or "" if err is not a metad error.
func Reason(err error) string {
	if e, ok := AsError(err); ok {
		return e.Reason
	}
	return ""
}

// FromStatus turns an error returned by the generated stubs (Client.Metad,
// Client.Cluster) into an *Error carrying the server's classification.
// Errors that are not gRPC statuses are returned unchanged. Call and the
// Client's methods do this already.
func FromStatus(err error) error { return fromStatus(err) }

// fromStatus decodes a gRPC status into *Error. A status without metad
// details (a transport failure, or a deadline that expired in flight)
// gets the code's UPPER_SNAKE name as its reason; a broken connection
// (UNAVAILABLE) is retryable and indeterminate: the request may or may not
// have reached a server.
func fromStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := AsError(err); ok {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	e := &Error{Code: st.Code(), Message: st.Message(), Reason: codeReason(st.Code())}
	found := false
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			found = true
			e.Reason = d.Reason
			e.Definite = d.Metadata["definite"] == "true"
			e.Field = d.Metadata["field"]
			e.LeaderID, e.LeaderAddr = d.Metadata["leader_id"], d.Metadata["leader_addr"]
		case *errdetails.RetryInfo:
			e.RetryDelay = d.RetryDelay.AsDuration()
		case *metadpb.ResolveDiagnostic:
			e.Diagnostic = d
		case *metadpb.CommitObjectRefusal:
			e.Appends = d.Appends
		}
	}
	if _, row, ok := reasons.Lookup(e.Reason); !found && ok && row.Transport {
		e.Definite, e.RetryDelay = row.Definite, row.Retry
	}
	return e
}

// codeReason names a gRPC code the way metad names reasons:
// DeadlineExceeded → DEADLINE_EXCEEDED, Canceled → CANCELLED (the
// server's spelling).
func codeReason(c codes.Code) string {
	if c == codes.Canceled {
		return ReasonCancelled
	}
	var b strings.Builder
	for i, r := range c.String() {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

// sentinelsOf lists the sentinels e matches by reason: the reason's own,
// the group of the code its row sends it with, and the group of the code
// it arrived with. A reason this client does not know falls back on its
// gRPC code, so an older client still classifies a newer server's errors
// by kind.
func sentinelsOf(e *Error) []error {
	r, row, ok := reasons.Lookup(e.Reason)
	if !ok {
		return codeSentinels[e.Code]
	}
	var group []error
	if !row.GroupByCode {
		// A reason sent with codes of more than one group
		// (QUARANTINE_NOT_VERIFIED) takes its group from the code alone.
		group = codeSentinels[row.Code]
	}
	return slices.Concat([]error{ownSentinel(r, row)}, group, codeSentinels[e.Code])
}

// ownSentinel is reason r's most specific sentinel: the one made from its
// row's text, or its code's group sentinel for a row without one.
func ownSentinel(r metadpb.Reason, row reasons.Row) error {
	if s, ok := ownSentinels[r]; ok {
		return s
	}
	if row.Sentinel != "" {
		return nil // a row with a text but no sentinel variable: a bug the tests catch
	}
	if g := codeSentinels[row.Code]; len(g) > 0 {
		return g[0]
	}
	return nil
}

// Sentinel returns the most specific sentinel of a reason, or nil for a
// reason this client does not know.
func Sentinel(reason string) error {
	if r, row, ok := reasons.Lookup(reason); ok {
		return ownSentinel(r, row)
	}
	return nil
}

// codeSentinels classifies errors by gRPC code: the groups.
var codeSentinels = map[codes.Code][]error{
	codes.InvalidArgument:    {ErrInvalidArgument},
	codes.NotFound:           {ErrNotFound},
	codes.FailedPrecondition: {ErrFailedPrecondition},
	codes.Aborted:            {ErrConflict},
	codes.Unavailable:        {ErrUnavailable},
	codes.ResourceExhausted:  {ErrUnavailable},
	codes.DeadlineExceeded:   {ErrDeadlineExceeded, context.DeadlineExceeded},
	codes.Canceled:           {ErrCancelled, context.Canceled},
	codes.Internal:           {ErrInternal},
	codes.Unauthenticated:    {ErrUnauthenticated},
	codes.PermissionDenied:   {ErrPermissionDenied},
	codes.Unimplemented:      {ErrUnimplemented},
}

// Is makes a failed Read match ErrRetryable (the data may be readable
// later), besides whatever its cause matches through Unwrap.
func (e *ReadError) Is(target error) bool { return target == ErrRetryable }
