package workload

import (
	"context"

	"github.com/metad/metad/jepsen/history"
	"github.com/metad/metad/jepsen/model"
)

// ReadBack is the end-of-run read (G2): for every stream a linearizable
// describe, then a resolve and read of every offset from the trim point to
// the committed end in the COMMITTED view, one record at a time. Each op is
// marked Final and checked like any other, and CheckDurable compares them
// with everything acknowledged. Failures are retried on other nodes.
func (w *Workload) ReadBack(ctx context.Context) {
	const tries = 4
	for si, h := range w.streams {
		replaced := w.writers[si].replacedRanges()
		var d history.Op
		for i := range tries {
			node := i % len(w.cfg.Clients)
			d = w.describeOp(ctx, w.cfg.Clients[node], w.cfg.NodeIDs[node], 999, h.id)
			if d.Status == history.OK || ctx.Err() != nil {
				break
			}
		}
		if d.Status != history.OK {
			continue
		}
		w.markFinal(d.ID)
		for o := d.Out.Trim; o < d.Out.CommittedEnd && ctx.Err() == nil; {
			next := o + 1
			if r, ok := containing(replaced, o); ok {
				o = r.End // its bytes were replaced: unreadable by design (G8)
				continue
			}
			for i := range tries {
				op := w.resolveAndRead(ctx, i%len(w.cfg.Clients), 999, h, model.Committed, o, true)
				if op.Out != nil && op.Out.Target != nil && op.Out.Read.Result == "ok" {
					next = max(next, op.Out.Target.Resolved.End)
					break
				}
			}
			o = next
		}
	}
}

// markFinal flags a recorded describe as part of the read-back.
func (w *Workload) markFinal(id int) { w.cfg.Rec.Mark(id, func(op *history.Op) { op.Final = true }) }

// replacedRanges lists the appends whose object this writer replaced. Call
// it only after the writer stopped.
func (wr *writer) replacedRanges() []history.Range {
	var out []history.Range
	for _, k := range wr.appends {
		if k.replaced {
			out = append(out, k.rng)
		}
	}
	return out
}

func containing(rs []history.Range, o uint64) (history.Range, bool) {
	for _, r := range rs {
		if r.Contains(o) {
			return r, true
		}
	}
	return history.Range{}, false
}
