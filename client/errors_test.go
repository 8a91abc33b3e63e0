package client

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/api/reasons"
)

// wireError builds a status the way the server does: ErrorInfo with the
// reason and metadata, RetryInfo when retry > 0.
func wireError(code codes.Code, reason string, definite bool, retry time.Duration, extra ...protoadapt.MessageV1) error {
	meta := map[string]string{"definite": fmt.Sprint(definite)}
	details := []protoadapt.MessageV1{&errdetails.ErrorInfo{Reason: reason, Domain: "metad.dev", Metadata: meta}}
	if retry > 0 {
		details = append(details, &errdetails.RetryInfo{RetryDelay: durationpb.New(retry)})
	}
	st, err := status.New(code, "msg").WithDetails(append(details, extra...)...)
	if err != nil {
		panic(err)
	}
	return st.Err()
}

func TestFromStatusDecodesDetails(t *testing.T) {
	st, _ := status.New(codes.Unavailable, "follower").WithDetails(
		&errdetails.ErrorInfo{Reason: ReasonNotLeader, Metadata: map[string]string{"definite": "true", "leader_id": "n2", "leader_addr": "10.0.0.2:7420", "field": "x"}},
		&errdetails.RetryInfo{RetryDelay: durationpb.New(50 * time.Millisecond)},
		&metadpb.ResolveDiagnostic{Attempts: 3},
	)
	e, ok := AsError(fromStatus(st.Err()))
	if !ok {
		t.Fatal("not an *Error")
	}
	if e.Reason != ReasonNotLeader || !e.Definite || e.LeaderID != "n2" || e.LeaderAddr != "10.0.0.2:7420" ||
		e.Field != "x" || e.RetryDelay != 50*time.Millisecond || e.Diagnostic.GetAttempts() != 3 || e.Message != "follower" {
		t.Errorf("decoded %+v", e)
	}
}

// reasonNames walks the Reason enum's descriptor, so a reason added to
// the proto is covered without editing a list.
func reasonNames() []string {
	vals := metadpb.Reason(0).Descriptor().Values()
	var names []string
	for i := range vals.Len() {
		if vals.Get(i).Number() != 0 {
			names = append(names, string(vals.Get(i).Name()))
		}
	}
	return names
}

// Every reason maps to its own sentinel and to its group; nothing else.
func TestEveryReasonHasItsSentinelAndGroup(t *testing.T) {
	groups := []error{ErrInvalidArgument, ErrNotFound, ErrFailedPrecondition, ErrConflict, ErrUnavailable, ErrDeadlineExceeded,
		ErrCancelled, ErrInternal, ErrUnauthenticated, ErrPermissionDenied, ErrUnimplemented}
	names := reasonNames()
	for _, reason := range names {
		code := codes.Unknown // the reason alone must place it in its group
		if _, row, _ := reasons.Lookup(reason); row.GroupByCode {
			code = row.Code // sent with codes of two groups; its group is the code's
		}
		err := fromStatus(wireError(code, reason, true, 0))
		if got := Reason(err); got != reason {
			t.Errorf("Reason = %q, want %q", got, reason)
		}
		own := Sentinel(reason)
		if own == nil || !errors.Is(err, own) {
			t.Errorf("%s: has no sentinel, or does not match it", reason)
		}
		inGroups := 0
		for _, g := range groups {
			if errors.Is(err, g) {
				inGroups++
			}
		}
		if inGroups != 1 {
			t.Errorf("%s is in %d groups, want exactly 1", reason, inGroups)
		}
		for _, other := range names {
			os := Sentinel(other)
			if other != reason && os != nil && !contains(groups, os) && errors.Is(err, os) {
				t.Errorf("%s also matches %s's sentinel", reason, other)
			}
		}
	}
}

