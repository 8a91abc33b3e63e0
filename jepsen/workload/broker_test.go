package workload

import (
	"context"
	"testing"

	"google.golang.org/grpc"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/jepsen/history"
)

// confirmingMetad answers every report confirmed.
type confirmingMetad struct {
	metadpb.MetadClient
	calls int
}

func (c *confirmingMetad) ReportCandidateFailure(context.Context, *metadpb.ReportCandidateFailureRequest, ...grpc.CallOption) (*metadpb.ReportCandidateFailureResponse, error) {
	c.calls++
	return &metadpb.ReportCandidateFailureResponse{Confirmed: true, Quarantined: true, Version: 9}, nil
}

// The broker client's reports reach the server and the history: the
// model must know a record the library had quarantined.
func TestBrokerReportsAreRecorded(t *testing.T) {
	rec := history.NewRecorder()
	w := &Workload{cfg: Config{Rec: rec}}
	inner := &confirmingMetad{}
	m := &recordingMetad{MetadClient: inner, w: w}
	_, err := m.ReportCandidateFailure(context.Background(), &metadpb.ReportCandidateFailureRequest{
		Candidate: &metadpb.CandidateRef{Key: &metadpb.IndexKey{StreamId: 3, View: metadpb.View_COMMITTED, Generation: 2, Start: 40}, Version: 7},
		Kind:      metadpb.FailureKind_CORRUPT, RequestId: "r1"})
	if err != nil || inner.calls != 1 {
		t.Fatalf("report not passed on: %v, %d calls", err, inner.calls)
	}
	ops := rec.History().Ops
	if len(ops) != 1 {
		t.Fatalf("%d ops recorded", len(ops))
	}
	op := ops[0]
	want := history.Candidate{View: "COMMITTED", Generation: 2, Start: 40, Version: 7}
	if op.Kind != history.KindReport || op.Stream != 3 || op.Status != history.OK || op.In.Report.Candidate != want ||
		op.In.Report.Kind != "CORRUPT" || op.In.Report.False || !op.Out.Report.Confirmed {
		t.Fatalf("recorded %+v %+v %+v", op, op.In.Report, op.Out)
	}
}
