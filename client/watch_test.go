package client

import (
	"errors"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func statusWithInfo(t *testing.T, code codes.Code, reason string, meta map[string]string) error {
	t.Helper()
	st, err := status.New(code, "refused").WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: "metad.dev", Metadata: meta})
	if err != nil {
		t.Fatal(err)
	}
	return st.Err()
}

func TestCompactedErrorCarriesTheStreamState(t *testing.T) {
	w := &watchLoop{stream: 7, last: 40}
	err := w.classify(statusWithInfo(t, codes.FailedPrecondition, "WATCH_COMPACTED", map[string]string{
		"definite": "true", "version": "90", "committed_end": "1000", "trim": "200", "status": "SEALED"}))
	var ce *CompactedError
	if !errors.As(err, &ce) {
		t.Fatalf("got %T %v, want *CompactedError", err, err)
	}
	want := CompactedError{Stream: 7, From: 40, Version: 90, CommittedEnd: 1000, Trim: 200, Status: "SEALED", Err: ce.Err}
	if *ce != want || ce.Err == nil {
		t.Fatalf("got %+v, want %+v with the server's error", *ce, want)
	}
	if !errors.Is(err, ErrWatchCompacted) {
		t.Fatalf("reason %q: the server's error must stay reachable", Reason(err))
	}
}

func TestWatchRetriesWhatAnotherMemberOrLaterCanServe(t *testing.T) {
	w := &watchLoop{}
	for _, c := range []struct {
		err   error
		retry bool
	}{
		{statusWithInfo(t, codes.Unavailable, "WATCH_SLOW_CONSUMER", map[string]string{"last_version": "5"}), true},
		{statusWithInfo(t, codes.Unavailable, "NO_LEADER", nil), true},
		{status.Error(codes.Unavailable, "connection refused"), true},
		{statusWithInfo(t, codes.DeadlineExceeded, "DEADLINE_EXCEEDED", nil), true},
		{statusWithInfo(t, codes.NotFound, "STREAM_NOT_FOUND", nil), false},
		{statusWithInfo(t, codes.InvalidArgument, "INVALID_ARGUMENT", nil), false},
	} {
		if got := watchRetryable(w.classify(c.err)); got != c.retry {
			t.Errorf("%v: retryable %v, want %v", c.err, got, c.retry)
		}
	}
}
