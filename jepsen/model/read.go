package model

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/metad/metad/jepsen/history"
)

// checkDescribe compares a linearizable DescribeStream answer with s.
func (s Stream) checkDescribe(out *history.Output) string {
	if out.CommittedEnd != s.End || out.Trim != s.Trim || out.Epoch != s.Epoch {
		return fmt.Sprintf("describe saw end=%d trim=%d epoch=%d; the model has %d %d %d",
			out.CommittedEnd, out.Trim, out.Epoch, s.End, s.Trim, s.Epoch)
	}
	if out.Sealed {
		return "describe saw a sealed stream; nothing sealed it"
	}
	want := s.generations()
	got := slices.Clone(out.Generations)
	slices.SortStableFunc(got, generationOrder)
	if len(want) != len(got) {
		return fmt.Sprintf("describe listed %d generations; the model has %d (%v)", len(out.Generations), len(want), s)
	}
	for i, g := range got {
		w := want[i]
		if g.View == Committed && g.Number == 0 {
			g.Records, w.Records = 0, 0 // repair adds generation-0 records whenever it likes
		}
		if g != w {
			return fmt.Sprintf("describe listed generation %+v; the model has %+v", g, w)
		}
	}
	return ""
}

// generations lists the live generations as DescribeStream does: per view,
// ascending, COMMITTED generation 0 first with coverage [trim, end).
func (s Stream) generations() []history.Generation {
	out := []history.Generation{{View: Committed, Number: 0, Published: true, Coverage: history.Range{Start: s.Trim, End: s.End}}}
	for vi, v := range s.Views {
		for _, g := range v.Gens {
			out = append(out, history.Generation{View: viewName(vi), Number: g.Number, Published: g.Published,
				Coverage: g.Coverage, Records: uint64(len(g.Records))})
		}
	}
	slices.SortStableFunc(out, generationOrder)
	return out
}

func generationOrder(a, b history.Generation) int {
	if a.View != b.View {
		return viewIndex(a.View) - viewIndex(b.View)
	}
	return cmp.Compare(a.Number, b.Number)
}

// candidate is one record a resolve could return, in preference order.
type candidate struct {
	gen      uint64
	rec      history.Record
	resolved history.Range
	// admissible: its object still holds the identity it names.
	admissible bool
}

// checkResolve checks a resolve answer against s (G5, G6, G7).
func (s Stream) checkResolve(in *history.Input, out *history.Output) string {
	o := in.Offset
	switch out.Outcome {
	case "EOF":
		if o < s.End || out.CommittedEnd != s.End {
			return fmt.Sprintf("EOF at %d (committed end %d reported); the model's committed end is %d", o, out.CommittedEnd, s.End)
		}
		return ""
	case "OFFSET_TRIMMED":
		if o >= s.Trim || out.Trim != s.Trim {
			return fmt.Sprintf("OFFSET_TRIMMED at %d (trim %d reported); the model's trim is %d", o, out.Trim, s.Trim)
		}
		return ""
	case "NOT_FOUND":
		return "NOT_FOUND for a stream that exists"
	}
	if o >= s.End || o < s.Trim {
		return fmt.Sprintf("%s at %d, but the model has trim %d end %d", out.Outcome, o, s.Trim, s.End)
	}
	if out.CommittedEnd != s.End || out.Trim != s.Trim {
		return fmt.Sprintf("%s reported trim %d end %d; the model has %d %d", out.Outcome, out.Trim, out.CommittedEnd, s.Trim, s.End)
	}
	cands, viewEnd := s.candidates(in.View, o)
	switch out.Outcome {
	case "VIEW_END":
		if in.View != TopicCompacted {
			return "VIEW_END for the dense COMMITTED view"
		}
		if cands != nil || out.ViewEnd != viewEnd {
			return fmt.Sprintf("VIEW_END %d at %d; the model has %s", out.ViewEnd, o, describeCands(cands, viewEnd))
		}
		return ""
	case "TARGET":
		return s.checkTarget(in, out.Target, cands, viewEnd)
	}
	return fmt.Sprintf("unknown outcome %q", out.Outcome)
}

func (s Stream) checkTarget(in *history.Input, t *history.Target, cands []candidate, viewEnd uint64) string {
	if t == nil {
		return "TARGET without a target"
	}
	if t.View != in.View || t.Stream != s.ID {
		return fmt.Sprintf("target of stream %d view %s for a request of stream %d view %s (G6)", t.Stream, t.View, s.ID, in.View)
	}
	for _, ex := range in.Exclude {
		if ex.View == t.View && ex.Generation == t.Generation && ex.Start == t.Start && ex.Version == t.Version {
			return fmt.Sprintf("target g%d/%d@%d was excluded by the caller", t.Generation, t.Start, t.Version)
		}
	}
	for _, c := range cands {
		if c.gen == t.Generation && c.rec.Range.Start == t.Start {
			return s.sameRecord(t, c)
		}
		if c.admissible && !maybeExcluded(in.Exclude, c) && !s.suspect(t.View, c) {
			return fmt.Sprintf("target g%d/%d is not the newest admissible candidate: g%d/%d is (G7)",
				t.Generation, t.Start, c.gen, c.rec.Range.Start)
		}
	}
	return fmt.Sprintf("target g%d/%d%v is no candidate at %d; the model has %s", t.Generation, t.Start, t.RecordRange, in.Offset, describeCands(cands, viewEnd))
}

