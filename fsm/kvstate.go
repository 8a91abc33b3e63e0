package fsm

import (
	"encoding/binary"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/fsm/fsmpb"
	"github.com/metad/metad/fsm/kv"
)

// The state in a kv.Store. Every key starts with one byte naming what it
// holds; every value is the snapshot encoding of what it holds (the
// SnapshotRecord the snapshot format writes for it), so that one codec,
// already fuzzed and golden-tested, serves both.
//
//	0x00                          meta: applied index (8 bytes), then Meta
//	0x01 len(key) key identity    an object version
//	0x02 stream                   a stream's row: the stream, its
//	                              generations, and the counts of its sets
//	0x03 stream start             append evidence
//	0x04 stream view gen start    an index record
//	0x05 pin id                   a pin
//	0x06 request id               a dedup entry
//	0x07 node id                  a tombstone
//	0xff ...                      the owner's (raftstore's) own keys
//
// Numbers are big-endian, so byte order is numeric order. Evidence and
// index records live only in the store (kvSet); everything else is also
// held in memory, where the machine reads it, and written through to the
// store at the end of each Apply (persist). Their size grows with streams,
// objects and pins, not with the index records that dominate a large state.
const (
	prefixMeta      = 0x00
	prefixObject    = 0x01
	prefixStream    = 0x02
	prefixEvidence  = 0x03
	prefixRecord    = 0x04
	prefixPin       = 0x05
	prefixDedup     = 0x06
	prefixTombstone = 0x07
	// PrefixOwner starts every key the store's owner may use for itself;
	// the machine never reads or writes one.
	PrefixOwner = 0xff
)

// kvState is what a machine on a kv.Store has beyond a machine in memory.
type kvState struct {
	// store is the live machine's store; nil on a clone.
	store kv.Store
	// reader is what the sets read: store, or a clone's view.
	reader kv.Reader
	// view is a clone's point of the store, released by Close.
	view  kv.View
	dirty dirtySet
}

// dirtySet names what Apply changed of the state held in memory, written
// to the store by persist. A name whose item no longer exists is deleted.
type dirtySet struct {
	streams    map[uint64]struct{}
	objects    map[ObjectRef]struct{}
	pins       map[uint64]struct{}
	dedup      map[string]struct{}
	tombstones map[string]struct{}
}

func newDirtySet() dirtySet {
	return dirtySet{
		streams: map[uint64]struct{}{}, objects: map[ObjectRef]struct{}{}, pins: map[uint64]struct{}{},
		dedup: map[string]struct{}{}, tombstones: map[string]struct{}{},
	}
}

// OnStore reports whether the machine keeps its state in a kv.Store.
func (m *Machine) OnStore() bool { return m.kv != nil }

// Open returns the machine whose state store holds; an empty store gives an
// empty machine (applied index 0). The machine writes each Apply's changes
// to store and never commits: the caller commits, once per batch of
// applies, after adding its own keys (PrefixOwner) to the same batch.
func Open(store kv.Store, opts ...Option) (m *Machine, err error) {
	defer kv.Catch(&err)
	m = New(opts...)
	m.kv = &kvState{store: store, reader: store, dirty: newDirtySet()}
	if err := m.load(); err != nil {
		return nil, fmt.Errorf("fsm: open state: %w", err)
	}
	m.kv.dirty = newDirtySet()
	// A machine that opened a large state waits a check's worth of applies
	// before its first sampled check (invariants_on.go), as it would had it
	// applied the state itself, instead of reading it all back at once.
	if work := m.checkWork(); work > 1<<16 {
		m.nextCheck = m.applied + 1 + uint64(work)
	}
	return m, nil
}

// load reads the state held in memory from the store, in the snapshot's
// canonical order (objects before what names them, a stream before its
// generations, pins after objects), through the snapshot's own restore.
func (m *Machine) load() error {
	if v, ok := m.kv.store.Get([]byte{prefixMeta}); ok {
		if len(v) < 8 {
			return fmt.Errorf("%w: meta key of %d bytes", ErrCorruptSnapshot, len(v))
		}
		if err := m.loadRecord(v[8:]); err != nil {
			return err
		}
		m.applied = binary.BigEndian.Uint64(v)
	}
	for _, p := range []byte{prefixObject, prefixStream, prefixPin, prefixDedup, prefixTombstone} {
		if err := m.loadPrefix(p); err != nil {
			return err
		}
	}
	return nil
}

