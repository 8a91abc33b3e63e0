package fsm

import (
	"github.com/google/btree"

	"github.com/metad/metad/checksum"

	"github.com/metad/metad/fsm/fsmpb"
)

// viewIndex holds the generations of one (stream, view).
type viewIndex struct {
	// last is the largest generation number ever created in this view,
	// retired ones included; hasLast says whether there was any.
	// Invariant: last never decreases, and every live generation's number
	// is <= last.
	last    uint64
	hasLast bool
	// gens holds the live (building or published) generations.
	// Invariant: strictly ascending by number.
	gens []*generation
}

// generation is one numbered index of one (stream, view).
type generation struct {
	number   uint64
	status   GenerationStatus
	version  uint64
	coverage Range
	// records is ordered by range start.
	// Invariant: ranges are pairwise disjoint, so start order is end order.
	records orderedSet[record]
}

// record is the stored form of RecordInfo; the key is implied by position.
//
// Records are stored by value in the B-tree's leaves, so their size is the
// state's size: 56 bytes, with what is the same for many records (the
// object) or rarely present (survivors) behind one shared pointer.
//
// Invariant (copy-on-write): a record is never changed in place once it is
// in a tree, and neither is its target: Clone shares the trees' nodes, and
// through them the targets, with every copy. A change is a new record (and
// a new target, if the object or survivors change) put in with
// ReplaceOrInsert, which copies the node first.
type record struct {
	rng      Range
	bytes    ByteRange
	version  uint64
	target   *target
	checksum uint32
	status   RecordStatus
	// data is the writer's CRC-32C of the bytes (absent below level 3).
	data checksum.Data
}

// target is the object a record or evidence entry names and, for a sparse
// record, its survivors. Records and evidence without survivors share the
// registry's target of their object (object.target), so a million records
// naming one object hold one copy of its key and identity; a sparse record
// has a target of its own, sharing the strings.
//
// Invariant: immutable once made (see record).
type target struct {
	ref       ObjectRef
	survivors []Range
}

// withSurvivors returns the target naming t's object with survivors: t
// itself when there are none.
func (t *target) withSurvivors(survivors []Range) *target {
	if len(survivors) == 0 {
		return t
	}
	return &target{ref: t.ref, survivors: survivors}
}

func recordLess(a, b record) bool { return a.rng.Start < b.rng.Start }

// insertSorted puts items, sorted by key and none already in t, into t.
// The result is what inserting them one by one gives; only the tree's
// shape differs. google/btree splits a full node in half, so items added
// in key order leave every leaf half empty behind them: twice the memory
// per item. Inserting every other item first and then those between fills
// those leaves instead: each of the second pass's items lands between two
// neighbours in a half-full leaf, which ends holding all 63 items a node
// of degree 32 can, without splitting again.
func insertSorted[T any](t *btree.BTreeG[T], items []T) {
	for i := 1; i < len(items); i += 2 {
		t.ReplaceOrInsert(items[i])
	}
	for i := 0; i < len(items); i += 2 {
		t.ReplaceOrInsert(items[i])
	}
}

func (m *Machine) newGeneration(stream uint64, view View, number uint64, status GenerationStatus, index uint64, coverage Range) *generation {
	return &generation{
		number: number, status: status, version: index, coverage: coverage,
		records: m.newRecordSet(stream, view, number),
	}
}

// latest returns the newest live generation, or nil.
func (v *viewIndex) latest() *generation {
	if len(v.gens) == 0 {
		return nil
	}
	return v.gens[len(v.gens)-1]
}

func (v *viewIndex) find(number uint64) (int, *generation) {
	for i, g := range v.gens {
		if g.number == number {
			return i, g
		}
	}
	return -1, nil
}

// anyOverlap reports whether a record of g shares an offset with r.
func (g *generation) anyOverlap(r Range) bool {
	found := false
	g.records.DescendLessOrEqual(record{rng: Range{Start: r.Start}}, func(x record) bool {
		found = x.rng.Overlaps(r)
		return false
	})
	if !found && r.End > r.Start+1 {
		g.records.AscendRange(record{rng: Range{Start: r.Start + 1}}, record{rng: Range{Start: r.End}}, func(record) bool {
			found = true
			return false
		})
	}
	return found
}