// sameRecord checks the target names exactly the candidate's record.
func (s Stream) sameRecord(t *history.Target, c candidate) string {
	r := c.rec
	if !c.admissible {
		return fmt.Sprintf("target g%d/%d names %s, which no longer holds those bytes (G8)", t.Generation, t.Start, r.Object.Key)
	}
	// Below level 3 the server keeps no data checksum, so none is covered.
	var data *uint32
	if s.Versions {
		data = r.DataCRC
	}
	sum := Checksum(s.ID, t.View, c.gen, r.Range, r.Survivors, r.Object, r.Bytes, data)
	switch {
	case t.RecordRange != r.Range || t.Object != r.Object || t.Bytes != r.Bytes:
		return fmt.Sprintf("target g%d/%d is %v %s %+v; the record is %v %s %+v", t.Generation, t.Start,
			t.RecordRange, t.Object.Key, t.Bytes, r.Range, r.Object.Key, r.Bytes)
	case t.Checksum != sum:
		return fmt.Sprintf("target checksum %08x; the canonical checksum is %08x", t.Checksum, sum)
	case t.Resolved != c.resolved:
		return fmt.Sprintf("target resolved %v; the model resolves %v", t.Resolved, c.resolved)
	}
	return s.checkTargetCRC(t, r)
}

// checkTargetCRC checks the target carries the data checksum the record's
// writer committed (G8: the reader checks the bytes against it). From
// feature level 3, the level that keeps many versions per key, the server
// keeps data checksums, so a target without one is wrong too; below it,
// one may be absent.
func (s Stream) checkTargetCRC(t *history.Target, r history.Record) string {
	switch {
	case r.DataCRC == nil:
		return ""
	case t.DataCRC == nil && s.Versions:
		return fmt.Sprintf("target g%d/%d carries no data checksum; its writer committed crc32c:%08x (G8)", t.Generation, t.Start, *r.DataCRC)
	case t.DataCRC != nil && *t.DataCRC != *r.DataCRC:
		return fmt.Sprintf("target g%d/%d carries data checksum crc32c:%08x; its writer committed crc32c:%08x (G8)", t.Generation, t.Start, *t.DataCRC, *r.DataCRC)
	}
	return ""
}

func maybeExcluded(ex []history.Candidate, c candidate) bool {
	for _, e := range ex {
		if e.Generation == c.gen && e.Start == c.rec.Range.Start {
			return true
		}
	}
	return false
}

func describeCands(cands []candidate, viewEnd uint64) string {
	if cands == nil {
		return fmt.Sprintf("VIEW_END %d", viewEnd)
	}
	s := "candidates"
	for _, c := range cands {
		s += fmt.Sprintf(" g%d/%d%v(admissible=%v)", c.gen, c.rec.Range.Start, c.resolved, c.admissible)
	}
	return s
}

// candidates lists, newest generation first, the records of the view that
// could answer offset o (trim <= o < end). For the sparse view a nil list
// means the view ends: viewEnd is where (o itself when no published
// generation covers o).
func (s Stream) candidates(view string, o uint64) ([]candidate, uint64) {
	if view == TopicCompacted {
		return s.sparseCandidates(o)
	}
	var out []candidate
	gens := s.Views[0].Gens
	for i := len(gens) - 1; i >= 0; i-- {
		g := gens[i]
		if !g.Published {
			continue
		}
		for _, r := range g.Records {
			if r.Range.Contains(o) {
				out = append(out, candidate{gen: g.Number, rec: r, resolved: history.Range{Start: o, End: r.Range.End}, admissible: s.identityOK(r.Object)})
			}
		}
	}
	// Generation 0 is the append evidence: written with the append or
	// rebuilt by repair, the record is the same.
	if a, ok := s.appendAt(o); ok {
		rec := history.Record{Range: a.Range, Object: a.Object, Bytes: a.Bytes, DataCRC: a.DataCRC}
		out = append(out, candidate{gen: 0, rec: rec, resolved: history.Range{Start: o, End: a.Range.End}, admissible: s.identityOK(a.Object)})
	}
	return out, 0
}

// sparseCandidates: the newest published generation covering o is
// authoritative about gaps. If nothing survives in it from o to the end of
// its coverage, the view ends there; otherwise each published generation
// covering o offers its next surviving offset, until one that has none.
func (s Stream) sparseCandidates(o uint64) ([]candidate, uint64) {
	var out []candidate
	gens := s.Views[1].Gens
	for i := len(gens) - 1; i >= 0; i-- {
		g := gens[i]
		if !g.Published || !g.Coverage.Contains(o) {
			continue
		}
		c, ok := nextSurvivor(g, o)
		if !ok {
			if out == nil {
				return nil, g.Coverage.End
			}
			break
		}
		c.admissible = s.identityOK(c.rec.Object)
		out = append(out, c)
	}
	if out == nil {
		return nil, o
	}
	return out, 0
}

func nextSurvivor(g Gen, o uint64) (candidate, bool) {
	for _, r := range g.Records {
		if r.Range.End <= o {
			continue
		}
		for _, sv := range r.Survivors {
			if sv.End > o {
				return candidate{gen: g.Number, rec: r, resolved: history.Range{Start: max(sv.Start, o), End: sv.End}}, true
			}
		}
	}
	return candidate{}, false
}
