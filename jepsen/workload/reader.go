package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/jepsen/history"
	"github.com/metad/metad/jepsen/model"
	"github.com/metad/metad/objectstore"
)

// reader resolves and reads, and describes, on nodes chosen at random:
// a stale node must be caught answering.
type reader struct {
	w      *Workload
	client int
	rng    *rand.Rand
}

func (w *Workload) newReader(i int) *reader {
	return &reader{w: w, client: 100 + i, rng: w.rng(i)}
}

func (rd *reader) run(ctx context.Context) {
	resolveWeight := 70
	switch rd.w.cfg.Profile {
	case ProfileResolve:
		resolveWeight = 85
	case ProfileAppend:
		resolveWeight = 0 // no pins: appends are the only log entries
	}
	for alive(ctx) {
		h := rd.w.streams[rd.rng.IntN(len(rd.w.streams))]
		node := rd.rng.IntN(len(rd.w.cfg.Clients))
		rd.w.gate.RLock()
		if t, ok := rd.w.hotTarget(rd.rng); ok && resolveWeight > 0 {
			rd.w.resolveAndRead(ctx, node, rd.client, rd.w.hintOf(t.Stream), t.View, t.Resolved.Start, false)
		} else if rd.rng.IntN(100) < resolveWeight {
			view := model.Committed
			if rd.rng.IntN(5) < 2 {
				view = model.TopicCompacted
			}
			end, trim := h.end.Load(), h.trim.Load()
			o := trim + uint64(rd.rng.IntN(int(end-trim)+4))
			o = max(o, 2) - 2
			rd.w.resolveAndRead(ctx, node, rd.client, h, view, o, false)
		} else {
			rd.w.describeOp(ctx, rd.w.cfg.Clients[node], rd.w.cfg.NodeIDs[node], rd.client, h.id)
		}
		rd.w.gate.RUnlock()
	}
}

// describeOp records a linearizable DescribeStream.
func (w *Workload) describeOp(ctx context.Context, cl *client.Client, node string, clientID int, stream uint64) history.Op {
	op := history.Op{Kind: history.KindDescribe, Client: clientID, Node: node, Stream: stream}
	cctx, cancel := w.opContext(ctx)
	defer cancel()
	op.Call = now()
	resp, err := client.Call(cctx, cl, cl.Metad.DescribeStream, &metadpb.DescribeStreamRequest{StreamId: stream})
	op.Return = now()
	classify(&op, err, &attempts{}, false)
	if err == nil {
		s := resp.Stream
		op.Out = &history.Output{CommittedEnd: s.CommittedEnd, Trim: s.Trim, Epoch: s.WriterEpoch,
			Sealed: s.Status == metadpb.StreamStatus_SEALED, AppliedIndex: resp.AppliedIndex}
		for _, g := range resp.Generations {
			op.Out.Generations = append(op.Out.Generations, history.Generation{View: viewName(g.View), Number: g.Number,
				Published: g.Status == metadpb.GenerationStatus_PUBLISHED, Coverage: rangeOf(g.Coverage), Records: g.Records})
		}
		if h := w.hintOf(stream); h != nil {
			h.observe(s.CommittedEnd, s.Trim)
		}
	}
	op.ID = w.cfg.Rec.Add(op)
	return op
}

func (w *Workload) hintOf(stream uint64) *hint {
	for _, h := range w.streams {
		if h.id == stream {
			return h
		}
	}
	return nil
}

func viewName(v metadpb.View) string {
	if v == metadpb.View_TOPIC_COMPACTED {
		return model.TopicCompacted
	}
	return model.Committed
}

func rangeOf(r *metadpb.Range) history.Range {
	return history.Range{Start: r.GetStart(), End: r.GetEnd()}
}

// resolveAndRead resolves, reads the target's bytes under its identity and
// releases the pin. If the bytes are gone (a replaced object) or fail the
// target's data checksum, it excludes that candidate and resolves again,
// as a broker would, at most twice; bytes failing their checksum it also
// reports CORRUPT, as a broker would, so the record is quarantined until
// the bytes check out again.
func (w *Workload) resolveAndRead(ctx context.Context, node, clientID int, h *hint, view string, o uint64, final bool) history.Op {
	var exclude []history.Candidate
	var op history.Op
	for range 3 {
		op = w.resolveOnce(ctx, node, clientID, h, view, o, exclude, final)
		if op.Out == nil || op.Out.Read == nil || op.Out.Read.Result == "ok" {
			return op
		}
		t := op.Out.Target
		if op.Out.Read.Result == resultCorrupt {
			w.Report(ctx, node, clientID, *t, metadpb.FailureKind_CORRUPT.String(), false)
		}
		exclude = append(exclude, history.Candidate{View: t.View, Generation: t.Generation, Start: t.Start, Version: t.Version})
	}
	return op
}

