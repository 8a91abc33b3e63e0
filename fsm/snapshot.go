package fsm

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/checksum"
	"github.com/metad/metad/fsm/fsmpb"
)

// Snapshot format, version 1.
//
//	header (64 bytes, integers big-endian):
//	  magic           [8]byte  "METADSNP"
//	  format          uint32   1
//	  header CRC      uint32   CRC-32C of the other 60 header bytes
//	  applied index   uint64
//	  record count    uint64
//	  body SHA-256    [32]byte
//	body: record count times
//	  uvarint length, then a fsmpb.SnapshotRecord of that many bytes
//
// Records come in one canonical order: the meta record; objects by key; then
// per stream by id the stream, its evidence by offset, and per view
// (COMMITTED first) each live generation by number followed by its records
// by offset; then pins by id, and dedup entries by request id. Messages are
// marshalled deterministically, so the same state always gives the same
// bytes and the body's SHA-256 is the state hash replicas compare. The body
// hash does not cover the header, so the header carries its own CRC: a
// flipped bit in the applied index is detected too. Restore accepts records
// only in the canonical order.
const (
	snapshotMagic   = "METADSNP"
	snapshotFormat  = uint32(1)
	headerSize      = 64
	maxRecordLength = 64 << 20
)

// ErrCorruptSnapshot is wrapped by every Restore error caused by the bytes
// of the snapshot (as opposed to the reader failing).
var ErrCorruptSnapshot = errors.New("corrupt snapshot")

// Header is what a snapshot's first 64 bytes say.
type Header struct {
	Format       uint32
	AppliedIndex uint64
	Records      uint64
	Checksum     [32]byte
}

// Clone returns a point-in-time copy that can be read, or written out as a
// snapshot, concurrently with later Applies to m. It costs O(number of
// streams and generations): the B-trees are shared copy-on-write.
func (m *Machine) Clone() *Machine {
	c := *m
	c.streams = make(map[uint64]*stream, len(m.streams))
	for id, s := range m.streams {
		c.streams[id] = s.clone()
	}
	c.byName = make(map[string]uint64, len(m.byName))
	for k, v := range m.byName {
		c.byName[k] = v
	}
	c.objects = m.objects.Clone()
	c.pins = m.pins.Clone()
	c.pinExpiry = m.pinExpiry.Clone()
	c.dedup = m.dedup.Clone()
	c.dedupAge = m.dedupAge.Clone()
	c.tombstones = make(map[string]Tombstone, len(m.tombstones))
	for id, t := range m.tombstones {
		c.tombstones[id] = t
	}
	if m.kv != nil {
		m.cloneOnStore(&c)
	}
	return &c
}

func (s *stream) clone() *stream {
	c := &stream{info: s.info, evidence: cloneMem(s.evidence)}
	for v := range s.views {
		vi := s.views[v]
		c.views[v] = viewIndex{last: vi.last, hasLast: vi.hasLast}
		for _, g := range vi.gens {
			gc := *g
			gc.records = cloneMem(g.records)
			c.views[v].gens = append(c.views[v].gens, &gc)
		}
	}
	return c
}

// WriteSnapshot writes the machine in the snapshot format. The state is
// walked twice, once to hash it and once to write it, so that the header can
// carry the checksum without buffering the body; call it on a Clone.
func (m *Machine) WriteSnapshot(w io.Writer) error {
	plan, err := m.PlanSnapshot()
	if err != nil {
		return err
	}
	return m.WritePlanned(w, plan)
}

// SnapshotPlan is what the first walk of a snapshot learns: the hash and
// record count its header carries, and its length in bytes.
type SnapshotPlan struct {
	Sum     [32]byte
	Records uint64
	Size    int64
}