func (m *Machine) loadPrefix(p byte) error {
	it := m.kv.store.Iter([]byte{p}, []byte{p + 1})
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		var err error
		if p == prefixStream {
			err = m.loadStreamRow(it.Value())
		} else {
			err = m.loadRecord(it.Value())
		}
		if err != nil {
			return fmt.Errorf("key %x: %w", it.Key(), err)
		}
	}
	return nil
}

func (m *Machine) loadRecord(b []byte) error {
	rec := &fsmpb.SnapshotRecord{}
	if err := proto.Unmarshal(b, rec); err != nil {
		return fmt.Errorf("%w: %w", ErrCorruptSnapshot, err)
	}
	return m.restoreRecord(rec)
}

// persist writes what the last Apply changed of the in-memory state, and
// the meta key, into the store's current batch.
func (m *Machine) persist() {
	st, d := m.kv.store, &m.kv.dirty
	meta := binary.BigEndian.AppendUint64(nil, m.applied)
	st.Set([]byte{prefixMeta}, marshalStateRecord(meta, m.metaRecord()))
	for id := range d.streams {
		if s, ok := m.streams[id]; ok {
			st.Set(streamKey(id), s.row())
		} else {
			st.Delete(streamKey(id))
		}
	}
	for ref := range d.objects {
		if o, ok := m.objects.Get(object{ref: ref}); ok {
			st.Set(objectKey(ref), marshalStateRecord(nil, o.record()))
		} else {
			st.Delete(objectKey(ref))
		}
	}
	for id := range d.pins {
		if p, ok := m.pins.Get(pin{id: id}); ok {
			st.Set(pinKey(id), marshalStateRecord(nil, p.record()))
		} else {
			st.Delete(pinKey(id))
		}
	}
	for id := range d.dedup {
		if e, ok := m.dedup.Get(dedupEntry{requestID: id}); ok {
			st.Set(dedupKey(id), marshalStateRecord(nil, e.record()))
		} else {
			st.Delete(dedupKey(id))
		}
	}
	for id := range d.tombstones {
		if t, ok := m.tombstones[id]; ok {
			st.Set(tombstoneKey(id), marshalStateRecord(nil, t.record()))
		} else {
			st.Delete(tombstoneKey(id))
		}
	}
	clear(d.streams)
	clear(d.objects)
	clear(d.pins)
	clear(d.dedup)
	clear(d.tombstones)
}

func marshalStateRecord(b []byte, rec *fsmpb.SnapshotRecord) []byte {
	out, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend(b, rec)
	if err != nil {
		panic("fsm: marshal state record: " + err.Error())
	}
	return out
}

func streamKey(id uint64) []byte { return binary.BigEndian.AppendUint64([]byte{prefixStream}, id) }
func pinKey(id uint64) []byte    { return binary.BigEndian.AppendUint64([]byte{prefixPin}, id) }
func dedupKey(id string) []byte  { return append([]byte{prefixDedup}, id...) }
func tombstoneKey(id string) []byte {
	return append([]byte{prefixTombstone}, id...)
}

func objectKey(ref ObjectRef) []byte {
	k := protowire.AppendVarint([]byte{prefixObject}, uint64(len(ref.Key)))
	return append(append(k, ref.Key...), ref.Identity...)
}

func evidencePrefix(stream uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{prefixEvidence}, stream)
}

func recordPrefix(stream uint64, v View, gen uint64) []byte {
	k := binary.BigEndian.AppendUint64([]byte{prefixRecord}, stream)
	k = append(k, byte(v))
	return binary.BigEndian.AppendUint64(k, gen)
}

// A stream's row: its StreamState, the count of its evidence, then each
// live generation's GenerationState and record count, views in order.
//
//	uvarint len, StreamState record, uvarint evidence count,
//	{ uvarint len, GenerationState record, uvarint record count }*
func (s *stream) row() []byte {
	b := appendLenRecord(nil, s.stateRecord())
	b = protowire.AppendVarint(b, uint64(s.evidence.Len()))
	for _, view := range []View{Committed, TopicCompacted} {
		for _, g := range s.views[view].gens {
			b = appendLenRecord(b, g.stateRecord(s.info.ID, view))
			b = protowire.AppendVarint(b, uint64(g.records.Len()))
		}
	}
	return b
}

