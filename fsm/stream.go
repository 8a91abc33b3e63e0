package fsm

import (
	"github.com/metad/metad/checksum"
	"github.com/metad/metad/fsm/fsmpb"
)

// stream is one stream's state.
type stream struct {
	// Invariant: info.Trim <= info.CommittedEnd; both, WriterEpoch and
	// Version never decrease.
	info StreamInfo
	// evidence holds the append evidence that is not wholly below trim,
	// ordered by start.
	// Invariant: contiguous, and the last entry ends at info.CommittedEnd.
	evidence orderedSet[evidence]
	// views is indexed by View; index 0 (unspecified) is unused.
	views [3]viewIndex
}

// evidence is the stored form of EvidenceInfo; the stream id is implied.
// Like a record (index.go), it is stored by value, names its object through
// the registry's shared target (never one with survivors), and is never
// changed in place once in the tree.
type evidence struct {
	rng     Range
	bytes   ByteRange
	epoch   uint64
	version uint64
	target  *target
	// data is the writer's CRC-32C of the bytes (absent below level 3).
	data checksum.Data
}

func evidenceLess(a, b evidence) bool { return a.rng.Start < b.rng.Start }

func (m *Machine) newStream(id uint64, name string, index uint64) *stream {
	s := &stream{
		info: StreamInfo{
			ID: id, Name: name, Status: StreamActive,
			Version: index, CreatedVersion: index,
		},
		evidence: m.newEvidenceSet(id),
	}
	// COMMITTED generation 0 exists from the start: it is derived from append
	// evidence and grows with every indexed append or repair.
	s.views[Committed] = viewIndex{
		hasLast: true,
		gens:    []*generation{m.newGeneration(id, Committed, 0, GenerationPublished, index, Range{})},
	}
	return s
}

func (s *stream) view(v View) *viewIndex { return &s.views[v] }

// lookupStream returns the stream or a STREAM_NOT_FOUND refusal naming the
// command's stream_id field.
func (m *Machine) lookupStream(index, id uint64) (*stream, *fsmpb.Result) {
	return m.lookupStreamField(index, id, "stream_id")
}

// lookupStreamField is lookupStream for a command whose stream id is at field.
func (m *Machine) lookupStreamField(index, id uint64, field string) (*stream, *fsmpb.Result) {
	s, ok := m.streams[id]
	if !ok {
		return nil, reject(index, fsmpb.RejectCode_STREAM_NOT_FOUND, field, "stream %d does not exist", id)
	}
	// Every command that changes a stream finds it here first: its row is
	// written back at the end of the Apply (persist).
	m.touch(s)
	return s, nil
}

func (m *Machine) createStream(index uint64, c *fsmpb.CreateStream) *fsmpb.Result {
	if id, ok := m.byName[c.Name]; ok {
		return &fsmpb.Result{Version: index, StreamId: id}
	}
	id := m.nextStreamID
	m.nextStreamID++
	m.streams[id] = m.newStream(id, c.Name, index)
	m.touch(m.streams[id])
	m.byName[c.Name] = id
	return &fsmpb.Result{Version: index, StreamId: id}
}

func (m *Machine) openForWrite(index uint64, c *fsmpb.OpenForWrite) *fsmpb.Result {
	s, rej := m.lookupStream(index, c.StreamId)
	if rej != nil {
		return rej
	}
	if s.info.Status == StreamSealed {
		return reject(index, fsmpb.RejectCode_STREAM_SEALED, "stream_id", "stream %d is sealed", s.info.ID)
	}
	s.info.WriterEpoch++
	s.info.Version = index
	return &fsmpb.Result{Version: index, StreamId: s.info.ID, WriterEpoch: s.info.WriterEpoch}
}

// checkEpoch fences writers: only the current epoch may write.
func checkEpoch(index uint64, s *stream, epoch uint64) *fsmpb.Result {
	switch {
	case epoch < s.info.WriterEpoch:
		r := reject(index, fsmpb.RejectCode_STALE_EPOCH, "writer_epoch",
			"writer epoch %d is stale: stream %d is at epoch %d", epoch, s.info.ID, s.info.WriterEpoch)
		r.WriterEpoch = s.info.WriterEpoch
		return r
	case epoch > s.info.WriterEpoch:
		r := reject(index, fsmpb.RejectCode_EPOCH_AHEAD, "writer_epoch",
			"writer epoch %d was never issued: stream %d is at epoch %d", epoch, s.info.ID, s.info.WriterEpoch)
		r.WriterEpoch = s.info.WriterEpoch
		return r
	}
	return nil
}

func (m *Machine) commitAppend(index uint64, c *fsmpb.CommitAppend) *fsmpb.Result {
	s, rej := m.lookupStream(index, c.StreamId)
	if rej != nil {
		return rej
	}
	if rej := checkAppend(index, s, c.WriterEpoch, c.ExpectedStart); rej != nil {
		return rej
	}
	obj, rej := m.liveObject(index, refOf(c.Object), "object")
	if rej != nil {
		return rej
	}
	if rej := m.insideObject(index, obj, byteRangeOf(c.Bytes), "bytes"); rej != nil {
		return rej
	}
	refs := m.appendTo(index, s, obj, appendOf(c.ExpectedStart, c.End, c.Bytes, c.WriterEpoch, m.dataChecksum(c.DataCrc32C)), c.IndexGen0)
	m.addReferences(obj.ref, refs)
	return &fsmpb.Result{Version: index, StreamId: s.info.ID, CommittedEnd: s.info.CommittedEnd}
}

