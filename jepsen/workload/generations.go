package workload

import (
	"context"
	"slices"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/jepsen/history"
	"github.com/metad/metad/jepsen/model"
)

// publishOnce returns an op that publishes the next generation of view:
// for COMMITTED a re-packing of a committed range into one new object, for
// TOPIC_COMPACTED a sparse index of random survivors packed into one new
// object. Records carry checksums computed by the model's own encoding.
// Some generations are published in two parts (BUILDING, then complete).
func (wr *writer) publishOnce(view string) func(context.Context) {
	return func(ctx context.Context) {
		if wr.end < wr.trim+4 {
			return
		}
		if v := &wr.gens[viewIdx(view)]; len(v.live) > 3 {
			wr.retire(ctx, view, v.live[0])
		}
		span := min(wr.end-wr.trim, uint64(2+wr.rng.IntN(12)))
		start := wr.trim + uint64(wr.rng.IntN(int(wr.end-wr.trim-span)+1))
		cov := history.Range{Start: start, End: start + span}
		recs, content := wr.layoutRecords(view, cov)
		obj, data, parts, ok := wr.putObject(ctx, "g", content)
		if !ok {
			return
		}
		gen := wr.gens[viewIdx(view)].last + 1
		records := wr.finishRecords(view, gen, recs, obj, data, parts)
		split := len(records)
		if len(records) > 1 && wr.rng.IntN(4) == 0 {
			split = 1 + wr.rng.IntN(len(records)-1)
		}
		op := wr.publish(ctx, view, gen, cov, records[:split], split == len(records))
		if op.Status == history.OK && split < len(records) {
			op = wr.publish(ctx, view, gen, cov, records[split:], true)
		}
		v := &wr.gens[viewIdx(view)]
		switch op.Status {
		case history.OK:
			v.last = gen
			v.live = append(v.live, gen)
		case history.Info:
			v.last = gen // perhaps used: never reuse it
			v.live = append(v.live, gen)
		case history.Rejected:
			if op.Reason == model.ReasonNotNewer {
				v.last = gen
			}
			wr.resync(ctx)
		}
	}
}

// layoutRecords splits coverage into 1–3 records; for the sparse view each
// keeps a random non-empty set of surviving sub-ranges. It returns the
// records (without object, bytes or checksum) and the object's content:
// one part per record for COMMITTED, one per survivor for TOPIC_COMPACTED.
func (wr *writer) layoutRecords(view string, cov history.Range) ([]history.Record, history.Content) {
	content := history.Content{Prefix: wr.rng.IntN(8), Suffix: wr.rng.IntN(8)}
	n := 1 + wr.rng.IntN(3)
	var recs []history.Record
	start := cov.Start
	for i := range n {
		end := cov.End
		if i < n-1 {
			left := cov.End - start
			if left < 2 {
				break
			}
			end = start + 1 + uint64(wr.rng.IntN(int(left-1)))
		}
		r := history.Record{Range: history.Range{Start: start, End: end}}
		if view == model.TopicCompacted {
			r.Survivors = wr.survivors(r.Range)
			content.Offsets = append(content.Offsets, r.Survivors...)
		} else {
			content.Offsets = append(content.Offsets, r.Range)
		}
		recs = append(recs, r)
		start = end
		if start >= cov.End {
			break
		}
	}
	return recs, content
}

// survivors picks random surviving sub-ranges of r, at least one offset.
func (wr *writer) survivors(r history.Range) []history.Range {
	var out []history.Range
	for o := r.Start; o < r.End; o++ {
		if wr.rng.IntN(3) != 0 {
			continue
		}
		if len(out) > 0 && out[len(out)-1].End == o {
			out[len(out)-1].End++
		} else {
			out = append(out, history.Range{Start: o, End: o + 1})
		}
	}
	if len(out) == 0 {
		o := r.Start + uint64(wr.rng.IntN(int(r.End-r.Start)))
		out = []history.Range{{Start: o, End: o + 1}}
	}
	return out
}

