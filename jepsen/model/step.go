package model

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/metad/metad/jepsen/history"
)

// Rejection reasons the model decides (metad's UPPER_SNAKE reasons).
const (
	ReasonStaleEpoch     = "STALE_EPOCH"
	ReasonEpochAhead     = "EPOCH_AHEAD"
	ReasonNotAtEnd       = "APPEND_NOT_AT_END"
	ReasonObjectNotLive  = "OBJECT_NOT_LIVE"
	ReasonTrimBeyondEnd  = "TRIM_BEYOND_END"
	ReasonTrimBackwards  = "TRIM_BACKWARDS"
	ReasonNotNewer       = "GENERATION_NOT_NEWER"
	ReasonOutOfRange     = "RECORD_OUT_OF_RANGE"
	ReasonOverlap        = "RECORD_OVERLAP"
	ReasonInvalid        = "INVALID_ARGUMENT"
	ReasonGenNotFound    = "GENERATION_NOT_FOUND"
	ReasonIdentityDiffer = "IDENTITY_MISMATCH"
)

// effect is what the model says a mutation does in a state: a refusal
// reason, or the next state. mayBeNotLive marks a mutation whose new
// object could have been collected (unreferenced), which metad refuses
// with OBJECT_NOT_LIVE after every other check passed.
type effect struct {
	reason       string
	next         Stream
	mayBeNotLive bool
	check        func(out *history.Output) string // checks an OK output
}

// Step applies op to s. It returns whether the op's recorded outcome is one
// the model allows in s, the next state, and why not.
func Step(s Stream, op *history.Op) (bool, Stream, string) {
	if !op.IsWrite() {
		if op.Status != history.OK {
			return true, s, "" // observed nothing
		}
		var why string
		switch op.Kind {
		case history.KindDescribe:
			why = s.checkDescribe(op.Out)
		case history.KindResolve:
			why = s.checkResolve(&op.In, op.Out)
		}
		return why == "", s, why
	}
	if op.Kind == history.KindReport {
		return true, s.report(op), "" // the model does not decide reports: report.go checks them
	}
	e := s.mutate(op)
	switch op.Status {
	case history.OK:
		if e.reason != "" {
			return false, s, fmt.Sprintf("acknowledged, but the model refuses it: %s", e.reason)
		}
		if e.check != nil {
			if why := e.check(op.Out); why != "" {
				return false, s, why
			}
		}
		return true, e.next, ""
	case history.Rejected:
		switch {
		case op.Reason == e.reason:
			return true, s, ""
		case e.reason == "" && e.mayBeNotLive && op.Reason == ReasonObjectNotLive:
			return true, s, ""
		}
		return false, s, fmt.Sprintf("refused with %s; the model says %q", op.Reason, orOK(e.reason))
	case history.Info:
		if e.reason != "" {
			return true, s, ""
		}
		return true, e.next, "" // it happened here; porcupine may also place it at the end
	}
	return true, s, "" // Fail: certainly did not happen
}

func orOK(r string) string {
	if r == "" {
		return "OK"
	}
	return r
}

func (s Stream) mutate(op *history.Op) effect {
	in := &op.In
	switch op.Kind {
	case history.KindAppend:
		return s.commitAppend(in)
	case history.KindTrim:
		return s.trim(in.Offset)
	case history.KindPublish:
		return s.publish(in)
	case history.KindRetire:
		return s.retire(in.View, in.Generation)
	case history.KindOpen:
		n := s
		n.Epoch++
		n.mix(fmt.Sprint("open", n.Epoch))
		return effect{next: n, check: func(out *history.Output) string {
			if out.Epoch != n.Epoch {
				return fmt.Sprintf("open returned epoch %d, the model says %d", out.Epoch, n.Epoch)
			}
			return ""
		}}
	case history.KindReplace, history.KindReupload:
		return s.replace(*in.Object)
	}
	return effect{next: s} // register, pin: no effect on the stream's state
}

func (s Stream) checkEpoch(epoch uint64) string {
	switch {
	case epoch < s.Epoch:
		return ReasonStaleEpoch
	case epoch > s.Epoch:
		return ReasonEpochAhead
	}
	return ""
}

func (s Stream) commitAppend(in *history.Input) effect {
	if r := s.checkEpoch(in.Epoch); r != "" {
		return effect{reason: r}
	}
	if in.ExpectedStart != s.End {
		return effect{reason: ReasonNotAtEnd}
	}
	n := s
	n.appends = s.appends.with(Append{
		Range: history.Range{Start: in.ExpectedStart, End: in.End}, Object: *in.Object, Bytes: *in.Bytes, DataCRC: in.DataCRC,
	})
	n.End = in.End
	n.mix(fmt.Sprint("append", in.End, in.Object.Identity))
	return effect{next: n, mayBeNotLive: s.mayBeCollected(*in.Object), check: func(out *history.Output) string {
		if out.CommittedEnd != n.End {
			return fmt.Sprintf("append returned committed end %d, not %d", out.CommittedEnd, n.End)
		}
		return ""
	}}
}

