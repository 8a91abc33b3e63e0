package api

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/raftstore"
	"github.com/metad/metad/resolver"
	"github.com/metad/metad/watch"
)

// wireCase is one error the server can send, built by the server's own
// constructors from one row of the error table.
type wireCase struct {
	name string
	err  error
}

// errorTableCases walks the error table, so a new row is covered without
// editing this test.
func errorTableCases() []wireCase {
	var cases []wireCase
	for code := range rejectionTable {
		cases = append(cases, wireCase{"rejection " + code.String(),
			rejectionError(&fsmpb.Rejection{Code: code, Field: "op.some_field", Message: "refused"})})
	}
	for _, row := range failureTable {
		cases = append(cases, wireCase{"failure " + row.reason, toStatus(fmt.Errorf("wrapped: %w", row.err))})
	}
	ue := &resolver.UnavailableError{Attempts: 2, Cause: errors.New("every candidate refused")}
	return append(cases,
		wireCase{"resolve diagnostic", toStatus(fmt.Errorf("%w: %w", resolver.ErrUnavailable, ue))},
		wireCase{"invalidArgument", invalidArgument("name", "bad name %q", "x")},
		wireCase{"streamNotFound", streamNotFound("stream_id", "stream %d", 9)},
		wireCase{"notFound", notFound("node_id", "no such server")},
		wireCase{"pinShared", pinShared(7)},
		wireCase{"feature level", toStatus(fmt.Errorf("propose: %w", raftstore.ErrFeatureLevel))},
		wireCase{"quarantine not verified", quarantineNotVerified(errorSpec{codes.FailedPrecondition, true, 0}, "bytes differ")},
		wireCase{"quarantine not verified, store unavailable", quarantineNotVerified(errorSpec{codes.Unavailable, true, time.Second}, "store down")},
		wireCase{"unclassified", toStatus(errors.New("disk on fire"))},
		wireCase{"commit object refused", objectRefusal(objectRefusalResult())},
		wireCase{"commit object too large", tooLarge("appends", "%d appends", 5000)},
		wireCase{"watchCompacted", watchCompacted(fsm.StreamInfo{ID: 3, Version: 9}, watch.ErrCompacted)},
		wireCase{"watch slow consumer", watchCutOff(watch.ErrSlowConsumer, 3, 9)},
		wireCase{"watch reset", watchCutOff(watch.ErrReset, 3, 9)},
		wireCase{"watch on a node without a leader", watchCutOff(errLostLeader, 3, 9)},
		wireCase{"watch on a draining node", watchCutOff(errShuttingDown, 3, 9)},
	)
}

// failingServer answers DescribeStream(i) with case i's error.
type failingServer struct {
	metadpb.UnimplementedMetadServer
	cases []wireCase
}

func (s *failingServer) DescribeStream(_ context.Context, req *metadpb.DescribeStreamRequest) (*metadpb.DescribeStreamResponse, error) {
	return nil, s.cases[req.StreamId].err
}

// codeGroup is the client sentinel every reason with this code must match.
var codeGroup = map[codes.Code]error{
	codes.InvalidArgument:    client.ErrInvalidArgument,
	codes.NotFound:           client.ErrNotFound,
	codes.FailedPrecondition: client.ErrFailedPrecondition,
	codes.Aborted:            client.ErrConflict,
	codes.Unavailable:        client.ErrUnavailable,
	codes.ResourceExhausted:  client.ErrUnavailable,
	codes.DeadlineExceeded:   client.ErrDeadlineExceeded,
	codes.Canceled:           client.ErrCancelled,
	codes.Internal:           client.ErrInternal,
}

// TestErrorTableSurvivesTheWire sends every row of the error table through
// a real gRPC server and client over loopback and checks that the client
// decodes what the server built: reason, code, definiteness, retry delay,
// field and diagnostic, and a sentinel for the reason and its group.
func TestErrorTableSurvivesTheWire(t *testing.T) {
	cases := errorTableCases()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	metadpb.RegisterMetadServer(srv, &failingServer{cases: cases})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	c, err := client.New(client.Config{Addrs: []string{lis.Addr().String()}, SpreadCalls: true})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()

	for i, tc := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, wireErr := c.Metad.DescribeStream(ctx, &metadpb.DescribeStreamRequest{StreamId: uint64(i)})
		cancel()
		got, ok := client.AsError(client.FromStatus(wireErr))
		if !ok {
			t.Errorf("%s: client got %v, not a metad error", tc.name, wireErr)
			continue
		}
		want, _ := client.AsError(client.FromStatus(tc.err)) // as built, before the wire
		if got.Code != want.Code || got.Reason != want.Reason || got.Definite != want.Definite ||
			got.RetryDelay != want.RetryDelay || got.Field != want.Field || got.Message != want.Message ||
			(got.Diagnostic == nil) != (want.Diagnostic == nil) || len(got.Appends) != len(want.Appends) {
			t.Errorf("%s: server built %+v, client decoded %+v", tc.name, want, got)
		}
		if s := client.Sentinel(got.Reason); s == nil || !errors.Is(got, s) {
			t.Errorf("%s: reason %s has no client sentinel", tc.name, got.Reason)
		}
		if g := codeGroup[got.Code]; g == nil || !errors.Is(got, g) {
			t.Errorf("%s: reason %s (code %s) does not match its code's group sentinel %v", tc.name, got.Reason, got.Code, g)
		}
		if errors.Is(got, client.ErrRetryable) != (want.RetryDelay > 0) {
			t.Errorf("%s: retryable %v, but retry delay %v", tc.name, errors.Is(got, client.ErrRetryable), want.RetryDelay)
		}
	}
}

