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
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/api/reasons"
	"github.com/metad/metad/auth"
	"github.com/metad/metad/client"
	"github.com/metad/metad/fsm"
	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/peer"
	"github.com/metad/metad/raftstore"
	"github.com/metad/metad/resolver"
	"github.com/metad/metad/watch"
)

// wireCase is one error the server can send.
type wireCase struct {
	name string
	err  error
}

// reasonValues walks the Reason enum's descriptor (not a hand-made list):
// a reason added to the proto is covered, and fails here until it has a
// row.
func reasonValues() []metadpb.Reason {
	vals := metadpb.Reason(0).Descriptor().Values()
	var out []metadpb.Reason
	for i := range vals.Len() {
		if n := vals.Get(i).Number(); n != 0 {
			out = append(out, metadpb.Reason(n))
		}
	}
	return out
}

// reasonCase is the server-side error of reason r sent as form: what
// build makes of it, or for the client's own transport reason the bare
// status a connection failure looks like.
func reasonCase(r metadpb.Reason, form reasons.Spec) error {
	if reasons.Of(r).Transport {
		return status.Error(form.Code, "connection refused")
	}
	return build(r, form, "refused: "+r.String(), "", nil, nil)
}

// errorTableCases are the errors the server's own constructors build, so
// a new row of the failure table or a new RejectCode is covered without
// editing this test.
func errorTableCases() []wireCase {
	var cases []wireCase
	for n, name := range fsmpb.RejectCode_name {
		if n == 0 {
			continue
		}
		cases = append(cases, wireCase{"rejection " + name,
			rejectionError(&fsmpb.Rejection{Code: fsmpb.RejectCode(n), Field: "op.some_field", Message: "refused"})})
	}
	for _, row := range failureTable {
		cases = append(cases, wireCase{"failure " + row.reason.String(), toStatus(fmt.Errorf("wrapped: %w", row.err))})
	}
	ue := &resolver.UnavailableError{Attempts: 2, Cause: errors.New("every candidate refused")}
	qnv := reasons.Of(metadpb.Reason_QUARANTINE_NOT_VERIFIED).Spec
	return append(cases,
		wireCase{"resolve diagnostic", toStatus(fmt.Errorf("%w: %w", resolver.ErrUnavailable, ue))},
		wireCase{"invalidArgument", invalidArgument("name", "bad name %q", "x")},
		wireCase{"streamNotFound", streamNotFound("stream_id", "stream %d", 9)},
		wireCase{"notFound", notFound("node_id", "no such server")},
		wireCase{"pinShared", pinShared(7)},
		wireCase{"feature level", toStatus(fmt.Errorf("propose: %w", raftstore.ErrFeatureLevel))},
		wireCase{"quarantine not verified", quarantineNotVerified(qnv, "bytes differ")},
		wireCase{"quarantine not verified, store unavailable", quarantineNotVerified(reasons.StoreUnavailable, "store down")},
		wireCase{"unclassified", toStatus(errors.New("disk on fire"))},
		wireCase{"commit object refused", objectRefusal(objectRefusalResult())},
		wireCase{"commit object too large", tooLarge("appends", "%d appends", 5000)},
		wireCase{"watchCompacted", watchCompacted(fsm.StreamInfo{ID: 3, Version: 9}, watch.ErrCompacted)},
		wireCase{"watch slow consumer", watchCutOff(watch.ErrSlowConsumer, 3, 9)},
		wireCase{"watch reset", watchCutOff(watch.ErrReset, 3, 9)},
		wireCase{"watch on a node without a leader", watchCutOff(errLostLeader, 3, 9)},
		wireCase{"watch on a draining node", watchCutOff(errShuttingDown, 3, 9)},
		wireCase{"permission denied", authorize(context.Background(), anyone, "/metad.v1.Metad/NotInTheTable")},
		wireCase{"unauthenticated", authorize(context.Background(), anyone, metadpb.Peer_Propose_FullMethodName)},
	)
}

// anyone is open mode: any caller but on the node-to-node service, which
// needs the peer secret.
var anyone = auth.Settings{PeerSecret: "0123456789abcdef0123"}