// overlapping returns the records of g that share an offset with r.
func (g *generation) overlapping(r Range) []record {
	var out []record
	// The record starting at or before r.Start may reach into r.
	g.records.DescendLessOrEqual(record{rng: Range{Start: r.Start}}, func(x record) bool {
		if x.rng.Overlaps(r) {
			out = append(out, x)
		}
		return false
	})
	g.records.AscendRange(record{rng: Range{Start: r.Start + 1}}, record{rng: Range{Start: r.End}}, func(x record) bool {
		out = append(out, x)
		return true
	})
	return out
}

func (m *Machine) publishGeneration(index uint64, c *fsmpb.PublishGeneration) *fsmpb.Result {
	s, rej := m.lookupStream(index, c.StreamId)
	if rej != nil {
		return rej
	}
	if rej := checkEpoch(index, s, c.WriterEpoch); rej != nil {
		return rej
	}
	vi := s.view(c.View)
	coverage := rangeOf(c.Coverage)
	g := vi.latest()
	continuing := g != nil && g.number == c.Generation && g.status == GenerationBuilding
	switch {
	case continuing && g.coverage != coverage:
		return reject(index, fsmpb.RejectCode_INVALID_ARGUMENT, "coverage",
			"coverage %v differs from %v given by the generation's first part", coverage, g.coverage)
	case !continuing && vi.hasLast && c.Generation <= vi.last:
		r := reject(index, fsmpb.RejectCode_GENERATION_NOT_NEWER, "generation",
			"generation %d is not larger than %d, the last of stream %d view %s", c.Generation, vi.last, s.info.ID, c.View)
		r.Generation = vi.last
		return r
	case coverage.End > s.info.CommittedEnd:
		r := reject(index, fsmpb.RejectCode_RECORD_OUT_OF_RANGE, "coverage",
			"coverage %v reaches past committed end %d", coverage, s.info.CommittedEnd)
		r.CommittedEnd = s.info.CommittedEnd
		return r
	}
	if !continuing {
		g = m.newGeneration(s.info.ID, c.View, c.Generation, GenerationBuilding, index, coverage)
	}
	recs := make([]record, len(c.Records))
	// One look for the whole part (Validate refused records out of order
	// or overlapping each other): record by record only if something of
	// the generation lies in its span. On a store, each look is a seek.
	mayOverlap := len(c.Records) > 0 && g.records.Len() > 0 &&
		g.anyOverlap(Range{Start: rangeOf(c.Records[0].Range).Start, End: rangeOf(c.Records[len(c.Records)-1].Range).End})
	for i, pr := range c.Records {
		rec, rej := m.admitRecord(index, s, g, c.View, pr, fieldIndex("records", i), mayOverlap)
		if rej != nil {
			return rej
		}
		recs[i] = rec
	}
	// Every check passed; from here on nothing can refuse.
	if !continuing {
		vi.gens = append(vi.gens, g)
		vi.last, vi.hasLast = c.Generation, true
	}
	kept := recs[:0]
	for _, rec := range recs {
		if rec.rng.End <= s.info.Trim {
			// Trimmed while the generation was being written: it can never be
			// read, so it is not kept (trim would have dropped it).
			continue
		}
		kept = append(kept, rec)
		m.addReference(rec.target.ref)
	}
	// Validate refused records out of order or overlapping, and
	// admitRecord records overlapping the generation's.
	g.records.insertSorted(kept)
	g.version = index
	if c.Complete {
		g.status = GenerationPublished
	}
	return &fsmpb.Result{Version: index, StreamId: s.info.ID, Generation: g.number}
}

