package resolver

import (
	"fmt"

	"github.com/metad/metad/fsm"
)

// State is the read-only view of replicated state that planning needs.
// *fsm.Machine implements it; tests wrap it to inject faults the machine
// itself would refuse to hold (a record whose checksum does not verify).
type State interface {
	Stream(id uint64) (fsm.StreamInfo, bool)
	// Generations returns the live generations of (stream, view), newest first.
	Generations(stream uint64, view fsm.View) []fsm.GenerationInfo
	// RecordFrom returns the first record of a generation that ends after
	// offset: the one containing it, or the next one.
	RecordFrom(stream uint64, view fsm.View, gen, offset uint64) (fsm.RecordInfo, bool)
	Object(ref fsm.ObjectRef) (fsm.ObjectInfo, bool)
	ObjectVersions(key string) []fsm.ObjectInfo
	// AppliedIndex is the Raft index the state reflects.
	AppliedIndex() uint64
	// Pin returns a pin that is neither released nor pruned.
	Pin(id uint64) (fsm.PinInfo, bool)
}

// Request is one resolve: which offset of which view of which stream, and
// the candidates the caller already found broken.
type Request struct {
	Stream  uint64
	View    fsm.View
	Offset  uint64
	Exclude []CandidateID
}

// CandidateID names one candidate exactly: a record at one metadata
// version. Excluding it excludes that version only; a repaired or
// republished record is a new candidate.
type CandidateID struct {
	Key     fsm.IndexKey
	Version uint64
}

func (c CandidateID) String() string { return fmt.Sprintf("%v@%d", c.Key, c.Version) }

// Candidate is an admitted index record and what it resolves the request to.
type Candidate struct {
	Record fsm.RecordInfo
	// Resolved is the exact readable range: it starts at the requested
	// offset (dense view) or at the next surviving offset (sparse view) and
	// ends where the record's coverage of it ends.
	Resolved fsm.Range
}

// ID names the candidate.
func (c Candidate) ID() CandidateID { return CandidateID{Key: c.Record.Key, Version: c.Record.Version} }

// Outcome is what planning concluded.
type Outcome int

const (
	// NotFound: the stream does not exist (or was deleted).
	NotFound Outcome = iota + 1
	// EOF: offset >= committed end.
	EOF
	// Trimmed: offset < trim.
	Trimmed
	// ViewEnd: a sparse view holds no offset in [offset, Plan.ViewEnd). When
	// ViewEnd == offset the view does not reach offset at all. Never a
	// dense range, never EOF.
	ViewEnd
	// Candidates: at least one admissible candidate, best first.
	Candidates
	// NeedsRepair: COMMITTED, no admissible candidate, and no valid
	// generation-0 record covers the committed offset.
	NeedsRepair
	// NoCandidate: records exist but every one was refused. Retryable.
	NoCandidate
	// TargetFound: the loop pinned and rechecked a candidate (Result only).
	TargetFound
)

var outcomeNames = map[Outcome]string{
	NotFound: "NOT_FOUND", EOF: "EOF", Trimmed: "OFFSET_TRIMMED", ViewEnd: "VIEW_END",
	Candidates: "CANDIDATES", NeedsRepair: "NEEDS_REPAIR", NoCandidate: "NO_CANDIDATE", TargetFound: "TARGET",
}

