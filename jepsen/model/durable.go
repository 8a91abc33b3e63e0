package model

import (
	"fmt"
	"sort"

	"github.com/metad/metad/jepsen/history"
)

// acked is what the history proves was acknowledged on one stream, and
// the largest trim anyone asked for (acknowledged or not).
type acked struct {
	end, trim, epoch uint64
	asked            uint64
	appends          []history.Op
	gens             map[history.Generation]int // published complete: (view, number) -> op id
}

// CheckDurable is G2: after the run, once the cluster healed, a final
// read-back (ops marked Final) still shows every acknowledged write: the
// committed end, trim and epoch at least as far as acknowledged, every
// acknowledged complete generation not retired since, and every
// acknowledged append's offsets above the final trim readable.
func CheckDurable(h history.History) []Anomaly {
	ack := map[uint64]*acked{}
	retired := map[uint64]map[history.Generation]bool{}
	get := func(id uint64) *acked {
		if ack[id] == nil {
			ack[id] = &acked{gens: map[history.Generation]int{}}
			retired[id] = map[history.Generation]bool{}
		}
		return ack[id]
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Stream == 0 || op.Final {
			continue
		}
		a := get(op.Stream)
		switch {
		case op.Kind == history.KindRetire && op.Status != history.Fail:
			retired[op.Stream][history.Generation{View: op.In.View, Number: op.In.Generation}] = true
		case op.Kind == history.KindTrim && (op.Status == history.OK || op.Status == history.Info):
			a.asked = max(a.asked, op.In.Offset)
			if op.Status == history.OK {
				a.trim = max(a.trim, op.In.Offset)
			}
		case op.Status != history.OK:
		case op.Kind == history.KindAppend:
			a.end = max(a.end, op.In.End)
			a.appends = append(a.appends, *op)
		case op.Kind == history.KindOpen:
			a.epoch = max(a.epoch, op.Out.Epoch)
		case op.Kind == history.KindPublish && op.In.Complete:
			a.gens[history.Generation{View: op.In.View, Number: op.In.Generation}] = op.ID
		}
	}
	finals := finalReads(h)
	ids := make([]uint64, 0, len(ack))
	for id := range ack {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	rep := replacements(h)
	var out []Anomaly
	for _, id := range ids {
		out = append(out, durableStream(id, ack[id], retired[id], finals[id], rep)...)
	}
	return out
}

// final is the read-back of one stream.
type final struct {
	describe *history.Op
	read     []history.Range // offsets read back with their bytes
	// trim is the largest trim point the read-back saw: an indeterminate
	// trim may land after the final describe.
	trim uint64
}

func finalReads(h history.History) map[uint64]*final {
	out := map[uint64]*final{}
	for i := range h.Ops {
		op := &h.Ops[i]
		if !op.Final || op.Status != history.OK {
			continue
		}
		f := out[op.Stream]
		if f == nil {
			f = &final{}
			out[op.Stream] = f
		}
		switch op.Kind {
		case history.KindDescribe:
			f.describe = op
			f.trim = max(f.trim, op.Out.Trim)
		case history.KindResolve:
			f.trim = max(f.trim, op.Out.Trim)
			if t := op.Out.Target; t != nil && op.Out.Read != nil && op.Out.Read.Result == "ok" {
				f.read = append(f.read, t.Resolved)
			}
		}
	}
	return out
}

func durableStream(id uint64, a *acked, retired map[history.Generation]bool, f *final, rep map[string]int64) []Anomaly {
	bad := func(op int, format string, args ...any) Anomaly {
		return Anomaly{Check: "G2", Op: op, Stream: id, Detail: fmt.Sprintf(format, args...)}
	}
	if f == nil || f.describe == nil {
		return []Anomaly{bad(-1, "no final read-back succeeded: acknowledged writes cannot be shown to survive")}
	}
	d := f.describe.Out
	out := overlapping(id, a.appends)
	if f.trim > a.asked {
		out = append(out, bad(f.describe.ID, "the read-back saw trim %d, but no trim beyond %d was asked for", f.trim, a.asked))
	}
	if d.CommittedEnd < a.end || d.Trim < a.trim || d.Epoch < a.epoch {
		out = append(out, bad(f.describe.ID, "final describe end=%d trim=%d epoch=%d, but end %d, trim %d, epoch %d were acknowledged",
			d.CommittedEnd, d.Trim, d.Epoch, a.end, a.trim, a.epoch))
	}
	live := map[history.Generation]bool{}
	for _, g := range d.Generations {
		live[history.Generation{View: g.View, Number: g.Number}] = true
	}
	for g, op := range a.gens {
		if !retired[g] && !live[g] {
			out = append(out, bad(op, "acknowledged generation %s g%d is gone", g.View, g.Number))
		}
	}
	for _, ap := range a.appends {
		if _, replaced := rep[ap.In.Object.Key]; replaced {
			continue
		}
		for o := max(ap.In.ExpectedStart, f.trim); o < ap.In.End; o++ {
			if !covered(f.read, o) {
				out = append(out, bad(ap.ID, "acknowledged append [%d,%d): offset %d (final trim %d) was not read back", ap.In.ExpectedStart, ap.In.End, o, f.trim))
				break
			}
		}
	}
	return out
}

func covered(rs []history.Range, o uint64) bool {
	for _, r := range rs {
		if r.Contains(o) {
			return true
		}
	}
	return false
}

// overlapping finds acknowledged appends that share offsets: the committed
// end only grows, so a later append accepted at an offset an earlier one
// was acknowledged for proves the earlier one was lost.
func overlapping(stream uint64, appends []history.Op) []Anomaly {
	sorted := append([]history.Op(nil), appends...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].In.ExpectedStart < sorted[j].In.ExpectedStart })
	var out []Anomaly
	for i := 1; i < len(sorted); i++ {
		prev, cur := sorted[i-1], sorted[i]
		if cur.In.ExpectedStart < prev.In.End {
			out = append(out, Anomaly{Check: "G2", Op: prev.ID, Stream: stream, Detail: fmt.Sprintf(
				"acknowledged append [%d,%d) (op %d) was lost: op %d was later accepted at %d", prev.In.ExpectedStart,
				prev.In.End, prev.ID, cur.ID, cur.In.ExpectedStart)})
		}
	}
	return out
}