// admitRecord checks one published record against the machine: inside the
// generation's coverage and the committed offsets, clear of the records
// already in the generation, naming a live object under the same identity,
// and carrying the right checksum. Static shape was checked by Validate.
//
// checkOverlap false says the caller knows no record of g overlaps it.
func (m *Machine) admitRecord(index uint64, s *stream, g *generation, view View, pr *fsmpb.IndexRecord, field string, checkOverlap bool) (record, *fsmpb.Result) {
	rng := rangeOf(pr.Range)
	if rng.Start < g.coverage.Start || rng.End > g.coverage.End {
		return record{}, reject(index, fsmpb.RejectCode_RECORD_OUT_OF_RANGE, field+".range",
			"record %v lies outside the generation's coverage %v", rng, g.coverage)
	}
	if checkOverlap {
		if over := g.overlapping(rng); len(over) > 0 {
			return record{}, reject(index, fsmpb.RejectCode_RECORD_OVERLAP, field+".range",
				"record %v overlaps record %v of generation %d", rng, over[0].rng, g.number)
		}
	}
	obj, rej := m.liveObject(index, refOf(pr.Object), field+".object")
	if rej != nil {
		return record{}, rej
	}
	if rej := m.insideObject(index, obj, byteRangeOf(pr.Bytes), field+".bytes"); rej != nil {
		return record{}, rej
	}
	rec := record{
		rng: rng, target: obj.target.withSurvivors(rangesOf(pr.Survivors)), bytes: byteRangeOf(pr.Bytes),
		version: index, checksum: pr.Checksum, status: RecordValid, data: m.dataChecksum(pr.DataCrc32C),
	}
	key := IndexKey{Stream: s.info.ID, View: view, Generation: g.number, Start: rng.Start}
	if want := RecordChecksumData(key, rng, rec.target.survivors, rec.target.ref, rec.bytes, rec.data); want != pr.Checksum {
		return record{}, reject(index, fsmpb.RejectCode_CHECKSUM_MISMATCH, field+".checksum",
			"checksum %08x does not match the record's canonical fields (see RecordChecksum)", pr.Checksum)
	}
	return rec, nil
}

func (m *Machine) retireGeneration(index uint64, c *fsmpb.RetireGeneration) *fsmpb.Result {
	s, rej := m.lookupStream(index, c.StreamId)
	if rej != nil {
		return rej
	}
	if c.View == Committed && c.Generation == 0 {
		return reject(index, fsmpb.RejectCode_INVALID_ARGUMENT, "generation",
			"generation 0 of COMMITTED is derived from append evidence and cannot be retired")
	}
	vi := s.view(c.View)
	i, g := vi.find(c.Generation)
	if g == nil {
		return reject(index, fsmpb.RejectCode_GENERATION_NOT_FOUND, "generation",
			"stream %d view %s has no live generation %d", s.info.ID, c.View, c.Generation)
	}
	m.dropGenerationRecords(g)
	vi.gens = append(vi.gens[:i:i], vi.gens[i+1:]...)
	return &fsmpb.Result{Version: index, StreamId: s.info.ID, Generation: c.Generation}
}

func (m *Machine) dropGenerationRecords(g *generation) {
	g.records.Ascend(func(r record) bool {
		m.dropReference(r.target.ref)
		return true
	})
	g.records.Clear()
}

func (m *Machine) dropRecordsBelow(g *generation, trim uint64) {
	g.records.deleteFrontWhile(func(r record) bool {
		if r.rng.End > trim {
			return false
		}
		m.dropReference(r.target.ref)
		return true
	})
}

// recordAt finds the index record a command names by key, or the refusal
// that says why not (no such stream, no such record).
func (m *Machine) recordAt(index uint64, k *fsmpb.IndexKey) (*stream, *generation, record, *fsmpb.Result) {
	key := indexKeyOf(k)
	s, rej := m.lookupStreamField(index, key.Stream, "key.stream_id")
	if rej != nil {
		return nil, nil, record{}, rej
	}
	_, g := s.view(key.View).find(key.Generation)
	if g != nil {
		if rec, ok := g.records.Get(record{rng: Range{Start: key.Start}}); ok {
			return s, g, rec, nil
		}
	}
	return nil, nil, record{}, reject(index, fsmpb.RejectCode_RECORD_NOT_FOUND, "key", "no index record %v", key)
}

// setRecordStatus gives a record a new status under a new version.
func setRecordStatus(g *generation, rec record, status RecordStatus, index uint64) {
	rec.status = status
	rec.version = index
	g.records.ReplaceOrInsert(rec)
	g.version = index
}

// reportCandidateFailure records that a reader could not use a record. A
// permanent failure quarantines the record, so no resolve admits it again;
// a transient one changes nothing. A report about an older version of the
// record is stale and changes nothing either.
func (m *Machine) reportCandidateFailure(index uint64, c *fsmpb.ReportCandidateFailure) *fsmpb.Result {
	s, g, rec, rej := m.recordAt(index, c.Key)
	if rej != nil {
		return rej
	}
	res := &fsmpb.Result{Version: index, StreamId: s.info.ID, Generation: g.number}
	if rec.version != c.Version || rec.status != RecordValid || !permanentFailure(c.Kind) {
		return res
	}
	setRecordStatus(g, rec, RecordQuarantined, index)
	res.Quarantined = true
	return res
}