// objectRefusalResult is a CommitObject refused for two of its appends.
func objectRefusalResult() *fsmpb.Result {
	stale := &fsmpb.Rejection{Code: fsmpb.RejectCode_STALE_EPOCH, Field: "appends[1].writer_epoch", Message: "stale"}
	cas := &fsmpb.Rejection{Code: fsmpb.RejectCode_APPEND_NOT_AT_END, Field: "appends[3].expected_start", Message: "not at end"}
	return &fsmpb.Result{
		Rejection: &fsmpb.Rejection{Code: stale.Code, Field: "commit_object." + stale.Field, Message: "2 of 4 appends refused"},
		AppendRejections: []*fsmpb.AppendRejection{
			{Index: 1, StreamId: 7, Rejection: stale, WriterEpoch: 3},
			{Index: 3, StreamId: 9, Rejection: cas, CommittedEnd: 40},
		},
	}
}

// TestCommitObjectRefusalNamesEveryAppend: a refused stream-set object
// reaches the client with the first refused append's reason and field,
// and every refused append with its own reason, field and stream state.
func TestCommitObjectRefusalNamesEveryAppend(t *testing.T) {
	got, ok := client.AsError(client.FromStatus(objectRefusal(objectRefusalResult())))
	if !ok || got.Reason != "STALE_EPOCH" || got.Field != "appends[1].writer_epoch" || !got.Definite || !errors.Is(got, client.ErrStaleEpoch) {
		t.Fatalf("refusal = %+v, want STALE_EPOCH at appends[1].writer_epoch, definite", got)
	}
	if len(got.Appends) != 2 {
		t.Fatalf("appends = %v, want 2", got.Appends)
	}
	a, b := got.Appends[0], got.Appends[1]
	if a.Index != 1 || a.StreamId != 7 || a.Reason != "STALE_EPOCH" || a.Field != "appends[1].writer_epoch" || a.WriterEpoch != 3 ||
		b.Index != 3 || b.StreamId != 9 || b.Reason != "APPEND_NOT_AT_END" || b.CommittedEnd != 40 {
		t.Fatalf("appends = %v", got.Appends)
	}
}

// Every refusal the state machine can produce has a row in the table (a
// missing one would reach clients as INTERNAL, indeterminate).
func TestEveryRejectCodeHasARow(t *testing.T) {
	for n, name := range fsmpb.RejectCode_name {
		if n == 0 {
			continue
		}
		if _, ok := rejectionTable[fsmpb.RejectCode(n)]; !ok {
			t.Errorf("RejectCode %s has no row in rejectionTable", name)
		}
	}
}

// TestFeatureLevelRefusalIsDefinite: a command refused for the cluster's
// feature level (raftstore refuses it before proposing) reaches a client
// definite, FailedPrecondition, with its own sentinel, never INTERNAL.
func TestFeatureLevelRefusalIsDefinite(t *testing.T) {
	got, ok := client.AsError(client.FromStatus(toStatus(fmt.Errorf("lift: %w", raftstore.ErrFeatureLevel))))
	if !ok || got.Reason != ReasonFeatureLevel || got.Code != codes.FailedPrecondition || !got.Definite {
		t.Fatalf("feature-level refusal = %+v, want FEATURE_LEVEL, FailedPrecondition, definite", got)
	}
	if !errors.Is(got, client.ErrFeatureLevel) || !errors.Is(got, client.ErrFailedPrecondition) || errors.Is(got, client.ErrRetryable) {
		t.Fatalf("feature-level refusal %v: sentinels wrong", got)
	}
	for _, spec := range []errorSpec{{codes.FailedPrecondition, true, 0}, {codes.Unavailable, true, time.Second}} {
		e, _ := client.AsError(client.FromStatus(quarantineNotVerified(spec, "x")))
		if !errors.Is(e, client.ErrQuarantineNotVerified) || !errors.Is(e, codeGroup[spec.code]) {
			t.Errorf("quarantine not verified (%s): %v lacks its sentinel or its code's group", spec.code, e)
		}
	}
}