func appendLenRecord(b []byte, rec *fsmpb.SnapshotRecord) []byte {
	body := marshalStateRecord(nil, rec)
	return append(protowire.AppendVarint(b, uint64(len(body))), body...)
}

var errBadRow = fmt.Errorf("%w: malformed stream row", ErrCorruptSnapshot)

func (m *Machine) loadStreamRow(b []byte) error {
	next := func() ([]byte, uint64, error) {
		n, k := protowire.ConsumeVarint(b)
		if k < 0 || uint64(len(b)-k) < n {
			return nil, 0, errBadRow
		}
		body := b[k : k+int(n)]
		b = b[k+int(n):]
		count, k := protowire.ConsumeVarint(b)
		if k < 0 {
			return nil, 0, errBadRow
		}
		b = b[k:]
		return body, count, nil
	}
	body, evidence, err := next()
	if err != nil {
		return err
	}
	rec := &fsmpb.SnapshotRecord{}
	if err := proto.Unmarshal(body, rec); err != nil {
		return fmt.Errorf("%w: %w", ErrCorruptSnapshot, err)
	}
	st := rec.GetStream()
	if st == nil {
		return errBadRow
	}
	if err := m.restoreStream(st); err != nil {
		return err
	}
	s := m.streams[st.Id]
	setCount(s.evidence, evidence)
	for len(b) > 0 {
		body, records, err := next()
		if err != nil {
			return err
		}
		rec := &fsmpb.SnapshotRecord{}
		if err := proto.Unmarshal(body, rec); err != nil {
			return fmt.Errorf("%w: %w", ErrCorruptSnapshot, err)
		}
		gs := rec.GetGeneration()
		if gs == nil || gs.StreamId != st.Id {
			return errBadRow
		}
		if err := m.restoreGeneration(gs); err != nil {
			return err
		}
		setCount(s.view(gs.View).latest().records, records)
	}
	return nil
}

func setCount[T any](s orderedSet[T], n uint64) {
	if k, ok := s.(*kvSet[T]); ok {
		k.n = int(n)
	}
}

// newEvidenceSet returns an empty evidence set for a stream.
func (m *Machine) newEvidenceSet(stream uint64) orderedSet[evidence] {
	if m.kv == nil {
		return newMemSet(evidenceLess)
	}
	return &kvSet[evidence]{
		r: m.kv.reader, w: m.kv.store, prefix: evidencePrefix(stream),
		codec: setCodec[evidence]{
			order: func(e evidence) uint64 { return e.rng.Start },
			enc:   func(b []byte, e evidence) []byte { return appendEvidenceRecord(b, stream, e) },
			dec:   m.decodeEvidence,
		},
	}
}

// newRecordSet returns an empty record set for a generation.
func (m *Machine) newRecordSet(stream uint64, view View, gen uint64) orderedSet[record] {
	if m.kv == nil {
		return newMemSet(recordLess)
	}
	return &kvSet[record]{
		r: m.kv.reader, w: m.kv.store, prefix: recordPrefix(stream, view, gen),
		codec: setCodec[record]{
			order: func(r record) uint64 { return r.rng.Start },
			enc: func(b []byte, r record) []byte {
				return appendIndexRecordRecord(b, IndexKey{Stream: stream, View: view, Generation: gen, Start: r.rng.Start}, r)
			},
			dec: m.decodeRecord,
		},
	}
}

// decodeEvidence decodes a stored evidence entry. The store holds what this
// package wrote, so a value that does not decode is a corrupt store.
func (m *Machine) decodeEvidence(v []byte) evidence {
	v = unprefix(v)
	var ev restoredEvidence
	num, payload, ok := decodeSnapshotRecord(v)
	if !ok || num != fieldSnapshotEvidence || !decodeEvidenceState(payload, &ev) {
		rec := &fsmpb.SnapshotRecord{}
		if err := proto.Unmarshal(v, rec); err != nil || rec.GetEvidence() == nil {
			kv.Fail("decode evidence", fmt.Errorf("%w: stored evidence does not decode", ErrCorruptSnapshot))
		}
		ev = restoredEvidenceOf(rec.GetEvidence())
	}
	return evidence{
		rng: ev.rng, target: m.intern(ev.objKey, ev.objID), bytes: ev.bytes, epoch: ev.epoch, version: ev.version, data: ev.data,
	}
}