func (o Outcome) String() string {
	if s, ok := outcomeNames[o]; ok {
		return s
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Plan is the result of planning one request against one state.
type Plan struct {
	Outcome Outcome
	Stream  fsm.StreamInfo
	// Candidates are admissible, newest generation first.
	Candidates []Candidate
	// Refused lists every record considered and not admitted, with why.
	Refused []Refusal
	// ViewEnd is set for the ViewEnd outcome.
	ViewEnd uint64
	// RepairHint is set when candidates exist but no valid generation-0
	// record covers the offset: repair should run, but need not be awaited.
	RepairHint bool
	// ReadIndex is the applied index of the state the plan was made from.
	ReadIndex uint64

	// held is a pin on the first candidate's object that is committed in
	// the planned state itself (see Resolver.plan).
	held *Pin
	// cached marks a one-candidate plan taken from the Cache, not from a
	// read: its refusals are only known once the recheck has planned.
	cached bool
}

// PlanRequest decides, from one consistent state, what a resolve of req can
// return: a boundary outcome, or the ordered candidates of the requested
// view only. It is the plan (ARCHITECTURE.md, "The walk of a resolve",
// step 3) and has no side effects.
func PlanRequest(st State, req Request) Plan {
	s, ok := st.Stream(req.Stream)
	at := st.AppliedIndex()
	switch {
	case !ok:
		return Plan{Outcome: NotFound, ReadIndex: at}
	case req.Offset >= s.CommittedEnd:
		return Plan{Outcome: EOF, Stream: s, ReadIndex: at}
	case req.Offset < s.Trim:
		return Plan{Outcome: Trimmed, Stream: s, ReadIndex: at}
	}
	p := Plan{Stream: s, ReadIndex: at}
	if req.View == fsm.TopicCompacted {
		planSparse(st, req, &p)
	} else {
		planDense(st, req, &p)
	}
	return p
}

// planDense collects, newest generation first, the record of each generation
// that contains the offset. A generation that does not cover the offset is
// not a candidate and not a refusal: it simply says nothing about it.
func planDense(st State, req Request, p *Plan) {
	gen0Valid := false
	for _, g := range st.Generations(req.Stream, req.View) {
		rec, ok := st.RecordFrom(req.Stream, req.View, g.Number, req.Offset)
		if !ok || !rec.Range.Contains(req.Offset) {
			continue
		}
		if g.Number == 0 && rec.Status == fsm.RecordValid && rec.Verify() {
			gen0Valid = true
		}
		c := Candidate{Record: rec, Resolved: fsm.Range{Start: req.Offset, End: rec.Range.End}}
		p.admit(st, req, g, c)
	}
	if req.View != fsm.Committed || gen0Valid {
		p.Outcome = p.candidatesOr(NoCandidate)
		return
	}
	p.RepairHint = true
	p.Outcome = p.candidatesOr(NeedsRepair)
}

// planSparse finds, in each published generation covering the offset, the
// next surviving offset at or after it. The newest published generation
// covering the offset is authoritative about gaps: if nothing survives in it
// from the offset to the end of its coverage, the answer is ViewEnd, never
// an older, less compacted generation and never a dense range. A generation
// still being built is invisible. A sparse view is never repaired from, and
// never stands in for, COMMITTED.
func planSparse(st State, req Request, p *Plan) {
	claimed := false // a published generation named a surviving offset
	for _, g := range st.Generations(req.Stream, req.View) {
		if !g.Coverage.Contains(req.Offset) {
			continue
		}
		if g.Status != fsm.GenerationPublished {
			p.refuse(CandidateID{Key: fsm.IndexKey{Stream: req.Stream, View: req.View, Generation: g.Number}},
				ReasonUnpublished, fmt.Sprintf("generation %d is %s", g.Number, g.Status))
			continue
		}
		c, found := sparseCandidate(st, req, g)
		if !found {
			if !claimed {
				p.Outcome, p.ViewEnd = ViewEnd, g.Coverage.End
				return
			}
			break
		}
		claimed = true
		p.admit(st, req, g, c)
	}
	if !claimed {
		p.Outcome, p.ViewEnd = ViewEnd, req.Offset
		return
	}
	p.Outcome = p.candidatesOr(NoCandidate)
}

// sparseCandidate returns the record of generation g holding the first
// surviving offset at or after the requested one, inside g's coverage.
func sparseCandidate(st State, req Request, g fsm.GenerationInfo) (Candidate, bool) {
	from := req.Offset
	// Two steps at most: the record containing the offset may hold no
	// survivor after it, and then the next record's first survivor is it
	// (a published sparse record has at least one survivor).
	for range 2 {
		rec, ok := st.RecordFrom(req.Stream, req.View, g.Number, from)
		if !ok || rec.Range.Start >= g.Coverage.End {
			return Candidate{}, false
		}
		if sub, ok := nextSurvivor(rec, from); ok {
			return Candidate{Record: rec, Resolved: sub}, true
		}
		from = rec.Range.End
	}
	return Candidate{}, false
}

// nextSurvivor returns the surviving sub-range of a sparse record that
// holds the first surviving offset at or after o, clipped to start there.
func nextSurvivor(rec fsm.RecordInfo, o uint64) (fsm.Range, bool) {
	for _, s := range rec.Survivors {
		if s.End > o {
			return fsm.Range{Start: max(s.Start, o), End: s.End}, true
		}
	}
	return fsm.Range{}, false
}

func (p *Plan) candidatesOr(o Outcome) Outcome {
	if len(p.Candidates) > 0 {
		return Candidates
	}
	return o
}

// admit adds c to the candidates if it is admissible, else records why not.
func (p *Plan) admit(st State, req Request, g fsm.GenerationInfo, c Candidate) {
	reason, detail := admissible(st, g, c.Record)
	if reason == "" && excluded(req.Exclude, c.ID()) {
		reason, detail = ReasonExcluded, "the caller excluded this candidate"
	}
	if reason != "" {
		p.refuse(c.ID(), reason, detail)
		return
	}
	p.Candidates = append(p.Candidates, c)
}

func (p *Plan) refuse(id CandidateID, reason Reason, detail string) {
	p.Refused = append(p.Refused, Refusal{Candidate: id, Reason: reason, Detail: detail})
}

// admissible checks everything about a record that planning can check: a
// larger generation number alone proves nothing.
func admissible(st State, g fsm.GenerationInfo, rec fsm.RecordInfo) (Reason, string) {
	if g.Status != fsm.GenerationPublished {
		return ReasonUnpublished, fmt.Sprintf("generation %d is %s", g.Number, g.Status)
	}
	switch rec.Status {
	case fsm.RecordValid:
	case fsm.RecordRetired:
		return ReasonRetired, "record is retired"
	case fsm.RecordQuarantined:
		return ReasonQuarantined, "record is quarantined after a reported failure"
	default:
		return ReasonInvalidStatus, fmt.Sprintf("record status %s", rec.Status)
	}
	if !rec.Verify() {
		return ReasonChecksumMismatch, fmt.Sprintf("checksum %08x does not verify", rec.Checksum)
	}
	// The record names one version of its object; other versions of the
	// key, older or newer, say nothing about it.
	obj, ok := st.Object(rec.Object)
	switch {
	case !ok && len(st.ObjectVersions(rec.Object.Key)) > 0:
		// Below feature level 3 the key's bytes were replaced; from it on
		// the version was never registered.
		return ReasonIdentityMismatch, fmt.Sprintf("object %q holds no version %q", rec.Object.Key, rec.Object.Identity)
	case !ok:
		return ReasonObjectNotRegistered, fmt.Sprintf("object %q is not registered", rec.Object.Key)
	case obj.Status != fsm.ObjectLive:
		return ReasonObjectNotLive, fmt.Sprintf("version %q of object %q is %s", rec.Object.Identity, rec.Object.Key, obj.Status)
	}
	return "", ""
}

func excluded(ex []CandidateID, id CandidateID) bool {
	for _, e := range ex {
		if e == id {
			return true
		}
	}
	return false
}
