package client

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/metad/metad/api/metadpb"
)

// Error is a metad failure as the server classified it (see api/errors.go
// for the table). Every error a Client returns from a call that reached a
// server can be examined with AsError.
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
	Message    string
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

// AsError extracts the server's classification from err.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// Reason returns the error's reason, or "" if err is not a metad error.
func Reason(err error) string {
	if e, ok := AsError(err); ok {
		return e.Reason
	}
	return ""
}

// fromStatus decodes a gRPC status into *Error. A status without metad
// details (transport failures) becomes an Error with reason UNAVAILABLE or
// the code's name, definite only where gRPC guarantees the call never left.
func fromStatus(err error) error {
	st, ok := status.FromError(err)
	if !ok || err == nil {
		return err
	}
	e := &Error{Code: st.Code(), Message: st.Message(), Reason: st.Code().String()}
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
		}
	}
	if !found && st.Code() == codes.Unavailable {
		// The connection failed; the request may or may not have reached a
		// server. Retryable, not definite.
		e.Reason, e.RetryDelay = "UNAVAILABLE", 100*time.Millisecond
	}
	return e
}