// decodeRecord is decodeEvidence for an index record.
func (m *Machine) decodeRecord(v []byte) record {
	v = unprefix(v)
	var rr restoredRecord
	num, payload, ok := decodeSnapshotRecord(v)
	if !ok || num != fieldSnapshotIndexRecord || !decodeIndexRecordState(payload, &rr) {
		rec := &fsmpb.SnapshotRecord{}
		if err := proto.Unmarshal(v, rec); err != nil || rec.GetIndexRecord() == nil {
			kv.Fail("decode index record", fmt.Errorf("%w: stored index record does not decode", ErrCorruptSnapshot))
		}
		rr = restoredRecordOf(rec.GetIndexRecord())
	}
	return m.restoredRecord(&rr)
}

// unprefix drops the length prefix the snapshot encoders write before a
// record (appendIndexRecordRecord, appendEvidenceRecord).
func unprefix(v []byte) []byte {
	n, k := protowire.ConsumeVarint(v)
	if k < 0 || uint64(len(v)-k) != n {
		kv.Fail("decode", fmt.Errorf("%w: stored value of %d bytes has a bad length prefix", ErrCorruptSnapshot, len(v)))
	}
	return v[k:]
}

// Close releases what a clone of a machine on a store holds (its view of
// the store). A no-op for anything else; safe to call twice.
func (m *Machine) Close() {
	if m.kv != nil && m.kv.view != nil {
		m.kv.view.Close()
		m.kv.view = nil
	}
}

// cloneOnStore finishes Clone for a machine on a store: the clone reads a
// view of the store's committed state, which must be the machine's state
// (the caller clones between batches, after committing).
//
// A clone of a clone reads its parent's view: it is valid while the
// parent is open.
func (m *Machine) cloneOnStore(c *Machine) {
	// A clone may change what it holds in memory (tests predict states
	// that way); its marks are never persisted.
	c.kv = &kvState{reader: m.kv.reader, dirty: newDirtySet()}
	if m.kv.store != nil {
		view := m.kv.store.View()
		c.kv.reader, c.kv.view = view, view
	}
	c.lastInterned = nil
	for id, s := range c.streams {
		s.evidence = readOnlyCopy(s.evidence, c.newEvidenceSet(id))
		for v := range s.views {
			for _, g := range s.views[v].gens {
				g.records = readOnlyCopy(g.records, c.newRecordSet(id, View(v), g.number))
			}
		}
	}
}

// readOnlyCopy gives fresh, a clone's empty set on its view, src's count.
func readOnlyCopy[T any](src, fresh orderedSet[T]) orderedSet[T] {
	setCount(fresh, uint64(src.Len()))
	return fresh
}

// RestoreInto reads a snapshot, as Restore does, into store, which must be
// empty, and returns the machine on it. It commits every restoreChunk
// records, so that a large snapshot is never one batch, and once more at
// the end; the caller decides whether the store becomes the live one
// (raftstore builds it aside and swaps it in). The snapshot's checksum is
// verified as it is read; the invariants are checked when the state is
// small enough to walk (kvCheckLimit).
func RestoreInto(r io.Reader, store kv.Store, opts ...Option) (m *Machine, err error) {
	defer kv.Catch(&err)
	m = New(opts...)
	m.kv = &kvState{store: store, reader: store, dirty: newDirtySet()}
	x := &restorer{m: m}
	hdr, err := readSnapshot(r, x.restore)
	if err != nil {
		return nil, err
	}
	x.flushRecords()
	x.flushEvidence()
	if x.order.phase == phaseNone {
		return nil, fmt.Errorf("%w: no meta record", ErrCorruptSnapshot)
	}
	m.applied = hdr.AppliedIndex
	m.persistAll()
	store.Commit()
	if hdr.Records <= kvCheckLimit {
		if err := m.CheckInvariants(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCorruptSnapshot, err)
		}
	}
	return m, nil
}

// kvCheckLimit is the largest state (in snapshot records) whose invariants
// a restore into a store checks by walking it: beyond it the walk reads
// the whole store back from disk, and the snapshot's checksum, verified
// as it was read, already vouches for its bytes.
const kvCheckLimit = 1 << 20