func (w *Workload) resolveOnce(ctx context.Context, node, clientID int, h *hint, view string, o uint64, exclude []history.Candidate, final bool) history.Op {
	cl := w.cfg.Clients[node]
	op := history.Op{Kind: history.KindResolve, Client: clientID, Node: w.cfg.NodeIDs[node], Stream: h.id, Final: final,
		In: history.Input{View: view, Offset: o, Exclude: exclude}}
	req := &metadpb.ResolveRequest{StreamId: h.id, View: viewPB(view), Offset: o, Holder: "jepsen"}
	for _, e := range exclude {
		req.Exclude = append(req.Exclude, &metadpb.CandidateRef{Key: &metadpb.IndexKey{StreamId: h.id, View: viewPB(e.View),
			Generation: e.Generation, Start: e.Start}, Version: e.Version})
	}
	cctx, cancel := w.opContext(ctx)
	defer cancel()
	op.Call = now()
	resp, err := client.Call(cctx, cl, cl.Metad.Resolve, req)
	op.Return = now()
	classify(&op, err, &attempts{}, false)
	if err == nil {
		op.Out = &history.Output{Outcome: resp.Outcome.String(), Trim: resp.Trim, CommittedEnd: resp.CommittedEnd, ViewEnd: resp.ViewEnd,
			AppliedIndex: resp.ReadIndex}
		h.observe(resp.CommittedEnd, resp.Trim)
		if t := resp.Target; t != nil {
			op.Out.Target = targetOf(t)
			data, watch := w.readTarget(cctx, op.Out.Target)
			op.Out.Data, op.Out.Read = data, &watch
			if watch.Result == "ok" && !final && clientID < 200 {
				w.noteTarget(*op.Out.Target)
			}
			if !t.PinShared { // a shared pin serves other readers too: it expires by itself
				w.release(ctx, cl, t.PinId)
			}
		}
	}
	op.ID = w.cfg.Rec.Add(op)
	return op
}

func targetOf(t *metadpb.Target) *history.Target {
	ttl := t.PinTtl.AsDuration()
	return &history.Target{View: viewName(t.Key.GetView()), Stream: t.Key.GetStreamId(), Generation: t.Key.GetGeneration(),
		Start: t.Key.GetStart(), Version: t.Version, Checksum: t.Checksum, RecordRange: rangeOf(t.RecordRange),
		Resolved: rangeOf(t.Resolved), Object: history.Object{Key: t.Object.GetKey(), Identity: t.Object.GetIdentity()},
		Bytes: history.Bytes{Offset: t.Bytes.GetOffset(), Length: t.Bytes.GetLength()}, PinID: t.PinId,
		PinStamp: t.PinExpiry.AsTime().UnixNano() - int64(ttl), PinTTL: int64(ttl), PinShared: t.PinShared, DataCRC: t.DataCrc32C}
}

// resultCorrupt is a read whose bytes failed the target's data checksum
// (or that the store found corrupt).
const resultCorrupt = "corrupt"

// readTarget reads the target's bytes under its identity and checks them
// against the target's data checksum, as every reader must: bytes that
// fail it are never returned as read ("corrupt"; Data keeps them for the
// report).
func (w *Workload) readTarget(ctx context.Context, t *history.Target) (string, history.Watch) {
	buf := make([]byte, t.Bytes.Length)
	n, err := w.cfg.Objects.ReadAt(ctx, t.Object.Key, t.Object.Identity, buf, int64(t.Bytes.Offset))
	wt := watchResult(n, len(buf), err)
	if wt.Result == "ok" && t.DataCRC != nil && !w.cfg.UncheckedReads {
		if got := model.DataCRC(buf[:n]); got != *t.DataCRC {
			wt.Result, wt.Detail = resultCorrupt, fmt.Sprintf("%d bytes have CRC-32C %08x; the target says crc32c:%08x", n, got, *t.DataCRC)
		}
	}
	return string(buf[:n]), wt
}

func watchResult(n, want int, err error) history.Watch {
	wt := history.Watch{At: now(), Result: "ok"}
	switch {
	case err == nil || (n == want && errors.Is(err, io.EOF)):
	case errors.Is(err, objectstore.ErrCorrupt):
		wt.Result, wt.Detail = resultCorrupt, err.Error()
	case errors.Is(err, objectstore.ErrNotFound), errors.Is(err, objectstore.ErrIdentityMismatch):
		wt.Result, wt.Detail = "missing", err.Error()
	case errors.Is(err, io.EOF):
		wt.Result, wt.Detail = "mismatch", "object shorter than the byte range"
	default:
		wt.Result, wt.Detail = "error", err.Error()
	}
	return wt
}

// release gives a resolve's pin back, best effort: if it fails, it expires.
func (w *Workload) release(ctx context.Context, cl *client.Client, pin uint64) {
	if pin == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_, _ = cl.Metad.ReleasePin(cctx, &metadpb.ReleasePinRequest{PinId: pin, RequestId: client.NewRequestID()})
}

// watch reads a pinned object every 100ms until leaseEnd (G9).
func (w *Workload) watch(ctx context.Context, obj history.Object, b history.Bytes, leaseEnd int64) []history.Watch {
	var out []history.Watch
	for now() < leaseEnd && ctx.Err() == nil {
		buf := make([]byte, b.Length)
		n, err := w.cfg.Objects.ReadAt(context.WithoutCancel(ctx), obj.Key, obj.Identity, buf, int64(b.Offset))
		wt := watchResult(n, len(buf), err)
		if wt.Result != "ok" || len(out) == 0 {
			out = append(out, wt)
		}
		sleepCtx(ctx, 100*time.Millisecond)
	}
	return out
}