// failingServer answers DescribeStream(i) with case i's error.
type failingServer struct {
	metadpb.UnimplementedMetadServer
	cases []wireCase
}

func (s *failingServer) DescribeStream(_ context.Context, req *metadpb.DescribeStreamRequest) (*metadpb.DescribeStreamResponse, error) {
	return nil, s.cases[req.StreamId].err
}

// overTheWire serves the cases from a real gRPC server on an in-process
// listener (bufconn) and returns, for each, the error the client package
// decodes from what arrived.
func overTheWire(t *testing.T, cases []wireCase) []error {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer()
	metadpb.RegisterMetadServer(srv, &failingServer{cases: cases})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()
	conn, err := grpc.NewClient("passthrough:///bufconn", grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	stub := metadpb.NewMetadClient(conn)
	out := make([]error, len(cases))
	for i := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, wireErr := stub.DescribeStream(ctx, &metadpb.DescribeStreamRequest{StreamId: uint64(i)})
		cancel()
		out[i] = client.FromStatus(wireErr)
	}
	return out
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
	codes.Unauthenticated:    client.ErrUnauthenticated,
	codes.PermissionDenied:   client.ErrPermissionDenied,
	codes.Unimplemented:      client.ErrUnimplemented,
}

// TestEveryReasonSurvivesTheWire sends every reason of the enum, in every
// form its row lists, through a real gRPC server to the client package,
// and checks what arrives against the table: the gRPC code, the
// ErrorInfo reason, definite or indeterminate, retryable with the row's
// delay, and errors.Is against the reason's sentinel and its code's group.
func TestEveryReasonSurvivesTheWire(t *testing.T) {
	type sent struct {
		reason metadpb.Reason
		form   reasons.Spec
	}
	var cases []wireCase
	var want []sent
	rows := reasons.All()
	for _, r := range reasonValues() {
		row, ok := rows[r]
		if !ok {
			t.Errorf("reason %s has no row in the error table", r)
			continue
		}
		for _, form := range row.Forms() {
			cases = append(cases, wireCase{fmt.Sprintf("%s as %+v", r, form), reasonCase(r, form)})
			want = append(want, sent{r, form})
		}
	}
	if len(reasonValues()) < 40 {
		t.Fatalf("only %d reasons: is the enum descriptor walked?", len(reasonValues()))
	}
	for i, wireErr := range overTheWire(t, cases) {
		name, w := cases[i].name, want[i]
		got, ok := client.AsError(wireErr)
		if !ok {
			t.Errorf("%s: client got %v, not a metad error", name, wireErr)
			continue
		}
		if got.Code != w.form.Code || got.Reason != w.reason.String() || got.Definite != w.form.Definite || got.RetryDelay != w.form.Retry {
			t.Errorf("%s: client decoded %s %s definite=%v retry=%v", name, got.Code, got.Reason, got.Definite, got.RetryDelay)
		}
		if errors.Is(got, client.ErrRetryable) != (w.form.Retry > 0) || errors.Is(got, client.ErrIndeterminate) == w.form.Definite {
			t.Errorf("%s: retryable=%v indeterminate=%v", name, errors.Is(got, client.ErrRetryable), errors.Is(got, client.ErrIndeterminate))
		}
		if s := client.Sentinel(got.Reason); s == nil || !errors.Is(got, s) {
			t.Errorf("%s: reason %s has no client sentinel it matches", name, got.Reason)
		}
		if g := codeGroup[got.Code]; g == nil || !errors.Is(got, g) {
			t.Errorf("%s: does not match its code's group sentinel %v", name, g)
		}
	}
}

