package model

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/metad/metad/jepsen/history"
)

// RecordID names an index record of a stream, at any version.
type RecordID struct {
	View       string
	Generation uint64
	Start      uint64
}

func compareRecordID(a, b RecordID) int {
	return cmp.Or(cmp.Compare(a.View, b.View), cmp.Compare(a.Generation, b.Generation), cmp.Compare(a.Start, b.Start))
}

// report applies a ReportCandidateFailure. The server decides whether the
// store confirms it; the model only follows: a confirmed report (or one
// whose answer was lost) may have quarantined the record, and the repair
// job lifts that later at a time the history does not show, so the record
// is suspect from here on. An unconfirmed report changes nothing — and a
// confirmed false one is CheckReports' anomaly, not porcupine's.
func (s Stream) report(op *history.Op) Stream {
	switch {
	case op.In.Report == nil, op.Status == history.Fail, op.Status == history.Rejected:
		return s
	case op.Status == history.OK && (op.Out == nil || op.Out.Report == nil || !op.Out.Report.Confirmed):
		return s
	}
	c := op.In.Report.Candidate
	id := RecordID{View: c.View, Generation: c.Generation, Start: c.Start}
	i, found := slices.BinarySearchFunc(s.Suspect, id, compareRecordID)
	if found {
		return s
	}
	n := s
	n.Suspect = slices.Insert(slices.Clone(s.Suspect), i, id)
	n.mix(fmt.Sprint("suspect", id))
	return n
}

// suspect reports whether candidate c of view may be quarantined.
func (s Stream) suspect(view string, c candidate) bool {
	_, found := slices.BinarySearchFunc(s.Suspect, RecordID{View: view, Generation: c.gen, Start: c.rec.Range.Start}, compareRecordID)
	return found
}

// hidden reports whether a flapping fault hid key, or a corrupt fault
// rewrote bytes of it, at some moment of [from, to] (wall-clock
// nanoseconds, the history's clock).
func hidden(faults []history.Fault, key string, from, to int64) bool {
	for _, f := range faults {
		if !names(f, key) {
			continue
		}
		end := f.End
		if end == 0 {
			end = to
		}
		if f.Start <= to && from <= end {
			return true
		}
	}
	return false
}

// names reports whether fault f hid or rewrote an object of key.
func names(f history.Fault, key string) bool {
	if f.Object != nil && f.Object.Key == key {
		return true
	}
	for _, o := range f.Objects {
		if o.Key == key {
			return true
		}
	}
	return false
}

// readWindow is how long before a failed read's stamp the read may have
// begun: one operation's timeout.
const readWindow = int64(3 * time.Second)

// CheckStore runs the object-store checks: false reports (G10), quarantine
// that heals (G12), and every intact offset readable at the end.
func CheckStore(h history.History) []Anomaly {
	var out []Anomaly
	out = append(out, CheckReports(h)...)
	out = append(out, CheckQuarantine(h)...)
	out = append(out, CheckIntact(h)...)
	return out
}

// CheckReports is G10 for reports: a report the reporter knew to be false
// (it had just read the bytes intact) must not be confirmed — unless, by
// the time it was answered, the harness had hidden the object (flapping)
// or replaced its key (the old version may then have been collected).
func CheckReports(h history.History) []Anomaly {
	rep := replacements(h)
	var out []Anomaly
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind != history.KindReport || op.In.Report == nil || !op.In.Report.False || op.Status != history.OK ||
			op.Out == nil || op.Out.Report == nil || !op.Out.Report.Confirmed {
			continue
		}
		key := op.In.Report.Object.Key
		if t, ok := rep[key]; ok && t <= op.Return {
			continue
		}
		if hidden(h.Faults, key, op.Call, op.Return) {
			continue
		}
		out = append(out, Anomaly{Check: "G10", Op: op.ID, Stream: op.Stream, Detail: fmt.Sprintf(
			"a false %s report on intact bytes of %s was confirmed (quarantined=%v): %s", op.In.Report.Kind, key,
			op.Out.Report.Quarantined, op.Out.Report.Verdict)})
	}
	return out
}

// CheckQuarantine is G12's healing: after every fault healed and the
// harness waited (polling) for at least one repair scan interval, no
// record whose bytes are intact is still quarantined. Only a record naming
// a key the harness replaced may stay (its old version may be gone). A run
// that could not list the quarantined records cannot show they healed.
func CheckQuarantine(h history.History) []Anomaly {
	rep := replacements(h)
	var out []Anomaly
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind != history.KindQuarantine || !op.Final {
			continue
		}
		if op.Status != history.OK || op.Out == nil {
			out = append(out, Anomaly{Check: "G12", Op: op.ID, Detail: "the end-of-run quarantine listing failed: " + op.Error})
			continue
		}
		for _, q := range op.Out.Quarantined {
			if _, ok := rep[q.Object.Key]; ok {
				continue
			}
			out = append(out, Anomaly{Check: "G12", Op: op.ID, Stream: q.Stream, Detail: fmt.Sprintf(
				"record %s g%d/%d%v@%d of %s is still quarantined at the end, though its bytes are intact and the repair job had time to re-verify them",
				q.Candidate.View, q.Candidate.Generation, q.Candidate.Start, q.Range, q.Candidate.Version, q.Object.Key)})
		}
	}
	return out
}

// CheckIntact checks that at the end of a run every committed offset above
// the final trim whose bytes are intact — not in an append whose object the
// harness replaced — was read back (resolved, and its bytes read under the
// target's identity). Unlike CheckDurable it covers every committed
// offset, acknowledged or not, and it is what a flapping object or a false
// report must not break. Each stream's first unread offset is reported,
// with how many more there are.
func CheckIntact(h history.History) []Anomaly {
	rep := replacements(h)
	finals := finalReads(h)
	replaced := map[uint64][]history.Range{}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind != history.KindAppend || op.In.Object == nil || op.Status == history.Fail || op.Status == history.Rejected {
			continue
		}
		if _, ok := rep[op.In.Object.Key]; ok {
			replaced[op.Stream] = append(replaced[op.Stream], history.Range{Start: op.In.ExpectedStart, End: op.In.End})
		}
	}
	ids := make([]uint64, 0, len(finals))
	for id := range finals {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var out []Anomaly
	for _, id := range ids {
		f := finals[id]
		if f.describe == nil {
			continue // CheckDurable reports a stream without a final describe
		}
		first, missing := uint64(0), 0
		for o := max(f.trim, f.describe.Out.Trim); o < f.describe.Out.CommittedEnd; o++ {
			if covered(f.read, o) || covered(replaced[id], o) {
				continue
			}
			if missing == 0 {
				first = o
			}
			missing++
		}
		if missing > 0 {
			out = append(out, Anomaly{Check: "G10", Op: f.describe.ID, Stream: id, Detail: fmt.Sprintf(
				"committed offset %d (final trim %d, end %d) with intact bytes was not readable at the end of the run (%d such offsets)",
				first, f.trim, f.describe.Out.CommittedEnd, missing)})
		}
	}
	return out
}
