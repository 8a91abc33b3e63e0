package workload

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/clock"
	"github.com/metad/metad/jepsen/history"
	"github.com/metad/metad/jepsen/model"
)

// Failure kinds a report may name (metad.proto FailureKind), the ones that
// would quarantine a record if the server took them on trust.
var falseKinds = []metadpb.FailureKind{metadpb.FailureKind_CORRUPT, metadpb.FailureKind_OBJECT_MISSING,
	metadpb.FailureKind_IDENTITY_MISMATCH}

// falseReporter resolves, reads the target's bytes intact, and then
// reports the candidate as broken anyway (CORRUPT, OBJECT_MISSING or
// IDENTITY_MISMATCH): the server must check the report against the store
// and answer that it is not confirmed (G10: nothing a client
// reports may make a committed offset unreadable while intact bytes exist).
type falseReporter struct {
	w      *Workload
	client int
	rng    *rand.Rand
}

func (w *Workload) newFalseReporter(i int) *falseReporter {
	return &falseReporter{w: w, client: 200 + i, rng: w.rng(500 + i)}
}

// run reports each target right after reading it intact; when a read
// fails (the store is down, the object hidden) it reports the last target
// it read intact instead, so reports also reach a server whose store cannot
// answer — and must not be confirmed then either.
func (fr *falseReporter) run(ctx context.Context) {
	var last *history.Target
	for alive(ctx) {
		h := fr.w.streams[fr.rng.IntN(len(fr.w.streams))]
		node := fr.rng.IntN(len(fr.w.cfg.Clients))
		view := model.Committed
		if fr.rng.IntN(4) == 0 {
			view = model.TopicCompacted
		}
		kind := falseKinds[fr.rng.IntN(len(falseKinds))]
		fr.w.gate.RLock()
		if end, trim := h.end.Load(), h.trim.Load(); end > trim {
			o := trim + uint64(fr.rng.IntN(int(end-trim)))
			op := fr.w.resolveOnce(ctx, node, fr.client, h, view, o, nil, false)
			if op.Out != nil && op.Out.Target != nil && op.Out.Read != nil && op.Out.Read.Result == "ok" {
				last = op.Out.Target
			}
			if last != nil {
				fr.w.Report(ctx, node, fr.client, *last, kind.String(), true)
			}
		}
		fr.w.gate.RUnlock()
		sleepCtx(ctx, time.Duration(50+fr.rng.IntN(100))*time.Millisecond)
	}
}

// Report records a ReportCandidateFailure of target's candidate, through
// node's client. isFalse: the reporter read the bytes intact.
func (w *Workload) Report(ctx context.Context, node, clientID int, t history.Target, kind string, isFalse bool) history.Op {
	cl := w.cfg.Clients[node]
	cand := history.Candidate{View: t.View, Generation: t.Generation, Start: t.Start, Version: t.Version}
	op := history.Op{Kind: history.KindReport, Client: clientID, Node: w.cfg.NodeIDs[node], Stream: t.Stream,
		In: history.Input{RequestID: client.NewRequestID(), Report: &history.Report{Candidate: cand, Object: t.Object, Kind: kind, False: isFalse}}}
	req := &metadpb.ReportCandidateFailureRequest{
		Candidate: &metadpb.CandidateRef{Key: &metadpb.IndexKey{StreamId: t.Stream, View: viewPB(t.View), Generation: t.Generation,
			Start: t.Start}, Version: t.Version},
		Kind: metadpb.FailureKind(metadpb.FailureKind_value[kind]), Detail: "jepsen: " + reportDetail(kind, isFalse), RequestId: op.In.RequestID}
	var a attempts
	op.Call = now()
	resp, err := settle(ctx, w, cl, &a, cl.Metad.ReportCandidateFailure, req)
	op.Return = now()
	classify(&op, err, &a, true)
	if err == nil {
		op.Out = &history.Output{Version: resp.Version, Report: &history.Verdict{Confirmed: resp.Confirmed,
			Quarantined: resp.Quarantined, Verdict: resp.Verdict}}
	}
	op.ID = w.cfg.Rec.Add(op)
	return op
}

func reportDetail(kind string, isFalse bool) string {
	switch {
	case isFalse:
		return "false report: the bytes were just read intact"
	case kind == metadpb.FailureKind_CORRUPT.String():
		return "the bytes read failed the target's data checksum"
	}
	return "the object was hidden by the flapping nemesis"
}

// noteTarget remembers a target whose bytes a reader just read intact,
// for the flapping nemesis to choose from.
func (w *Workload) noteTarget(t history.Target) {
	w.recentMu.Lock()
	defer w.recentMu.Unlock()
	const keep = 64
	if len(w.recent) >= keep {
		w.recent = slices.Delete(w.recent, 0, 1)
	}
	w.recent = append(w.recent, t)
}

// FlapTarget returns one of the targets readers recently read intact
// (pick chooses which), for the flapping nemesis: an object the cluster
// references.
func (w *Workload) FlapTarget(pick int) (history.Target, bool) {
	w.recentMu.Lock()
	defer w.recentMu.Unlock()
	if len(w.recent) == 0 {
		return history.Target{}, false
	}
	return w.recent[pick%len(w.recent)], true
}