// TestServerErrorsSurviveTheWire sends the errors the server's own
// constructors build (every FSM refusal, every failure-table row, the
// watch, quarantine, authorization and stream-set refusals) through a
// real gRPC server to the client package: what arrives is what the server
// built (reason, code, definiteness, retry delay, field, diagnostic), is
// sent in a form its reason's row lists, and matches the reason's
// sentinel and its code's group.
func TestServerErrorsSurviveTheWire(t *testing.T) {
	cases := errorTableCases()
	for i, wireErr := range overTheWire(t, cases) {
		tc := cases[i]
		got, ok := client.AsError(wireErr)
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
		if !sentAsListed(got) {
			t.Errorf("%s: %s sent as %s retry %v, a form its row does not list", tc.name, got.Reason, got.Code, got.RetryDelay)
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

// sentAsListed: e's code and retry delay are one of the forms of its
// reason's row. Definiteness is not compared: the server narrows the
// Raft rows per error (raftstore knows whether a command reached the log).
func sentAsListed(e *client.Error) bool {
	r, row, ok := reasons.Lookup(e.Reason)
	if !ok {
		return false
	}
	for _, f := range row.Forms() {
		if f.Code == e.Code && f.Retry == e.RetryDelay {
			if failureReasons()[r] || f.Definite == e.Definite {
				return true
			}
		}
	}
	return false
}

// failureReasons are the reasons of the failure table.
func failureReasons() map[metadpb.Reason]bool {
	out := map[metadpb.Reason]bool{}
	for _, row := range failureTable {
		out[row.reason] = true
	}
	return out
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

// TestEveryRejectCodeHasAReason: every refusal the state machine can
// produce has the reason of the same name and number (a missing one would
// reach clients as INTERNAL), and rejectionError sends it as that reason.
func TestEveryRejectCodeHasAReason(t *testing.T) {
	for n, name := range fsmpb.RejectCode_name {
		if n == 0 {
			continue
		}
		r, ok := rejectionReason(fsmpb.RejectCode(n))
		if !ok || r.String() != name || int32(r) != n {
			t.Errorf("RejectCode %s (%d) has no reason of its name and number (got %v)", name, n, r)
			continue
		}
		if got := reasonOf(rejectionError(&fsmpb.Rejection{Code: fsmpb.RejectCode(n)})); got != r {
			t.Errorf("RejectCode %s is sent as %v", name, got)
		}
	}
}

// TestEveryFailureRowIsDefiniteUnlessRaftSaysSo: a failure-table error
// that raftstore did not mark indeterminate leaves definite, whatever the
// row's usual form; context errors keep their row's (indeterminate), and
// so does a call the leader never answered (peer.ErrUnanswered).
func TestEveryFailureRowIsDefiniteUnlessRaftSaysSo(t *testing.T) {
	for _, row := range failureTable {
		got, _ := client.AsError(client.FromStatus(toStatus(fmt.Errorf("x: %w", row.err))))
		want := true
		if errors.Is(row.err, context.DeadlineExceeded) || errors.Is(row.err, context.Canceled) {
			want = reasons.Of(row.reason).Definite
		}
		if errors.Is(row.err, peer.ErrUnanswered) {
			want = false
		}
		if got == nil || got.Reason != row.reason.String() || got.Definite != want {
			t.Errorf("%v: got %+v, want %s definite=%v", row.err, got, row.reason, want)
		}
	}
}

// TestFeatureLevelRefusalIsDefinite: a command refused for the cluster's
// feature level (raftstore refuses it before proposing) reaches a client
// definite, FailedPrecondition, with its own sentinel, never INTERNAL.
func TestFeatureLevelRefusalIsDefinite(t *testing.T) {
	got, ok := client.AsError(client.FromStatus(toStatus(fmt.Errorf("lift: %w", raftstore.ErrFeatureLevel))))
	if !ok || got.Reason != metadpb.Reason_FEATURE_LEVEL.String() || got.Code != codes.FailedPrecondition || !got.Definite {
		t.Fatalf("feature-level refusal = %+v, want FEATURE_LEVEL, FailedPrecondition, definite", got)
	}
	if !errors.Is(got, client.ErrFeatureLevel) || !errors.Is(got, client.ErrFailedPrecondition) || errors.Is(got, client.ErrRetryable) {
		t.Fatalf("feature-level refusal %v: sentinels wrong", got)
	}
	for _, spec := range reasons.Of(metadpb.Reason_QUARANTINE_NOT_VERIFIED).Forms() {
		e, _ := client.AsError(client.FromStatus(quarantineNotVerified(spec, "x")))
		if !errors.Is(e, client.ErrQuarantineNotVerified) || !errors.Is(e, codeGroup[spec.Code]) {
			t.Errorf("quarantine not verified (%s): %v lacks its sentinel or its code's group", spec.Code, e)
		}
	}
}
