package workload

import (
	"bytes"
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/jepsen/history"
	"github.com/metad/metad/jepsen/model"
	"github.com/metad/metad/objectstore"
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

// oneTarget is a Metad server that resolves every offset to one target.
type oneTarget struct {
	metadpb.UnimplementedMetadServer
	target *metadpb.Target
}

func (s *oneTarget) Resolve(context.Context, *metadpb.ResolveRequest) (*metadpb.ResolveResponse, error) {
	return &metadpb.ResolveResponse{Outcome: metadpb.Outcome_TARGET, Target: s.target, CommittedEnd: 3}, nil
}

func (s *oneTarget) ReleasePin(context.Context, *metadpb.ReleasePinRequest) (*metadpb.ReleasePinResponse, error) {
	return &metadpb.ReleasePinResponse{}, nil
}

// A broker read records client.Read's answer: the target and the bytes
// it returned, which the checker holds to the committed checksum.
func TestBrokerReadIsRecorded(t *testing.T) {
	ctx := context.Background()
	store, err := objectstore.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	data, parts := model.Layout(3, history.Content{Offsets: []history.Range{{Start: 0, End: 3}}, Prefix: 2})
	info, err := store.Put(ctx, "k", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	b := parts[0]
	srv := grpc.NewServer()
	metadpb.RegisterMetadServer(srv, &oneTarget{target: &metadpb.Target{
		Key:    &metadpb.IndexKey{StreamId: 3, View: metadpb.View_COMMITTED, Start: 0},
		Object: &metadpb.ObjectRef{Key: "k", Identity: info.Identity}, Bytes: &metadpb.ByteRange{Offset: b.Offset, Length: b.Length},
		RecordRange: &metadpb.Range{Start: 0, End: 3}, Resolved: &metadpb.Range{Start: 1, End: 3}, PinId: 1,
		DataCrc32C: model.CRCOf(data[b.Offset : b.Offset+b.Length])}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Stop()
	cl, err := client.New(client.Config{Addrs: []string{ln.Addr().String()}, Objects: store, SpreadCalls: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rec := history.NewRecorder()
	w := &Workload{cfg: Config{Rec: rec, Broker: cl, OpTimeout: 3 * time.Second}}
	w.newBrokerReader(0).read(ctx, 3, model.Committed, 1)
	ops := rec.History().Ops
	if len(ops) != 1 || ops[0].Kind != history.KindRead || ops[0].Status != history.OK {
		t.Fatalf("recorded %+v", ops)
	}
	out := ops[0].Out
	if out.Target == nil || out.Target.Object.Identity != info.Identity || out.Data != model.Payloads(3, []history.Range{{Start: 0, End: 3}}) ||
		out.Read == nil || out.Read.Result != "ok" || out.Target.DataCRC == nil {
		t.Fatalf("read recorded as %+v, target %+v", out, out.Target)
	}
}