// FreshTargets returns up to n targets readers recently read intact, of
// distinct objects, those deepest above their stream's trim point first:
// the corrupt nemesis rewrites them, and they should stay untrimmed while
// the fault holds.
func (w *Workload) FreshTargets(n int) []history.Target {
	w.recentMu.Lock()
	cands := slices.Clone(w.recent)
	w.recentMu.Unlock()
	depth := func(t history.Target) int64 {
		h := w.hintOf(t.Stream)
		if h == nil {
			return -1
		}
		return int64(t.RecordRange.Start) - int64(h.trim.Load())
	}
	slices.SortStableFunc(cands, func(a, b history.Target) int { return cmp.Compare(depth(b), depth(a)) })
	var out []history.Target
	seen := map[history.Object]bool{}
	for _, t := range cands {
		if len(out) == n || depth(t) < 0 {
			break
		}
		if !seen[t.Object] && t.Bytes.Length > 0 {
			seen[t.Object] = true
			out = append(out, t)
		}
	}
	return out
}

// Heat makes readers re-read the offsets of targets (half their resolves,
// until Cool), as consumers re-read hot data: the corrupt nemesis heats
// the targets whose bytes it rewrote, so readers meet the bad bytes while
// they are bad, and must refuse them.
func (w *Workload) Heat(ts []history.Target) {
	w.recentMu.Lock()
	defer w.recentMu.Unlock()
	w.hot = slices.Clone(ts)
}

// Cool ends Heat.
func (w *Workload) Cool() {
	w.recentMu.Lock()
	defer w.recentMu.Unlock()
	w.hot = nil
}

// hotTarget returns, half the time while targets are hot, one of them.
func (w *Workload) hotTarget(rng *rand.Rand) (history.Target, bool) {
	w.recentMu.Lock()
	defer w.recentMu.Unlock()
	if len(w.hot) == 0 || rng.IntN(2) == 0 {
		return history.Target{}, false
	}
	t := w.hot[rng.IntN(len(w.hot))]
	return t, w.hintOf(t.Stream) != nil // streams are set by Setup, then only read
}

// ReportHidden is the flapping nemesis's true report: the object of t was
// hidden, so OBJECT_MISSING should be confirmed and quarantine the record
// until the repair job sees the bytes again.
func (w *Workload) ReportHidden(ctx context.Context, t history.Target) history.Op {
	return w.Report(ctx, 0, 300, t, metadpb.FailureKind_OBJECT_MISSING.String(), false)
}

// DrainQuarantine waits, polling, until every quarantined record names an
// object the harness replaced (its old bytes may be gone for good), at
// most until deadline, and records the last listing (Final). Quarantine of
// intact bytes heals by itself within one repair scan interval (issue 12);
// what is still listed at the deadline did not.
func (w *Workload) DrainQuarantine(ctx context.Context, deadline time.Time) history.Op {
	replaced := map[string]bool{}
	for _, wr := range w.writers {
		for _, k := range wr.appends {
			if k.replaced {
				replaced[k.obj.Key] = true
			}
		}
	}
	for {
		op := w.listQuarantined(ctx)
		healed := op.Status == history.OK
		if healed {
			for _, q := range op.Out.Quarantined {
				healed = healed && replaced[q.Object.Key]
			}
		}
		if healed || !clock.Real.Now().Before(deadline) || ctx.Err() != nil {
			op.ID = w.cfg.Rec.Add(op)
			return op
		}
		sleepCtx(ctx, 250*time.Millisecond)
	}
}

// listQuarantined reads every quarantined record (all pages).
func (w *Workload) listQuarantined(ctx context.Context) history.Op {
	op := history.Op{Kind: history.KindQuarantine, Client: 998, Node: "any", Final: true, Out: &history.Output{}}
	cctx, cancel := w.opContext(ctx)
	defer cancel()
	op.Call = now()
	var after *metadpb.IndexKey
	var err error
	for pages := 0; pages < 100; pages++ {
		var resp *metadpb.ListQuarantinedResponse
		resp, err = client.Call(cctx, w.cfg.All, w.cfg.All.Metad.ListQuarantined, &metadpb.ListQuarantinedRequest{After: after, Limit: 500})
		if err != nil {
			break
		}
		for _, r := range resp.Records {
			k := r.GetKey()
			op.Out.Quarantined = append(op.Out.Quarantined, history.Quarantined{Stream: k.GetStreamId(),
				Candidate: history.Candidate{View: viewName(k.GetView()), Generation: k.GetGeneration(), Start: k.GetStart(), Version: r.GetVersion()},
				Range:     rangeOf(r.GetRecord().GetRange()), Object: history.Object{Key: r.GetRecord().GetObject().GetKey(),
					Identity: r.GetRecord().GetObject().GetIdentity()}})
		}
		if after = resp.Next; after == nil {
			break
		}
	}
	op.Return = now()
	classify(&op, err, &attempts{}, false)
	if err != nil {
		op.Out = nil
		op.Error = fmt.Sprintf("list quarantined: %v", err)
	}
	return op
}