// TestQuarantineNotVerifiedTakesItsCodesGroup: the one reason sent with
// codes of two groups matches its sentinel and the group of the code it
// arrived with, not the other.
func TestQuarantineNotVerifiedTakesItsCodesGroup(t *testing.T) {
	for code, groups := range map[codes.Code][2]error{
		codes.FailedPrecondition: {ErrFailedPrecondition, ErrUnavailable},
		codes.Unavailable:        {ErrUnavailable, ErrFailedPrecondition},
	} {
		err := fromStatus(wireError(code, ReasonQuarantineNotVerified, true, 0))
		if !errors.Is(err, ErrQuarantineNotVerified) || !errors.Is(err, groups[0]) || errors.Is(err, groups[1]) {
			t.Errorf("%s with %v: want its sentinel and %v only", ReasonQuarantineNotVerified, code, groups[0])
		}
	}
}

// TestReasonConstantsNameTheEnum: every Reason* constant of this package
// is a reason's wire name, and every reason has one.
func TestReasonConstantsNameTheEnum(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "sentinels.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && strings.HasPrefix(name.Name, "Reason") {
					consts[strings.Trim(lit.Value, `"`)] = name.Name
				}
			}
		}
	}
	for value, name := range consts {
		if _, ok := metadpb.Reason_value[value]; !ok {
			t.Errorf("%s = %q is not a reason of metadpb.Reason", name, value)
		}
	}
	for _, reason := range reasonNames() {
		if _, ok := consts[reason]; !ok {
			t.Errorf("reason %s has no Reason constant", reason)
		}
	}
}

func TestSpecificSentinels(t *testing.T) {
	cases := []struct {
		err  error
		want []error
		not  []error
	}{
		{wireError(codes.NotFound, ReasonStreamNotFound, true, 0), []error{ErrStreamNotFound, ErrNotFound}, []error{ErrRetryable, ErrIndeterminate, ErrInvalidArgument}},
		{wireError(codes.Unavailable, ReasonNotLeader, true, 50*time.Millisecond), []error{ErrNotLeader, ErrUnavailable, ErrRetryable}, []error{ErrIndeterminate, ErrNoLeader}},
		{wireError(codes.Unavailable, ReasonCommitTimeout, false, 200*time.Millisecond), []error{ErrCommitTimeout, ErrRetryable, ErrIndeterminate}, []error{ErrNotLeader}},
		{wireError(codes.Aborted, ReasonAppendNotAtEnd, true, 0), []error{ErrAppendNotAtEnd, ErrConflict}, []error{ErrRetryable, ErrFailedPrecondition}},
		{wireError(codes.DeadlineExceeded, ReasonDeadlineExceeded, false, 0), []error{ErrDeadlineExceeded, context.DeadlineExceeded, ErrIndeterminate}, []error{ErrRetryable}},
		{wireError(codes.Canceled, ReasonCancelled, false, 0), []error{ErrCancelled, context.Canceled}, []error{context.DeadlineExceeded}},
	}
	for _, c := range cases {
		err := fromStatus(c.err)
		for _, w := range c.want {
			if !errors.Is(err, w) {
				t.Errorf("%v: want errors.Is %v", err, w)
			}
		}
		for _, n := range c.not {
			if errors.Is(err, n) {
				t.Errorf("%v: must not be %v", err, n)
			}
		}
	}
}

// A failure that never reached metad (no ErrorInfo) gets the code's
// UPPER_SNAKE name: one spelling, whoever produced it.
func TestTransportFailuresGetUpperSnakeReasons(t *testing.T) {
	for code, want := range map[codes.Code]string{
		codes.DeadlineExceeded: ReasonDeadlineExceeded, codes.Canceled: ReasonCancelled,
		codes.Unavailable: ReasonUnavailable, codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
	} {
		err := fromStatus(status.Error(code, "x"))
		if got := Reason(err); got != want {
			t.Errorf("%v: reason %q, want %q", code, got, want)
		}
	}
	down := fromStatus(status.Error(codes.Unavailable, "connection refused"))
	if !errors.Is(down, ErrRetryable) || !errors.Is(down, ErrIndeterminate) || !errors.Is(down, ErrUnavailable) {
		t.Errorf("a broken connection must be retryable, indeterminate, unavailable: %v", down)
	}
	if !errors.Is(fromStatus(status.Error(codes.DeadlineExceeded, "x")), context.DeadlineExceeded) {
		t.Error("a deadline must match context.DeadlineExceeded")
	}
}