// persistAll writes every item of the in-memory state, as after a restore.
func (m *Machine) persistAll() {
	d := &m.kv.dirty
	for id := range m.streams {
		d.streams[id] = struct{}{}
	}
	m.objects.Ascend(func(o object) bool { d.objects[o.ref] = struct{}{}; return true })
	m.pins.Ascend(func(p pin) bool { d.pins[p.id] = struct{}{}; return true })
	m.dedup.Ascend(func(e dedupEntry) bool { d.dedup[e.requestID] = struct{}{}; return true })
	for id := range m.tombstones {
		d.tombstones[id] = struct{}{}
	}
	m.persist()
}

// The marks persist reads: every change to the in-memory state that is
// also in the store goes through one of these (or touches its stream).
func (m *Machine) touch(s *stream) {
	if m.kv != nil {
		m.kv.dirty.streams[s.info.ID] = struct{}{}
	}
}

func (m *Machine) putObject(o object) {
	m.objects.ReplaceOrInsert(o)
	if m.kv != nil {
		m.kv.dirty.objects[o.ref] = struct{}{}
	}
}

func (m *Machine) dropObject(o object) {
	m.objects.Delete(o)
	if m.kv != nil {
		m.kv.dirty.objects[o.ref] = struct{}{}
	}
}

func (m *Machine) putPin(p pin) {
	m.pins.ReplaceOrInsert(p)
	if m.kv != nil {
		m.kv.dirty.pins[p.id] = struct{}{}
	}
}

func (m *Machine) deletePin(p pin) {
	m.pins.Delete(p)
	if m.kv != nil {
		m.kv.dirty.pins[p.id] = struct{}{}
	}
}

func (m *Machine) putDedup(e dedupEntry) {
	m.dedup.ReplaceOrInsert(e)
	if m.kv != nil {
		m.kv.dirty.dedup[e.requestID] = struct{}{}
	}
}

func (m *Machine) dropDedup(e dedupEntry) {
	m.dedup.Delete(e)
	if m.kv != nil {
		m.kv.dirty.dedup[e.requestID] = struct{}{}
	}
}

func (m *Machine) touchTombstone(id string) {
	if m.kv != nil {
		m.kv.dirty.tombstones[id] = struct{}{}
	}
}

// checkPersisted is the store's invariant: every key of the state held in
// memory (meta, objects, stream rows, pins, dedup, tombstones) is in the
// store with the value persist writes for it, and no other. It catches a
// change that bypassed the marks above. O(state held in memory).
func (m *Machine) checkPersisted() error {
	want := map[string][]byte{string([]byte{prefixMeta}): marshalStateRecord(binary.BigEndian.AppendUint64(nil, m.applied), m.metaRecord())}
	for id, s := range m.streams {
		want[string(streamKey(id))] = s.row()
	}
	m.objects.Ascend(func(o object) bool { want[string(objectKey(o.ref))] = marshalStateRecord(nil, o.record()); return true })
	m.pins.Ascend(func(p pin) bool { want[string(pinKey(p.id))] = marshalStateRecord(nil, p.record()); return true })
	m.dedup.Ascend(func(e dedupEntry) bool {
		want[string(dedupKey(e.requestID))] = marshalStateRecord(nil, e.record())
		return true
	})
	for id, t := range m.tombstones {
		want[string(tombstoneKey(id))] = marshalStateRecord(nil, t.record())
	}
	for _, p := range []byte{prefixMeta, prefixObject, prefixStream, prefixPin, prefixDedup, prefixTombstone} {
		it := m.kv.store.Iter([]byte{p}, []byte{p + 1})
		for ok := it.First(); ok; ok = it.Next() {
			w, found := want[string(it.Key())]
			if !found {
				it.Close()
				return fmt.Errorf("store holds key %x that the state does not", it.Key())
			}
			if string(w) != string(it.Value()) {
				it.Close()
				return fmt.Errorf("store's value of key %x differs from the state's", it.Key())
			}
			delete(want, string(it.Key()))
		}
		it.Close()
	}
	for k := range want {
		return fmt.Errorf("state's key %x is not in the store", []byte(k))
	}
	return nil
}