// finishRecords gives each record its object, byte range, checksum and
// data checksum (of the record's byte range of data).
func (wr *writer) finishRecords(view string, gen uint64, recs []history.Record, obj history.Object, data []byte, parts []history.Bytes) []history.Record {
	p := 0
	for i := range recs {
		r := &recs[i]
		n := 1
		if view == model.TopicCompacted {
			n = len(r.Survivors)
		}
		first, last := parts[p], parts[p+n-1]
		p += n
		r.Object = obj
		r.Bytes = history.Bytes{Offset: first.Offset, Length: last.Offset + last.Length - first.Offset}
		r.DataCRC = crcOf(data, r.Bytes)
		r.Checksum = model.Checksum(wr.h.id, view, gen, r.Range, r.Survivors, obj, r.Bytes, r.DataCRC)
	}
	return recs
}

func (wr *writer) publish(ctx context.Context, view string, gen uint64, cov history.Range, recs []history.Record, complete bool) history.Op {
	op := history.Op{Kind: history.KindPublish, In: history.Input{RequestID: client.NewRequestID(), Epoch: wr.epoch,
		View: view, Generation: gen, Coverage: &cov, Records: recs, Complete: complete}}
	req := &metadpb.PublishGenerationRequest{StreamId: wr.h.id, View: viewPB(view), Generation: gen, WriterEpoch: wr.epoch,
		Coverage: &metadpb.Range{Start: cov.Start, End: cov.End}, Complete: complete, RequestId: op.In.RequestID}
	for _, r := range recs {
		pr := &metadpb.IndexRecord{Range: &metadpb.Range{Start: r.Range.Start, End: r.Range.End},
			Object: &metadpb.ObjectRef{Key: r.Object.Key, Identity: r.Object.Identity},
			Bytes:  &metadpb.ByteRange{Offset: r.Bytes.Offset, Length: r.Bytes.Length}, Checksum: r.Checksum, DataCrc32C: r.DataCRC}
		for _, s := range r.Survivors {
			pr.Survivors = append(pr.Survivors, &metadpb.Range{Start: s.Start, End: s.End})
		}
		req.Records = append(req.Records, pr)
	}
	var a attempts
	op.Call = now()
	resp, err := settle(ctx, wr.w, wr.w.cfg.All, &a, wr.w.cfg.All.Metad.PublishGeneration, req)
	op.Return = now()
	classify(&op, err, &a, true)
	if err == nil {
		op.Out = &history.Output{Generation: resp.Generation, Version: resp.Version}
	}
	return wr.record(op)
}

// retireOnce retires a random live generation (of either view).
func (wr *writer) retireOnce(ctx context.Context) {
	view := model.Committed
	if wr.rng.IntN(2) == 0 {
		view = model.TopicCompacted
	}
	v := wr.gens[viewIdx(view)]
	if len(v.live) == 0 {
		return
	}
	wr.retire(ctx, view, v.live[wr.rng.IntN(len(v.live))])
}

func (wr *writer) retire(ctx context.Context, view string, gen uint64) {
	op := history.Op{Kind: history.KindRetire, In: history.Input{RequestID: client.NewRequestID(), View: view, Generation: gen}}
	var a attempts
	op.Call = now()
	resp, err := settle(ctx, wr.w, wr.w.cfg.All, &a, wr.w.cfg.All.Metad.RetireGeneration, &metadpb.RetireGenerationRequest{
		StreamId: wr.h.id, View: viewPB(view), Generation: gen, RequestId: op.In.RequestID})
	op.Return = now()
	classify(&op, err, &a, true)
	if err == nil {
		op.Out = &history.Output{Version: resp.Version}
	}
	wr.record(op)
	if op.Status != history.Fail {
		v := &wr.gens[viewIdx(view)]
		v.live = slices.DeleteFunc(v.live, func(g uint64) bool { return g == gen })
	}
}
