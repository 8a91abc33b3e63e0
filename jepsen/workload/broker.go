package workload

import (
	"context"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/jepsen/history"
	"github.com/metad/metad/jepsen/model"
)

// brokerReader reads through client.Read, the client library's own read
// path (resolve, read under the target's identity, data checksum check,
// report and fallback within the view), as a broker does. Its resolves are
// the library's and not in the history; its answers are (KindRead), and
// every byte it returns is held to the checksum its writer committed. The
// reports the library sends are recorded (recordingMetad), so a record it
// had quarantined is one the model knows may be passed over.
type brokerReader struct {
	w      *Workload
	client int
	rng    *rand.Rand
}

// brokerClient is the first broker reader's client id; its reports are
// recorded under brokerClient+50.
const brokerClient = 400

func (w *Workload) newBrokerReader(i int) *brokerReader {
	return &brokerReader{w: w, client: brokerClient + i, rng: w.rng(700 + i)}
}

func (br *brokerReader) run(ctx context.Context) {
	for alive(ctx) {
		br.w.gate.RLock()
		if t, ok := br.w.hotTarget(br.rng); ok {
			br.read(ctx, t.Stream, t.View, t.Resolved.Start)
		} else {
			h := br.w.streams[br.rng.IntN(len(br.w.streams))]
			view := model.Committed
			if br.rng.IntN(4) == 0 {
				view = model.TopicCompacted
			}
			end, trim := h.end.Load(), h.trim.Load()
			br.read(ctx, h.id, view, trim+uint64(br.rng.IntN(int(end-trim)+1)))
		}
		br.w.gate.RUnlock()
		sleepCtx(ctx, time.Duration(br.rng.IntN(20))*time.Millisecond)
	}
}

// read records one client.Read.
func (br *brokerReader) read(ctx context.Context, stream uint64, view string, o uint64) {
	op := history.Op{Kind: history.KindRead, Client: br.client, Node: "any", Stream: stream, In: history.Input{View: view, Offset: o}}
	cctx, cancel := br.w.opContext(ctx)
	defer cancel()
	op.Call = now()
	res, err := br.w.cfg.Broker.Read(cctx, stream, viewPB(view), o)
	op.Return = now()
	classify(&op, err, &attempts{}, false)
	if err == nil {
		op.Out = &history.Output{Outcome: res.Outcome.String(), Trim: res.Trim, CommittedEnd: res.CommittedEnd, ViewEnd: res.ViewEnd}
		for _, f := range res.Fallbacks {
			op.Out.Fallbacks = append(op.Out.Fallbacks, f.Kind.String())
		}
		if res.Target != nil {
			op.Out.Target = targetOf(res.Target)
			op.Out.Data = string(res.Data)
			op.Out.Read = &history.Watch{Result: "ok", At: op.Return}
		}
	}
	op.ID = br.w.cfg.Rec.Add(op)
}

// recordingMetad is the broker client's Metad stub: every
// ReportCandidateFailure attempt the library makes is recorded as a report
// op, with its answer.
type recordingMetad struct {
	metadpb.MetadClient
	w *Workload
}

// RecordReports makes cl's failure reports (client.Read sends them in the
// background) part of the history.
func (w *Workload) RecordReports(cl *client.Client) {
	cl.Metad = &recordingMetad{MetadClient: cl.Metad, w: w}
}

func (m *recordingMetad) ReportCandidateFailure(ctx context.Context, req *metadpb.ReportCandidateFailureRequest, opts ...grpc.CallOption) (*metadpb.ReportCandidateFailureResponse, error) {
	k := req.GetCandidate().GetKey()
	cand := history.Candidate{View: viewName(k.GetView()), Generation: k.GetGeneration(), Start: k.GetStart(), Version: req.GetCandidate().GetVersion()}
	op := history.Op{Kind: history.KindReport, Client: brokerClient + 50, Node: "any", Stream: k.GetStreamId(),
		In: history.Input{RequestID: req.RequestId, Report: &history.Report{Candidate: cand, Kind: req.Kind.String()}}}
	var a attempts
	op.Call = now()
	resp, err := wrap(&a, m.MetadClient.ReportCandidateFailure)(ctx, req, opts...)
	op.Return = now()
	classify(&op, err, &a, true)
	if err == nil {
		op.Out = &history.Output{Version: resp.Version, Report: &history.Verdict{Confirmed: resp.Confirmed,
			Quarantined: resp.Quarantined, Verdict: resp.Verdict}}
	}
	op.ID = m.w.cfg.Rec.Add(op)
	return resp, err
}