// checkAppend refuses an append to s by writer epoch at expectedStart
// that may not commit: the stream is sealed, the writer fenced, or the
// append not at the committed end (a compare-and-set).
func checkAppend(index uint64, s *stream, epoch, expectedStart uint64) *fsmpb.Result {
	if s.info.Status == StreamSealed {
		return reject(index, fsmpb.RejectCode_STREAM_SEALED, "stream_id", "stream %d is sealed", s.info.ID)
	}
	if rej := checkEpoch(index, s, epoch); rej != nil {
		return rej
	}
	if expectedStart != s.info.CommittedEnd {
		r := reject(index, fsmpb.RejectCode_APPEND_NOT_AT_END, "expected_start",
			"append must start at committed end %d, not %d", s.info.CommittedEnd, expectedStart)
		r.CommittedEnd = s.info.CommittedEnd
		return r
	}
	return nil
}

// appendOf builds the evidence of an accepted append.
func appendOf(start, end uint64, b *fsmpb.ByteRange, epoch uint64, data checksum.Data) evidence {
	return evidence{rng: Range{start, end}, bytes: byteRangeOf(b), epoch: epoch, data: data}
}

// appendTo commits an append that checkAppend and the object checks
// accepted: it records the evidence (and, with indexGen0, the COMMITTED
// generation-0 record) naming obj, and advances the committed end. It
// returns how many references to obj it made, which the caller must count
// (addReferences) before the command returns.
func (m *Machine) appendTo(index uint64, s *stream, obj object, ev evidence, indexGen0 bool) (refs uint64) {
	ev.target, ev.version = obj.target, index
	s.evidence.ReplaceOrInsert(ev)
	refs = 1
	if indexGen0 {
		key := IndexKey{Stream: s.info.ID, View: Committed, Generation: 0, Start: ev.rng.Start}
		rec := record{rng: ev.rng, target: obj.target, bytes: ev.bytes, version: index, status: RecordValid, data: ev.data}
		rec.checksum = RecordChecksumData(key, ev.rng, nil, obj.ref, rec.bytes, rec.data)
		g := s.views[Committed].gens[0]
		g.records.ReplaceOrInsert(rec)
		g.version = index
		refs++
	}
	s.info.CommittedEnd = ev.rng.End
	s.info.Version = index
	return refs
}

// trim advances the trim point and forgets evidence and records that lie
// wholly below it: they can never be read again.
func (m *Machine) trim(index uint64, c *fsmpb.Trim) *fsmpb.Result {
	s, rej := m.lookupStream(index, c.StreamId)
	if rej != nil {
		return rej
	}
	switch {
	case c.Offset > s.info.CommittedEnd:
		r := reject(index, fsmpb.RejectCode_TRIM_BEYOND_END, "offset",
			"trim %d is beyond committed end %d", c.Offset, s.info.CommittedEnd)
		r.CommittedEnd, r.Trim = s.info.CommittedEnd, s.info.Trim
		return r
	case c.Offset < s.info.Trim:
		r := reject(index, fsmpb.RejectCode_TRIM_BACKWARDS, "offset",
			"trim %d is below the trim point %d; trim never moves back", c.Offset, s.info.Trim)
		r.CommittedEnd, r.Trim = s.info.CommittedEnd, s.info.Trim
		return r
	case c.Offset == s.info.Trim:
		return &fsmpb.Result{Version: index, StreamId: s.info.ID, Trim: s.info.Trim, CommittedEnd: s.info.CommittedEnd}
	}
	s.info.Trim = c.Offset
	s.info.Version = index
	s.evidence.deleteFrontWhile(func(e evidence) bool {
		if e.rng.End > s.info.Trim {
			return false
		}
		m.dropReference(e.target.ref)
		return true
	})
	for v := range s.views {
		for _, g := range s.views[v].gens {
			m.dropRecordsBelow(g, s.info.Trim)
		}
	}
	return &fsmpb.Result{Version: index, StreamId: s.info.ID, Trim: s.info.Trim, CommittedEnd: s.info.CommittedEnd}
}

func (m *Machine) seal(index uint64, c *fsmpb.Seal) *fsmpb.Result {
	s, rej := m.lookupStream(index, c.StreamId)
	if rej != nil {
		return rej
	}
	if s.info.Status != StreamSealed {
		s.info.Status = StreamSealed
		s.info.Version = index
	}
	return &fsmpb.Result{Version: index, StreamId: s.info.ID, CommittedEnd: s.info.CommittedEnd}
}

// deleteStream forgets the stream and everything it references; the objects
// it named become candidates for garbage collection. Ids are never reused.
func (m *Machine) deleteStream(index uint64, c *fsmpb.DeleteStream) *fsmpb.Result {
	s, rej := m.lookupStream(index, c.StreamId)
	if rej != nil {
		return rej
	}
	s.evidence.Ascend(func(e evidence) bool {
		m.dropReference(e.target.ref)
		return true
	})
	for v := range s.views {
		for _, g := range s.views[v].gens {
			m.dropGenerationRecords(g)
		}
	}
	delete(m.streams, s.info.ID)
	delete(m.byName, s.info.Name)
	if m.kv != nil {
		// dropGenerationRecords cleared the records; the evidence goes too.
		m.kv.store.DeleteRange(evidencePrefix(s.info.ID), prefixEnd(evidencePrefix(s.info.ID)))
	}
	return &fsmpb.Result{Version: index, StreamId: s.info.ID}
}
