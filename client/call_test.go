package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestDeadlineDuringRetryKeepsTheRetriedFailure: a retryable failure is
// retried, and the caller's deadline ends the retry in flight. The caller
// sees the failure it was retrying (reason, retryable), not the retry's
// bare DEADLINE_EXCEEDED, and can still test for the deadline.
func TestDeadlineDuringRetryKeepsTheRetriedFailure(t *testing.T) {
	c := &Client{cfg: Config{Timeout: time.Minute, MaxRetryDelay: time.Millisecond}}
	ctx, cancel := context.WithCancel(context.Background())
	ctx, cancelDeadline := context.WithDeadline(ctx, time.Now().Add(time.Hour))
	defer cancelDeadline()
	calls := 0
	rpc := func(ctx context.Context, _ struct{}, _ ...grpc.CallOption) (struct{}, error) {
		calls++
		if calls == 1 {
			return struct{}{}, wireError(codes.Unavailable, ReasonResolveUnavailable, false, time.Millisecond)
		}
		cancel() // the deadline arrives while the retry is in flight
		<-ctx.Done()
		return struct{}{}, status.Error(codes.Canceled, ctx.Err().Error())
	}
	_, err := Call(ctx, c, rpc, struct{}{})
	if Reason(err) != ReasonResolveUnavailable || !errors.Is(err, ErrRetryable) {
		t.Fatalf("err = %v (reason %q), want the retried RESOLVE_UNAVAILABLE, retryable", err, Reason(err))
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v: the context's end must stay matchable", err)
	}
	if calls != 2 {
		t.Fatalf("%d calls, want 2", calls)
	}
}

// TestFirstFailureAtTheDeadlineIsTheDeadline: with nothing retried, the
// deadline is the answer.
func TestFirstFailureAtTheDeadlineIsTheDeadline(t *testing.T) {
	c := &Client{cfg: Config{Timeout: time.Minute, MaxRetryDelay: time.Millisecond}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rpc := func(ctx context.Context, _ struct{}, _ ...grpc.CallOption) (struct{}, error) {
		return struct{}{}, status.Error(codes.DeadlineExceeded, "deadline")
	}
	_, err := Call(ctx, c, rpc, struct{}{})
	if Reason(err) != ReasonDeadlineExceeded {
		t.Fatalf("err = %v, want DEADLINE_EXCEEDED", err)
	}
}