// liftQuarantine makes a quarantined record valid again, under a new
// version, if it is still quarantined at the version the caller verified.
func (m *Machine) liftQuarantine(index uint64, c *fsmpb.LiftQuarantine) *fsmpb.Result {
	s, g, rec, rej := m.recordAt(index, c.Key)
	if rej != nil {
		return rej
	}
	if rec.version != c.Version || rec.status != RecordQuarantined {
		return reject(index, fsmpb.RejectCode_CONDITION_FAILED, "version",
			"record %v is %s at version %d, not quarantined at %d", indexKeyOf(c.Key), rec.status, rec.version, c.Version)
	}
	setRecordStatus(g, rec, RecordValid, index)
	return &fsmpb.Result{Version: index, StreamId: s.info.ID, Generation: g.number}
}

func permanentFailure(k FailureKind) bool {
	switch k {
	case fsmpb.FailureKind_FAILURE_KIND_IDENTITY_MISMATCH,
		fsmpb.FailureKind_FAILURE_KIND_OBJECT_MISSING,
		fsmpb.FailureKind_FAILURE_KIND_CORRUPT:
		return true
	}
	return false
}

// repairGen0 rebuilds the COMMITTED generation-0 record of one append from
// its evidence, replacing whatever stale records overlapped it. Every
// condition is checked at apply time, so of several repairs planned from the
// same state at most one takes effect.
func (m *Machine) repairGen0(index uint64, c *fsmpb.RepairGen0) *fsmpb.Result {
	s, rej := m.lookupStream(index, c.StreamId)
	if rej != nil {
		return rej
	}
	ev, ok := s.evidence.Get(evidence{rng: Range{Start: c.EvidenceStart}})
	if !ok || ev.version != c.EvidenceVersion {
		return reject(index, fsmpb.RejectCode_CONDITION_FAILED, "evidence_version",
			"no evidence at %d with version %d", c.EvidenceStart, c.EvidenceVersion)
	}
	gotRange, gotObject := rangeOf(c.Record.Range), refOf(c.Record.Object)
	if gotRange != ev.rng || gotObject != ev.target.ref || byteRangeOf(c.Record.Bytes) != ev.bytes || len(c.Record.Survivors) > 0 {
		return reject(index, fsmpb.RejectCode_CONDITION_FAILED, "record",
			"record %v %v does not match its evidence %v %v", gotRange, gotObject, ev.rng, ev.target.ref)
	}
	key := IndexKey{Stream: s.info.ID, View: Committed, Generation: 0, Start: ev.rng.Start}
	// The record carries its evidence's data checksum, whatever the
	// command says: the evidence is what the writer committed.
	if sum := RecordChecksumData(key, ev.rng, nil, ev.target.ref, ev.bytes, ev.data); sum != c.Record.Checksum {
		return reject(index, fsmpb.RejectCode_CHECKSUM_MISMATCH, "record.checksum",
			"checksum %08x does not match the record's canonical fields (see RecordChecksum)", c.Record.Checksum)
	}
	g0 := s.views[Committed].gens[0]
	stale := g0.overlapping(ev.rng)
	if !sameRecordVersions(stale, c.Replace) {
		return reject(index, fsmpb.RejectCode_CONDITION_FAILED, "replace",
			"generation-0 records overlapping %v changed since the repair was planned", ev.rng)
	}
	obj, rej := m.liveObject(index, ev.target.ref, "record.object")
	if rej != nil {
		return rej
	}
	for _, r := range stale {
		g0.records.Delete(r)
		m.dropReference(r.target.ref)
	}
	g0.records.ReplaceOrInsert(record{
		rng: ev.rng, target: obj.target, bytes: ev.bytes, version: index,
		checksum: c.Record.Checksum, status: RecordValid, data: ev.data,
	})
	m.addReference(obj.ref)
	g0.version = index
	return &fsmpb.Result{Version: index, StreamId: s.info.ID, Generation: 0}
}

func sameRecordVersions(have []record, want []*fsmpb.RecordVersion) bool {
	if len(have) != len(want) {
		return false
	}
	for i := range have {
		if have[i].rng.Start != want[i].Start || have[i].version != want[i].Version {
			return false
		}
	}
	return true
}