// A reason this client does not know (from a newer server) is classified
// by its gRPC code.
func TestUnknownReasonFallsBackOnCode(t *testing.T) {
	err := fromStatus(wireError(codes.NotFound, "SOMETHING_NEW_NOT_FOUND", true, 0))
	if !errors.Is(err, ErrNotFound) || Sentinel("SOMETHING_NEW_NOT_FOUND") != nil {
		t.Errorf("unknown NotFound reason: %v", err)
	}
}

func TestNonStatusErrorsPassThrough(t *testing.T) {
	plain := errors.New("disk on fire")
	if got := fromStatus(plain); got != plain || Reason(got) != "" { //nolint:errorlint // the very error must come back
		t.Errorf("fromStatus(plain) = %v", got)
	}
	if fromStatus(nil) != nil {
		t.Error("fromStatus(nil) != nil")
	}
	decoded := fromStatus(wireError(codes.NotFound, ReasonPinNotFound, true, 0))
	if fromStatus(decoded) != decoded { //nolint:errorlint // the very error must come back
		t.Error("decoding twice must be a no-op")
	}
}

func TestLeaderMoved(t *testing.T) {
	for _, c := range []struct {
		err   error
		moved bool
	}{
		{wireError(codes.Unavailable, ReasonNotLeader, true, time.Millisecond), true},
		{wireError(codes.Unavailable, ReasonNoLeader, true, time.Millisecond), true},
		{wireError(codes.Unavailable, ReasonShuttingDown, false, time.Millisecond), true},
		{status.Error(codes.DeadlineExceeded, "paused leader"), true},
		{status.Error(codes.Unavailable, "connection refused"), true},
		{errors.New("not a status"), true},
		{wireError(codes.NotFound, ReasonStreamNotFound, true, 0), false},
		{wireError(codes.ResourceExhausted, ReasonOverloaded, true, time.Millisecond), false},
		{wireError(codes.Aborted, ReasonAppendNotAtEnd, true, 0), false},
	} {
		if got := leaderMoved(c.err); got != c.moved {
			t.Errorf("leaderMoved(%v) = %v, want %v", c.err, got, c.moved)
		}
	}
}

func TestOutcomeError(t *testing.T) {
	if OutcomeError(metadpb.Outcome_TARGET) != nil {
		t.Error("TARGET is not an error")
	}
	for o, want := range map[metadpb.Outcome]error{
		metadpb.Outcome_EOF: ErrEOF, metadpb.Outcome_OFFSET_TRIMMED: ErrTrimmed,
		metadpb.Outcome_VIEW_END: ErrViewEnd, metadpb.Outcome_NOT_FOUND: ErrStreamNotFound,
	} {
		if err := OutcomeError(o); !errors.Is(err, want) {
			t.Errorf("OutcomeError(%v) = %v, want %v", o, err, want)
		}
	}
	if !errors.Is(OutcomeError(metadpb.Outcome_NOT_FOUND), ErrNotFound) {
		t.Error("a resolve's NOT_FOUND must match ErrNotFound")
	}
}

func contains(list []error, e error) bool {
	for _, x := range list {
		if x == e { //nolint:errorlint // the list holds the sentinels themselves
			return true
		}
	}
	return false
}

func TestReadErrorIsRetryableAndKeepsItsCause(t *testing.T) {
	err := error(&ReadError{Cause: context.DeadlineExceeded})
	if !errors.Is(err, ErrRetryable) || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrNotFound) {
		t.Errorf("ReadError classification: %v", err)
	}
	cause := fromStatus(wireError(codes.Unavailable, ReasonResolveUnavailable, true, 50*time.Millisecond))
	if err := error(&ReadError{Cause: cause}); !errors.Is(err, ErrResolveUnavailable) {
		t.Errorf("ReadError hides its cause: %v", err)
	}
}