// PlanSnapshot walks the state once to learn its snapshot's header and
// length, for a sender that must announce the length before the bytes
// (raft's InstallSnapshot). O(state).
func (m *Machine) PlanSnapshot() (SnapshotPlan, error) {
	cw := &countingWriter{w: sha256.New()}
	bw := bufio.NewWriterSize(cw, 64<<10)
	n, err := m.writeBody(bw)
	if err == nil {
		err = bw.Flush()
	}
	p := SnapshotPlan{Records: n, Size: headerSize + cw.n}
	copy(p.Sum[:], cw.w.(hash.Hash).Sum(nil))
	return p, err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// WritePlanned writes the snapshot that plan describes: the machine must
// not have changed since PlanSnapshot (call both on one Clone).
func (m *Machine) WritePlanned(w io.Writer, plan SnapshotPlan) error {
	sum, count := plan.Sum, plan.Records
	var hdr [headerSize]byte
	copy(hdr[:8], snapshotMagic)
	binary.BigEndian.PutUint32(hdr[8:], snapshotFormat)
	binary.BigEndian.PutUint64(hdr[16:], m.applied)
	binary.BigEndian.PutUint64(hdr[24:], count)
	copy(hdr[32:], sum[:])
	sealHeader(hdr[:])
	bw := bufio.NewWriterSize(w, 256<<10)
	if _, err := bw.Write(hdr[:]); err != nil {
		return err
	}
	n, err := m.writeBody(bw)
	if err != nil {
		return err
	}
	if n != count {
		panic(fmt.Sprintf("fsm: snapshot walk gave %d records, then %d; was the machine changed during WriteSnapshot?", count, n))
	}
	return bw.Flush()
}

// StateHash returns the SHA-256 of the canonical encoding of the state (the
// snapshot body) and the number of records in it. Two replicas at the same
// applied index have the same hash. O(state).
func (m *Machine) StateHash() ([32]byte, uint64, error) {
	h := sha256.New()
	bw := bufio.NewWriterSize(h, 64<<10)
	n, err := m.writeBody(bw)
	if err == nil {
		err = bw.Flush()
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum, n, err
}

func (m *Machine) writeBody(w io.Writer) (uint64, error) {
	bw := newBodyWriter(w)
	m.eachRecord(bw)
	bw.flush()
	return bw.n, bw.err
}

func (m *Machine) sortedStreamIDs() []uint64 {
	ids := make([]uint64, 0, len(m.streams))
	for id := range m.streams {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// eachRecord writes the state to bw in canonical order, stopping at bw's
// first error.
func (m *Machine) eachRecord(bw *bodyWriter) {
	put := bw.message
	if !put(m.metaRecord()) {
		return
	}
	m.objects.Ascend(func(o object) bool { return put(o.record()) })
	for _, id := range m.sortedStreamIDs() {
		if bw.err != nil {
			return
		}
		m.streams[id].eachRecord(bw)
	}
	if bw.err != nil {
		return
	}
	m.pins.Ascend(func(p pin) bool { return put(p.record()) })
	m.dedup.Ascend(func(d dedupEntry) bool { return put(d.record()) })
	for _, t := range m.Tombstones() {
		if !put(t.record()) {
			return
		}
	}
}

func (s *stream) eachRecord(bw *bodyWriter) {
	id := s.info.ID
	if !bw.message(s.stateRecord()) {
		return
	}
	s.evidence.Ascend(func(e evidence) bool { return bw.evidence(id, e) })
	for _, view := range []View{Committed, TopicCompacted} {
		for _, g := range s.views[view].gens {
			if bw.err != nil || !bw.message(g.stateRecord(id, view)) {
				return
			}
			key := IndexKey{Stream: id, View: view, Generation: g.number}
			g.records.Ascend(func(r record) bool {
				key.Start = r.rng.Start
				return bw.indexRecord(key, r)
			})
		}
	}
}

func (m *Machine) metaRecord() *fsmpb.SnapshotRecord {
	return &fsmpb.SnapshotRecord{Record: &fsmpb.SnapshotRecord_Meta{Meta: &fsmpb.MachineMeta{
		ClockUnixNano: m.clock, NextStreamId: m.nextStreamID, NextPinId: m.nextPinID, FeatureLevel: m.level,
		ClusterId: m.clusterID,
	}}}
}

func (s *stream) stateRecord() *fsmpb.SnapshotRecord {
	return &fsmpb.SnapshotRecord{Record: &fsmpb.SnapshotRecord_Stream{Stream: &fsmpb.StreamState{
		Id: s.info.ID, Name: s.info.Name, WriterEpoch: s.info.WriterEpoch, Status: s.info.Status,
		Version: s.info.Version, CommittedEnd: s.info.CommittedEnd, Trim: s.info.Trim,
		CreatedVersion:          s.info.CreatedVersion,
		LastCommittedGeneration: s.views[Committed].last,
		LastCompactedGeneration: s.views[TopicCompacted].last,
		HasCompactedGeneration:  s.views[TopicCompacted].hasLast,
	}}}
}

func (g *generation) stateRecord(stream uint64, view View) *fsmpb.SnapshotRecord {
	return &fsmpb.SnapshotRecord{Record: &fsmpb.SnapshotRecord_Generation{Generation: &fsmpb.GenerationState{
		StreamId: stream, View: view, Number: g.number, Status: g.status, Version: g.version, Coverage: g.coverage.PB(),
	}}}
}

func (d dedupEntry) record() *fsmpb.SnapshotRecord {
	return &fsmpb.SnapshotRecord{Record: &fsmpb.SnapshotRecord_Dedup{Dedup: &fsmpb.DedupState{
		RequestId: d.requestID, CommandDigest: d.digest, AtUnixNano: d.at, Result: d.result,
	}}}
}

func (o object) record() *fsmpb.SnapshotRecord {
	return &fsmpb.SnapshotRecord{Record: &fsmpb.SnapshotRecord_Object{Object: &fsmpb.ObjectState{
		Object: o.ref.PB(), Size: o.size, Status: o.status, Version: o.version, References: o.refs,
		IdleSinceUnixNano: o.idleSince, PinMaxExpiryUnixNano: o.pinMaxExpiry,
	}}}
}

func (p pin) record() *fsmpb.SnapshotRecord {
	return &fsmpb.SnapshotRecord{Record: &fsmpb.SnapshotRecord_Pin{Pin: &fsmpb.PinState{
		Id: p.id, Object: p.object.PB(), Holder: p.holder, TtlNanos: p.ttl,
		ExpiryUnixNano: p.expiry, Version: p.version,
	}}}
}

// headerCRC is the CRC-32C of a header's bytes other than the CRC itself.
func headerCRC(hdr []byte) uint32 {
	crc := crc32.Update(0, checksum.Castagnoli, hdr[:12])
	return crc32.Update(crc, checksum.Castagnoli, hdr[16:headerSize])
}

// sealHeader stores the header's CRC in it.
func sealHeader(hdr []byte) { binary.BigEndian.PutUint32(hdr[12:], headerCRC(hdr)) }

// ReadHeader reads and checks a snapshot header.
func ReadHeader(r io.Reader) (Header, error) {
	var hdr [headerSize]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return Header{}, readError("header", err)
	}
	if string(hdr[:8]) != snapshotMagic {
		return Header{}, fmt.Errorf("%w: bad magic %q", ErrCorruptSnapshot, hdr[:8])
	}
	if got, want := binary.BigEndian.Uint32(hdr[12:]), headerCRC(hdr[:]); got != want {
		return Header{}, fmt.Errorf("%w: header CRC %08x, computed %08x", ErrCorruptSnapshot, got, want)
	}
	h := Header{
		Format:       binary.BigEndian.Uint32(hdr[8:]),
		AppliedIndex: binary.BigEndian.Uint64(hdr[16:]),
		Records:      binary.BigEndian.Uint64(hdr[24:]),
	}
	copy(h.Checksum[:], hdr[32:])
	if h.Format != snapshotFormat {
		return h, fmt.Errorf("%w: format %d, this binary reads %d", ErrCorruptSnapshot, h.Format, snapshotFormat)
	}
	return h, nil
}

// RecordVisitor receives each decoded snapshot record, for inspection tools.
type RecordVisitor func(*fsmpb.SnapshotRecord) error

// Restore reads a snapshot and returns the machine it describes. It verifies
// the header, the record count, the checksum, the canonical order of the
// records (none out of order or duplicated) and every invariant before
// returning, so a caller can swap the result in or discard it whole. Errors caused by the snapshot's bytes wrap
// ErrCorruptSnapshot; an error of the reader is returned wrapped as it is.
func Restore(r io.Reader, opts ...Option) (*Machine, error) {
	x := &restorer{m: New(opts...)}
	hdr, err := readSnapshot(r, x.restore)
	if err != nil {
		return nil, err
	}
	x.flushRecords()
	x.flushEvidence()
	m := x.m
	if x.order.phase == phaseNone {
		return nil, fmt.Errorf("%w: no meta record", ErrCorruptSnapshot)
	}
	m.applied = hdr.AppliedIndex
	if err := m.CheckInvariants(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorruptSnapshot, err)
	}
	return m, nil
}

// restorer builds a machine from a snapshot's records.
type restorer struct {
	m *Machine
	// restoreRecord alone would tolerate disorder (a B-tree sorts what it
	// is given, a duplicate replaces its twin), so the order is checked too.
	order canonicalOrder
	// The fast path's decoded records, reused from one to the next.
	rec restoredRecord
	ev  restoredEvidence
	// pending are index records of generation pendingGen not yet in its
	// tree: they go in by insertSorted, a chunk at a time, which packs the
	// tree's leaves full where one by one would leave them half empty.
	// pendingEvidence is the same for the evidence of pendingStream.
	pending         []record
	pendingGen      *generation
	pendingEvidence []evidence
	pendingStream   *stream
}

// restoreChunk is how many index records restore gathers before putting
// them in their generation's tree.
const restoreChunk = 1 << 16

// indexRecord adds an index record to the pending chunk of its generation.
func (x *restorer) indexRecord(rr *restoredRecord) error {
	g := x.m.generation(rr.key.Stream, rr.key.View, rr.key.Generation)
	if g == nil || !rr.hasBody {
		return fmt.Errorf("record %v of an unknown generation", rr.key)
	}
	if g != x.pendingGen || len(x.pending) == restoreChunk {
		x.flushRecords()
		x.pendingGen = g
	}
	x.pending = append(x.pending, x.m.restoredRecord(rr))
	return nil
}

// evidence adds an evidence entry to the pending chunk of its stream.
func (x *restorer) evidence(e *restoredEvidence) error {
	s, ok := x.m.streams[e.stream]
	if !ok {
		return fmt.Errorf("evidence of unknown stream %d", e.stream)
	}
	if s != x.pendingStream || len(x.pendingEvidence) == restoreChunk {
		x.flushEvidence()
		x.pendingStream = s
	}
	x.pendingEvidence = append(x.pendingEvidence, evidence{
		rng: e.rng, target: x.m.intern(e.objKey, e.objID), bytes: e.bytes, epoch: e.epoch, version: e.version, data: e.data,
	})
	return nil
}

// flushRecords puts the pending records in their generation's tree.
func (x *restorer) flushRecords() {
	if len(x.pending) > 0 {
		x.pendingGen.records.insertSorted(x.pending)
		x.commitChunk()
	}
	clear(x.pending) // let go of the targets
	x.pending = x.pending[:0]
}

// flushEvidence puts the pending evidence in its stream's tree.
func (x *restorer) flushEvidence() {
	if len(x.pendingEvidence) > 0 {
		x.pendingStream.evidence.insertSorted(x.pendingEvidence)
		x.commitChunk()
	}
	clear(x.pendingEvidence)
	x.pendingEvidence = x.pendingEvidence[:0]
}

// restore restores record i from its bytes b: index records and evidence
// by the fast path (restore_decode.go) when it can read them, everything
// else, and whatever it refuses, through proto.Unmarshal.
func (x *restorer) restore(i uint64, b []byte) error {
	var err error
	switch num, payload, ok := decodeSnapshotRecord(b); {
	case ok && num == fieldSnapshotIndexRecord && decodeIndexRecordState(payload, &x.rec):
		if err = x.order.indexRecord(x.rec.key); err == nil {
			err = x.indexRecord(&x.rec)
		}
	case ok && num == fieldSnapshotEvidence && decodeEvidenceState(payload, &x.ev):
		if err = x.order.evidence(x.ev.stream, x.ev.rng.Start); err == nil {
			err = x.evidence(&x.ev)
		}
	default:
		rec := &fsmpb.SnapshotRecord{}
		if err := proto.Unmarshal(b, rec); err != nil {
			return readError(fmt.Sprintf("record %d", i), err)
		}
		if err = x.order.check(rec); err != nil {
			break
		}
		switch r := rec.Record.(type) {
		case *fsmpb.SnapshotRecord_IndexRecord:
			rr := restoredRecordOf(r.IndexRecord)
			err = x.indexRecord(&rr)
		case *fsmpb.SnapshotRecord_Evidence:
			e := restoredEvidenceOf(r.Evidence)
			err = x.evidence(&e)
		default:
			err = x.m.restoreRecord(rec)
		}
	}
	if err != nil {
		return fmt.Errorf("%w: record %d: %w", ErrCorruptSnapshot, i, err)
	}
	return nil
}

// Phases of the canonical record order.
const (
	phaseNone = iota
	phaseMeta
	phaseObjects
	phaseStreams
	phasePins
	phaseDedup
	phaseTombstones
)

// canonicalOrder checks that records arrive in the one order WriteSnapshot
// writes, each key strictly after the previous: out-of-order and duplicated
// records are refused as they arrive.
type canonicalOrder struct {
	phase   int
	lastKey string // object key, then dedup request id
	lastID  uint64 // stream id, then pin id
	// Within the current stream.
	evidenceSeen, genSeen, recordSeen bool
	lastStart                         uint64 // evidence, then record, start
	lastView                          View
	lastGen                           uint64
}

func (o *canonicalOrder) enter(phase int) error {
	if phase < o.phase || (phase == phaseMeta && o.phase == phaseMeta) {
		return fmt.Errorf("record of phase %d after phase %d", phase, o.phase)
	}
	if phase != phaseMeta && o.phase == phaseNone {
		return errors.New("first record is not the meta record")
	}
	if phase > o.phase {
		o.phase, o.lastKey, o.lastID = phase, "", 0
		return nil
	}
	return nil
}

//nolint:gocyclo // one case per record kind: the readable form of a table
func (o *canonicalOrder) check(rec *fsmpb.SnapshotRecord) error {
	switch r := rec.Record.(type) {
	case *fsmpb.SnapshotRecord_Meta:
		return o.enter(phaseMeta)
	case *fsmpb.SnapshotRecord_Object:
		return o.after(phaseObjects, objectOrderKey(r.Object.GetObject()), 0)
	case *fsmpb.SnapshotRecord_Stream:
		if err := o.after(phaseStreams, "", r.Stream.Id); err != nil {
			return err
		}
		o.evidenceSeen, o.genSeen, o.recordSeen = false, false, false
		return nil
	case *fsmpb.SnapshotRecord_Evidence:
		return o.evidence(r.Evidence.StreamId, r.Evidence.GetRange().GetStart())
	case *fsmpb.SnapshotRecord_Generation:
		g := r.Generation
		if o.phase != phaseStreams || g.StreamId != o.lastID ||
			(o.genSeen && (g.View < o.lastView || (g.View == o.lastView && g.Number <= o.lastGen))) {
			return fmt.Errorf("generation %d of stream %d view %s out of order", g.Number, g.StreamId, g.View)
		}
		o.genSeen, o.recordSeen, o.lastView, o.lastGen = true, false, g.View, g.Number
	case *fsmpb.SnapshotRecord_IndexRecord:
		return o.indexRecord(indexKeyOf(r.IndexRecord.Key))
	case *fsmpb.SnapshotRecord_Pin:
		return o.after(phasePins, "", r.Pin.Id)
	case *fsmpb.SnapshotRecord_Dedup:
		return o.after(phaseDedup, r.Dedup.RequestId, 0)
	case *fsmpb.SnapshotRecord_Tombstone:
		return o.after(phaseTombstones, r.Tombstone.NodeId, 0)
	}
	return nil
}

// evidence checks an evidence entry: in its stream, before the stream's
// generations, after the previous entry.
func (o *canonicalOrder) evidence(stream, start uint64) error {
	if o.phase != phaseStreams || stream != o.lastID || o.genSeen || (o.evidenceSeen && start <= o.lastStart) {
		return fmt.Errorf("evidence of stream %d at %d out of order", stream, start)
	}
	o.evidenceSeen, o.lastStart = true, start
	return nil
}

// indexRecord checks an index record: in the generation last seen, after
// the previous record.
func (o *canonicalOrder) indexRecord(k IndexKey) error {
	if o.phase != phaseStreams || !o.genSeen || k.Stream != o.lastID || k.View != o.lastView ||
		k.Generation != o.lastGen || (o.recordSeen && k.Start <= o.lastStart) {
		return fmt.Errorf("index record %v out of order", k)
	}
	o.recordSeen, o.lastStart = true, k.Start
	return nil
}

// objectOrderKey is a registry entry's place in the canonical order: by
// key, then identity, as one string that orders as the pair does. The key's
// NULs are escaped as NUL 0xff and a NUL ends it; 0xff never occurs in
// UTF-8, which proto strings are, so a key that is a prefix of another
// sorts first, as it does in the pair order.
func objectOrderKey(ref *fsmpb.ObjectRef) string {
	return strings.ReplaceAll(ref.GetKey(), "\x00", "\x00\xff") + "\x00" + ref.GetIdentity()
}

// splitObjectOrderKey undoes objectOrderKey.
func splitObjectOrderKey(s string) (key, identity string) {
	for i := 0; i < len(s); i++ {
		if s[i] != 0 {
			continue
		}
		if i+1 < len(s) && s[i+1] == 0xff {
			i++
			continue
		}
		return strings.ReplaceAll(s[:i], "\x00\xff", "\x00"), s[i+1:]
	}
	return s, ""
}

// after checks a keyed record of a phase: the phase is not over, and the
// key is strictly after the previous one of the same phase.
func (o *canonicalOrder) after(phase int, key string, id uint64) error {
	first := phase > o.phase
	if err := o.enter(phase); err != nil {
		return err
	}
	if !first && (key < o.lastKey || id < o.lastID || (key == o.lastKey && id == o.lastID)) {
		return fmt.Errorf("record %q/%d of phase %d not after %q/%d", key, id, phase, o.lastKey, o.lastID)
	}
	o.lastKey, o.lastID = key, id
	return nil
}

// trackedReader remembers the first error of its reader other than EOF, so
// that a failing reader is told apart from a snapshot that is too short.
type trackedReader struct {
	r   io.Reader
	err error
}

func (t *trackedReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF && t.err == nil {
		t.err = err
	}
	return n, err
}

// failure returns err, marked as the reader's if the reader failed.
func (t *trackedReader) failure(err error) error {
	if t.err != nil {
		return &readerFailure{t.err}
	}
	return err
}

// readerFailure marks an error as the reader's own.
type readerFailure struct{ err error }

func (f *readerFailure) Error() string { return f.err.Error() }
func (f *readerFailure) Unwrap() error { return f.err }

// readError classifies a failure to read part of a snapshot: the reader's
// own error is returned as it is, anything else (a short or undecodable
// snapshot) is corruption.
func readError(what string, err error) error {
	var rf *readerFailure
	if errors.As(err, &rf) {
		return fmt.Errorf("fsm: read snapshot %s: %w", what, rf.err)
	}
	return fmt.Errorf("%w: %s: %w", ErrCorruptSnapshot, what, err)
}

// ReadSnapshot reads a snapshot, passing each record to visit, and checks
// the count and checksum at the end.
func ReadSnapshot(r io.Reader, visit RecordVisitor) (Header, error) {
	return readSnapshot(r, func(i uint64, b []byte) error {
		rec := &fsmpb.SnapshotRecord{}
		if err := proto.Unmarshal(b, rec); err != nil {
			return readError(fmt.Sprintf("record %d", i), err)
		}
		if err := visit(rec); err != nil {
			return fmt.Errorf("%w: record %d: %w", ErrCorruptSnapshot, i, err)
		}
		return nil
	})
}

// readSnapshot reads a snapshot, passing each record's bytes to visit
// (they are valid only until it returns), and checks the count and
// checksum at the end. visit's errors are returned as they are.
func readSnapshot(r io.Reader, visit func(i uint64, b []byte) error) (Header, error) {
	tr := &trackedReader{r: r}
	br := bufio.NewReaderSize(tr, 256<<10)
	hdr, err := ReadHeader(br)
	if err != nil {
		if tr.err != nil {
			return hdr, readError("header", tr.failure(err))
		}
		return hdr, err
	}
	h := sha256.New()
	body := bufio.NewReader(io.TeeReader(br, h))
	var buf []byte
	for i := uint64(0); i < hdr.Records; i++ {
		b, err := readRecord(body, buf)
		buf = b
		if err != nil {
			return hdr, readError(fmt.Sprintf("record %d", i), tr.failure(err))
		}
		if err := visit(i, b); err != nil {
			return hdr, err
		}
	}
	if _, err := body.ReadByte(); err != io.EOF {
		if tr.err != nil {
			return hdr, readError("end", tr.failure(err))
		}
		return hdr, fmt.Errorf("%w: bytes after the last of %d records", ErrCorruptSnapshot, hdr.Records)
	}
	if !bytes.Equal(h.Sum(nil), hdr.Checksum[:]) {
		return hdr, fmt.Errorf("%w: checksum mismatch", ErrCorruptSnapshot)
	}
	return hdr, nil
}

// readRecord reads one length-prefixed record into buf, growing it if
// needed, and returns it.
func readRecord(r *bufio.Reader, buf []byte) ([]byte, error) {
	size, err := binary.ReadUvarint(r)
	if err != nil {
		return buf, fmt.Errorf("length: %w", err)
	}
	if size > maxRecordLength {
		return buf, fmt.Errorf("length %d exceeds %d", size, maxRecordLength)
	}
	if uint64(cap(buf)) < size {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if _, err := io.ReadFull(r, buf); err != nil {
		return buf, err
	}
	return buf, nil
}

// restoreRecord adds one record to a machine being restored. Records must
// arrive in canonical order: objects before everything naming them, a stream
// before its evidence and generations, a generation before its records.
// Evidence and index records are not among them: the restorer gathers
// those into chunks (restorer.evidence, restorer.indexRecord).
func (m *Machine) restoreRecord(rec *fsmpb.SnapshotRecord) error {
	switch r := rec.Record.(type) {
	case *fsmpb.SnapshotRecord_Meta:
		if r.Meta.FeatureLevel > MaxLevel {
			return fmt.Errorf("%w: snapshot is at feature level %d; this binary applies up to %d",
				ErrUnsupported, r.Meta.FeatureLevel, MaxLevel)
		}
		m.clock, m.nextStreamID, m.nextPinID = r.Meta.ClockUnixNano, r.Meta.NextStreamId, r.Meta.NextPinId
		m.level = r.Meta.FeatureLevel
		m.clusterID = r.Meta.ClusterId
	case *fsmpb.SnapshotRecord_Stream:
		return m.restoreStream(r.Stream)
	case *fsmpb.SnapshotRecord_Generation:
		return m.restoreGeneration(r.Generation)
	case *fsmpb.SnapshotRecord_Object:
		o := r.Object
		ref := refOf(o.Object)
		m.putObject(object{
			ref: ref, target: &target{ref: ref}, size: o.Size, status: o.Status, version: o.Version, refs: o.References,
			idleSince: o.IdleSinceUnixNano, pinMaxExpiry: o.PinMaxExpiryUnixNano,
		})
	case *fsmpb.SnapshotRecord_Pin:
		return m.restorePin(r.Pin)
	case *fsmpb.SnapshotRecord_Tombstone:
		return m.restoreTombstone(r.Tombstone)
	case *fsmpb.SnapshotRecord_Dedup:
		d := r.Dedup
		if d.Result == nil {
			return fmt.Errorf("dedup entry %q without result", d.RequestId)
		}
		m.putDedup(dedupEntry{requestID: d.RequestId, digest: d.CommandDigest, at: d.AtUnixNano, result: d.Result})
		m.dedupAge.ReplaceOrInsert(dedupDeadline{at: d.AtUnixNano, version: d.Result.Version, requestID: d.RequestId})
	default:
		return fmt.Errorf("unknown record type %T", r)
	}
	return nil
}

func (m *Machine) restoreStream(st *fsmpb.StreamState) error {
	if _, dup := m.streams[st.Id]; dup {
		return fmt.Errorf("stream %d twice", st.Id)
	}
	s := &stream{
		info: StreamInfo{
			ID: st.Id, Name: st.Name, WriterEpoch: st.WriterEpoch, Status: st.Status, Version: st.Version,
			CommittedEnd: st.CommittedEnd, Trim: st.Trim, CreatedVersion: st.CreatedVersion,
		},
		evidence: m.newEvidenceSet(st.Id),
	}
	s.views[Committed] = viewIndex{last: st.LastCommittedGeneration, hasLast: true}
	s.views[TopicCompacted] = viewIndex{last: st.LastCompactedGeneration, hasLast: st.HasCompactedGeneration}
	m.streams[st.Id] = s
	m.byName[st.Name] = st.Id
	return nil
}

func (m *Machine) restoreGeneration(gs *fsmpb.GenerationState) error {
	s, ok := m.streams[gs.StreamId]
	if !ok || !ValidView(gs.View) {
		return fmt.Errorf("generation of unknown stream %d or view %s", gs.StreamId, gs.View)
	}
	vi := s.view(gs.View)
	if g := vi.latest(); g != nil && g.number >= gs.Number {
		return fmt.Errorf("generation %d after %d", gs.Number, g.number)
	}
	vi.gens = append(vi.gens, m.newGeneration(gs.StreamId, gs.View, gs.Number, gs.Status, gs.Version, rangeOf(gs.Coverage)))
	return nil
}

// restoredRecord is the stored form of a restored index record.
func (m *Machine) restoredRecord(rr *restoredRecord) record {
	return record{
		rng: rr.rng, target: m.intern(rr.objKey, rr.objID).withSurvivors(rr.survivors),
		bytes: rr.bytes, version: rr.version, checksum: rr.checksum, status: rr.status, data: rr.data,
	}
}

func (m *Machine) restorePin(ps *fsmpb.PinState) error {
	o, ok := m.counted(refOf(ps.Object))
	if !ok {
		return fmt.Errorf("pin %d on unknown object %v", ps.Id, refOf(ps.Object))
	}
	p := pin{id: ps.Id, object: m.intern([]byte(ps.Object.GetKey()), []byte(ps.Object.GetIdentity())).ref, holder: ps.Holder, ttl: ps.TtlNanos, expiry: ps.ExpiryUnixNano, version: ps.Version}
	m.putPin(p)
	m.pinExpiry.ReplaceOrInsert(pinDeadline{at: p.pruneAt(), id: p.id})
	o.pins++
	m.putObject(o)
	return nil
}

// intern returns the target naming the object with this key and identity
// and no survivors: the registry's, so that a million records naming one
// object share one target and one copy of its strings. A reference to
// bytes the registry no longer holds (a record of replaced bytes) gets a
// target of its own. key and identity may alias the read buffer; they are
// copied when kept.
//
// Records come in order and neighbours mostly name the same object, so the
// target interned last is tried before the registry's B-tree, and that
// costs no allocation. Returning it is right even if the registry has
// changed since: it names the same strings, and targets never change.
func (m *Machine) intern(key, identity []byte) *target {
	if last := m.lastInterned; last != nil && string(key) == last.ref.Key && string(identity) == last.ref.Identity {
		return last
	}
	t := &target{ref: ObjectRef{Key: string(key), Identity: string(identity)}}
	if o, ok := m.version(t.ref); ok {
		t = o.target
	}
	m.lastInterned = t
	return t
}

// commitChunk commits a restore into a store after each chunk, so that a
// large snapshot is never one batch. The store is not live yet.
func (x *restorer) commitChunk() {
	if x.m.kv != nil {
		x.m.kv.store.Commit()
	}
}