func (s Stream) trim(offset uint64) effect {
	switch {
	case offset > s.End:
		return effect{reason: ReasonTrimBeyondEnd}
	case offset < s.Trim:
		return effect{reason: ReasonTrimBackwards}
	}
	n := s
	if offset > s.Trim {
		n.Trim = offset
		for i := range n.Views {
			n.Views[i] = n.Views[i].dropBelow(offset)
		}
		n.mix(fmt.Sprint("trim", offset))
	}
	return effect{next: n, check: func(out *history.Output) string {
		if out.Trim != n.Trim || out.CommittedEnd != n.End {
			return fmt.Sprintf("trim returned trim %d end %d, the model says %d %d", out.Trim, out.CommittedEnd, n.Trim, n.End)
		}
		return ""
	}}
}

// dropBelow forgets records wholly below trim: they can never be read.
func (v View) dropBelow(trim uint64) View {
	gens := make([]Gen, len(v.Gens))
	for i, g := range v.Gens {
		keep := g.Records[:0:0]
		for _, r := range g.Records {
			if r.Range.End > trim {
				keep = append(keep, r)
			}
		}
		g.Records = keep
		gens[i] = g
	}
	v.Gens = gens
	return v
}

func (s Stream) publish(in *history.Input) effect {
	if r := s.checkEpoch(in.Epoch); r != "" {
		return effect{reason: r}
	}
	vi := viewIndex(in.View)
	v := s.Views[vi]
	cov := *in.Coverage
	var g Gen
	continuing := len(v.Gens) > 0 && v.Gens[len(v.Gens)-1].Number == in.Generation && !v.Gens[len(v.Gens)-1].Published
	switch {
	case continuing && v.Gens[len(v.Gens)-1].Coverage != cov:
		return effect{reason: ReasonInvalid}
	case !continuing && v.HasLast && in.Generation <= v.Last:
		return effect{reason: ReasonNotNewer}
	case cov.End > s.End:
		return effect{reason: ReasonOutOfRange}
	case continuing:
		g = v.Gens[len(v.Gens)-1]
	default:
		g = Gen{Number: in.Generation, Coverage: cov}
	}
	notLive, reason := s.admitRecords(g, cov, in.Records)
	if reason != "" {
		return effect{reason: reason}
	}
	recs := slices.Clone(g.Records)
	for _, r := range in.Records {
		if r.Range.End > s.Trim {
			recs = append(recs, r)
		}
	}
	slices.SortFunc(recs, func(a, b history.Record) int { return cmp.Compare(a.Range.Start, b.Range.Start) })
	g.Records, g.Published = recs, in.Complete
	n := s
	gens := slices.Clone(v.Gens)
	if continuing {
		gens[len(gens)-1] = g
	} else {
		gens = append(gens, g)
		v.Last, v.HasLast = in.Generation, true
	}
	v.Gens = gens
	n.Views[vi] = v
	n.mix(fmt.Sprint("publish", in.View, in.Generation, len(in.Records), in.Complete))
	return effect{next: n, mayBeNotLive: notLive, check: func(out *history.Output) string {
		if out.Generation != in.Generation {
			return fmt.Sprintf("publish returned generation %d, not %d", out.Generation, in.Generation)
		}
		return ""
	}}
}

// admitRecords checks a publish's records against the generation g they
// join and its coverage: the refusal reason, or whether any names an object
// the model cannot prove live (the server may then refuse it).
func (s Stream) admitRecords(g Gen, cov history.Range, records []history.Record) (notLive bool, reason string) {
	for _, r := range records {
		if r.Range.Start < cov.Start || r.Range.End > cov.End {
			return false, ReasonOutOfRange
		}
		for _, x := range g.Records {
			if x.Range.Start < r.Range.End && r.Range.Start < x.Range.End {
				return false, ReasonOverlap
			}
		}
		if !s.identityOK(r.Object) {
			return false, ReasonIdentityDiffer
		}
		notLive = notLive || s.mayBeCollected(r.Object)
	}
	return notLive, ""
}

func (s Stream) retire(view string, number uint64) effect {
	vi := viewIndex(view)
	if vi == 0 && number == 0 {
		return effect{reason: ReasonInvalid}
	}
	v := s.Views[vi]
	i := slices.IndexFunc(v.Gens, func(g Gen) bool { return g.Number == number })
	if i < 0 {
		return effect{reason: ReasonGenNotFound}
	}
	n := s
	v.Gens = slices.Delete(slices.Clone(v.Gens), i, i+1)
	n.Views[vi] = v
	n.mix(fmt.Sprint("retire", view, number))
	return effect{next: n}
}

// replace registers a new version of a key (new bytes, or the same bytes
// again). metad refuses it only while the key is being collected, which
// needs it to be unreferenced. With one version per key the new identity
// replaces the old, and records naming another stop being admissible; with
// many, nothing the stream references changes.
func (s Stream) replace(obj history.Object) effect {
	if s.Versions {
		return effect{next: s, mayBeNotLive: !s.referenced(obj.Key)}
	}
	n := s
	i, found := slices.BinarySearchFunc(s.Replaced, obj.Key, func(k KeyIdentity, key string) int { return strings.Compare(k.Key, key) })
	n.Replaced = slices.Clone(s.Replaced)
	if found {
		n.Replaced[i].Identity = obj.Identity
	} else {
		n.Replaced = slices.Insert(n.Replaced, i, KeyIdentity{obj.Key, obj.Identity})
	}
	n.mix(fmt.Sprint("replace", obj.Key, obj.Identity))
	return effect{next: n, mayBeNotLive: !s.referenced(obj.Key)}
}
