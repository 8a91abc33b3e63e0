package workload

import (
	"context"
	"sync"
	"time"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/jepsen/history"
	"github.com/metad/metad/jepsen/model"
)

// ReadBack is the end-of-run read (G2): for every stream a linearizable
// describe, then a resolve and read of every offset from the trim point to
// the committed end in the COMMITTED view, one record at a time. Each op is
// marked Final and checked like any other, and CheckDurable compares them
// with everything acknowledged. The stream's append evidence is listed too
// (ListEvidence), for CheckWatch, after every watcher was resumed to the
// end of its stream's history. Streams are read in parallel, each in four
// slices; failures are retried on other nodes.
//
// An offset that will not read is tried again, polling, until HealWait has
// passed since the read-back began (at least four times): a record
// quarantined while its object was gone heals within one repair scan
// interval once the object is back, and the read-back must not give up
// before then. An offset that never reads stays unread, and CheckDurable
// and CheckIntact report it.
func (w *Workload) ReadBack(ctx context.Context) {
	w.drainWatchers(ctx)
	healBy := clock.Real.Now().Add(w.cfg.HealWait)
	var wg sync.WaitGroup
	for si := range w.streams {
		wg.Add(1)
		go func() { defer wg.Done(); w.readBackStream(ctx, si, healBy) }()
	}
	wg.Wait()
}

const readBackTries = 4

func (w *Workload) readBackStream(ctx context.Context, si int, healBy time.Time) {
	h := w.streams[si]
	var d history.Op
	for i := range readBackTries {
		node := i % len(w.cfg.Clients)
		d = w.describeOp(ctx, w.cfg.Clients[node], w.cfg.NodeIDs[node], 999, h.id)
		if d.Status == history.OK || ctx.Err() != nil {
			break
		}
	}
	if d.Status != history.OK {
		return
	}
	w.markFinal(d.ID)
	w.readBackEvidence(ctx, h)
	replaced := w.writers[si].replacedRanges()
	lo, hi := d.Out.Trim, d.Out.CommittedEnd
	const slices = 4
	var wg sync.WaitGroup
	for k := range uint64(slices) {
		from, to := lo+(hi-lo)*k/slices, lo+(hi-lo)*(k+1)/slices
		wg.Add(1)
		go func() { defer wg.Done(); w.readBackRange(ctx, h, from, to, replaced, int(k), healBy) }()
	}
	wg.Wait()
}

// readBackRange reads [from, to) record by record.
func (w *Workload) readBackRange(ctx context.Context, h *hint, from, to uint64, replaced []history.Range, k int, healBy time.Time) {
	for o := from; o < to && ctx.Err() == nil; {
		next := o + 1
		if r, ok := containing(replaced, o); ok {
			o = r.End // its bytes were replaced: unreadable by design (G8)
			continue
		}
		for i := 0; (i < readBackTries || clock.Real.Now().Before(healBy)) && ctx.Err() == nil; i++ {
			if i >= readBackTries {
				sleepCtx(ctx, 250*time.Millisecond) // polling for quarantine to heal
			}
			op := w.resolveAndRead(ctx, (i+k)%len(w.cfg.Clients), 990+k, h, model.Committed, o, true)
			if op.Out != nil && op.Out.Target != nil && op.Out.Read.Result == "ok" {
				next = max(next, op.Out.Target.Resolved.End)
				break
			}
			if op.Out != nil && op.Out.Outcome == "OFFSET_TRIMMED" {
				next = max(next, op.Out.Trim) // trimmed since the describe
				break
			}
		}
		o = next
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
