package fsm

// refModel is a naive reference model of the machine, written from
// GUARANTEES.md, the comments of fsm.proto and limits.go, and nothing of
// the machine's code: plain slices and maps, linear scans, reference counts
// recomputed from scratch, its own shape checks and its own encoding of the
// documented record checksum. Property tests apply the same commands to both
// and compare everything observable.
//
// Where the contract leaves an order of checks open, the model follows the
// machine's documented choice (the golden scripts pin it); everything else
// is decided here from the text.

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/fsm/fsmpb"
)

type refModel struct {
	applied    uint64
	clock      int64
	nextStream uint64
	nextPin    uint64
	streams    []*refStream // ascending id
	objects    map[string]*refObject
	pins       []refPin   // ascending id
	dedup      []refDedup // in the order they were applied
}

type refStream struct {
	id, epoch, version, end, trim, created uint64
	name                                   string
	sealed                                 bool
	evidence                               []refEvidence // ascending start
	views                                  map[View]*refView
}

type refEvidence struct {
	rng            Range
	obj            ObjectRef
	bytes          ByteRange
	epoch, version uint64
}

type refView struct {
	last uint64
	any  bool      // whether any generation was ever created
	gens []*refGen // live generations, ascending number
}

type refGen struct {
	num      uint64
	building bool
	version  uint64
	cover    Range
	recs     []refRecord // ascending start
}

type refRecord struct {
	rng     Range
	surv    []Range
	obj     ObjectRef
	bytes   ByteRange
	version uint64
	sum     uint32
	status  RecordStatus
}

type refObject struct {
	ref       ObjectRef
	size      uint64
	status    ObjectStatus
	version   uint64
	idle      int64
	maxExpiry int64
}

type refPin struct {
	id          uint64
	ref         ObjectRef
	holder      string
	ttl, expiry int64
	version     uint64
}

type refDedup struct {
	id  string
	op  *fsmpb.Command // the command without id and stamp
	at  int64
	res *fsmpb.Result
}

func newRefModel() *refModel {
	return &refModel{nextStream: 1, nextPin: 1, objects: map[string]*refObject{}}
}

// refChecksum encodes a record's canonical fields as RecordChecksum's doc
// comment describes, independently of its code.
func refChecksum(stream uint64, view View, gen uint64, rng Range, surv []Range, obj ObjectRef, b ByteRange) uint32 {
	var w bytes.Buffer
	put := func(v any) { _ = binary.Write(&w, binary.BigEndian, v) }
	w.WriteString("metad/index-record/v1")
	put(stream)
	put(uint8(view))
	put(gen)
	put(rng.Start)
	put(rng.End)
	put(uint32(len(surv)))
	for _, s := range surv {
		put(s.Start)
		put(s.End)
	}
	put(uint32(len(obj.Key)))
	w.WriteString(obj.Key)
	put(uint32(len(obj.Identity)))
	w.WriteString(obj.Identity)
	put(b.Offset)
	put(b.Length)
	return crc32.Checksum(w.Bytes(), crc32.MakeTable(crc32.Castagnoli))
}

func (m *refModel) stream(id uint64) *refStream {
	for _, s := range m.streams {
		if s.id == id {
			return s
		}
	}
	return nil
}

// refs counts, per object key, evidence entries and records of live
// generations naming it.
func (m *refModel) refs() map[string]uint64 {
	n := map[string]uint64{}
	for _, s := range m.streams {
		for _, e := range s.evidence {
			n[e.obj.Key]++
		}
		for _, v := range s.views {
			for _, g := range v.gens {
				for _, r := range g.recs {
					n[r.obj.Key]++
				}
			}
		}
	}
	return n
}

func (m *refModel) pinCount(key string) uint64 {
	var n uint64
	for _, p := range m.pins {
		if p.ref.Key == key {
			n++
		}
	}
	return n
}

func res(index uint64) *fsmpb.Result { return &fsmpb.Result{Version: index} }

func refusal(index uint64, code fsmpb.RejectCode) *fsmpb.Result {
	return &fsmpb.Result{Version: index, Rejection: &fsmpb.Rejection{Code: code}}
}

// apply is the model's Apply.
func (m *refModel) apply(index uint64, cmd *fsmpb.Command) *fsmpb.Result {
	m.applied = index
	m.clock = max(m.clock, cmd.StampUnixNano)
	// Pins are kept PinGrace after they expire; request ids DedupTTL after
	// they were applied. (Machine time is never negative: it starts at 0.)
	m.pins = slices.DeleteFunc(m.pins, func(p refPin) bool { return m.clock-int64(PinGrace) >= p.expiry })
	m.dedup = slices.DeleteFunc(m.dedup, func(d refDedup) bool { return m.clock-int64(DedupTTL) >= d.at })

	before := m.refs()
	r := m.deduplicated(index, cmd)
	after := m.refs()
	for key, o := range m.objects {
		if before[key] > 0 && after[key] == 0 {
			o.idle = m.clock
		}
	}
	return r
}

func (m *refModel) deduplicated(index uint64, cmd *fsmpb.Command) *fsmpb.Result {
	id := cmd.RequestId
	if id == "" || len(id) > MaxRequestIDLen {
		return m.exec(index, cmd)
	}
	op := proto.Clone(&fsmpb.Command{Op: cmd.Op}).(*fsmpb.Command)
	for _, d := range m.dedup {
		if d.id != id {
			continue
		}
		if !proto.Equal(d.op, op) {
			return refusal(index, fsmpb.RejectCode_REQUEST_ID_REUSED)
		}
		r := proto.Clone(d.res).(*fsmpb.Result)
		r.Deduplicated = true
		return r
	}
	r := m.exec(index, cmd)
	m.dedup = append(m.dedup, refDedup{id: id, op: op, at: m.clock, res: proto.Clone(r).(*fsmpb.Result)})
	if len(m.dedup) > MaxDedupEntries {
		m.dedup = m.dedup[1:]
	}
	return r
}

func (m *refModel) exec(index uint64, cmd *fsmpb.Command) *fsmpb.Result {
	if !refShapeOK(cmd) {
		return refusal(index, fsmpb.RejectCode_INVALID_ARGUMENT)
	}
	switch op := cmd.Op.(type) {
	case *fsmpb.Command_CreateStream:
		return m.create(index, op.CreateStream.Name)
	case *fsmpb.Command_OpenForWrite:
		return m.open(index, op.OpenForWrite.StreamId)
	case *fsmpb.Command_CommitAppend:
		return m.commitAppend(index, op.CommitAppend)
	case *fsmpb.Command_PublishGeneration:
		return m.publish(index, op.PublishGeneration)
	case *fsmpb.Command_RetireGeneration:
		return m.retire(index, op.RetireGeneration)
	case *fsmpb.Command_Trim:
		return m.trim(index, op.Trim.StreamId, op.Trim.Offset)
	case *fsmpb.Command_Seal:
		return m.seal(index, op.Seal.StreamId)
	case *fsmpb.Command_DeleteStream:
		return m.deleteStream(index, op.DeleteStream.StreamId)
	case *fsmpb.Command_RegisterObject:
		return m.register(index, refOfPB(op.RegisterObject.Object), op.RegisterObject.Size)
	case *fsmpb.Command_PinObject:
		return m.pin(index, op.PinObject)
	case *fsmpb.Command_ReleasePin:
		return m.release(index, op.ReleasePin.PinId)
	case *fsmpb.Command_MarkObjectDeleting:
		return m.markDeleting(index, refOfPB(op.MarkObjectDeleting.Object))
	case *fsmpb.Command_MarkObjectDeleted:
		return m.markDeleted(index, refOfPB(op.MarkObjectDeleted.Object))
	case *fsmpb.Command_ReportCandidateFailure:
		return m.report(index, op.ReportCandidateFailure)
	case *fsmpb.Command_RepairGen0:
		return m.repair(index, op.RepairGen0)
	}
	panic("model: unknown op")
}

func refOfPB(o *fsmpb.ObjectRef) ObjectRef {
	return ObjectRef{Key: o.GetKey(), Identity: o.GetIdentity()}
}
func rangePB(r *fsmpb.Range) Range { return Range{r.GetStart(), r.GetEnd()} }
func bytesPB(b *fsmpb.ByteRange) ByteRange {
	return ByteRange{b.GetOffset(), b.GetLength()}
}

func (m *refModel) create(index uint64, name string) *fsmpb.Result {
	for _, s := range m.streams {
		if s.name == name {
			return &fsmpb.Result{Version: index, StreamId: s.id}
		}
	}
	s := &refStream{id: m.nextStream, name: name, version: index, created: index, views: map[View]*refView{
		Committed:      {any: true, gens: []*refGen{{num: 0, version: index}}},
		TopicCompacted: {},
	}}
	m.nextStream++
	m.streams = append(m.streams, s)
	return &fsmpb.Result{Version: index, StreamId: s.id}
}

func (m *refModel) open(index, id uint64) *fsmpb.Result {
	s := m.stream(id)
	switch {
	case s == nil:
		return refusal(index, fsmpb.RejectCode_STREAM_NOT_FOUND)
	case s.sealed:
		return refusal(index, fsmpb.RejectCode_STREAM_SEALED)
	}
	s.epoch++
	s.version = index
	return &fsmpb.Result{Version: index, StreamId: id, WriterEpoch: s.epoch}
}

// fenced checks a writer epoch: only the current one may write.
func fenced(index uint64, s *refStream, epoch uint64) *fsmpb.Result {
	var r *fsmpb.Result
	switch {
	case epoch < s.epoch:
		r = refusal(index, fsmpb.RejectCode_STALE_EPOCH)
	case epoch > s.epoch:
		r = refusal(index, fsmpb.RejectCode_EPOCH_AHEAD)
	default:
		return nil
	}
	r.WriterEpoch = s.epoch
	return r
}

// usable says why an object cannot be named by a new pin or reference.
func (m *refModel) usable(ref ObjectRef) fsmpb.RejectCode {
	o := m.objects[ref.Key]
	switch {
	case o == nil:
		return fsmpb.RejectCode_OBJECT_NOT_REGISTERED
	case o.status != ObjectLive:
		return fsmpb.RejectCode_OBJECT_NOT_LIVE
	case o.ref.Identity != ref.Identity:
		return fsmpb.RejectCode_IDENTITY_MISMATCH
	}
	return fsmpb.RejectCode_REJECT_CODE_UNSPECIFIED
}

func (m *refModel) commitAppend(index uint64, c *fsmpb.CommitAppend) *fsmpb.Result {
	s := m.stream(c.StreamId)
	if s == nil {
		return refusal(index, fsmpb.RejectCode_STREAM_NOT_FOUND)
	}
	if s.sealed {
		return refusal(index, fsmpb.RejectCode_STREAM_SEALED)
	}
	if r := fenced(index, s, c.WriterEpoch); r != nil {
		return r
	}
	if c.ExpectedStart != s.end {
		r := refusal(index, fsmpb.RejectCode_APPEND_NOT_AT_END)
		r.CommittedEnd = s.end
		return r
	}
	ref := refOfPB(c.Object)
	if code := m.usable(ref); code != 0 {
		return refusal(index, code)
	}
	rng, b := Range{c.ExpectedStart, c.End}, bytesPB(c.Bytes)
	s.evidence = append(s.evidence, refEvidence{rng: rng, obj: ref, bytes: b, epoch: c.WriterEpoch, version: index})
	if c.IndexGen0 {
		g := s.views[Committed].gens[0]
		g.recs = append(g.recs, refRecord{rng: rng, obj: ref, bytes: b, version: index, status: RecordValid,
			sum: refChecksum(s.id, Committed, 0, rng, nil, ref, b)})
		g.version = index
	}
	s.end = c.End
	s.version = index
	return &fsmpb.Result{Version: index, StreamId: s.id, CommittedEnd: s.end}
}

func (m *refModel) publish(index uint64, c *fsmpb.PublishGeneration) *fsmpb.Result {
	s := m.stream(c.StreamId)
	if s == nil {
		return refusal(index, fsmpb.RejectCode_STREAM_NOT_FOUND)
	}
	if r := fenced(index, s, c.WriterEpoch); r != nil {
		return r
	}
	v := s.views[c.View]
	cover := rangePB(c.Coverage)
	// Later parts continue the newest generation while it is BUILDING.
	var g *refGen
	if n := len(v.gens); n > 0 && v.gens[n-1].num == c.Generation && v.gens[n-1].building {
		g = v.gens[n-1]
	}
	switch {
	case g != nil && g.cover != cover:
		return refusal(index, fsmpb.RejectCode_INVALID_ARGUMENT)
	case g == nil && v.any && c.Generation <= v.last:
		r := refusal(index, fsmpb.RejectCode_GENERATION_NOT_NEWER)
		r.Generation = v.last
		return r
	case cover.End > s.end:
		r := refusal(index, fsmpb.RejectCode_RECORD_OUT_OF_RANGE)
		r.CommittedEnd = s.end
		return r
	}
	var existing []refRecord
	if g != nil {
		existing = g.recs
	}
	var add []refRecord
	for _, pr := range c.Records {
		rec := refRecord{rng: rangePB(pr.Range), obj: refOfPB(pr.Object), bytes: bytesPB(pr.Bytes),
			version: index, sum: pr.Checksum, status: RecordValid}
		for _, sv := range pr.Survivors {
			rec.surv = append(rec.surv, rangePB(sv))
		}
		if rec.rng.Start < cover.Start || rec.rng.End > cover.End {
			return refusal(index, fsmpb.RejectCode_RECORD_OUT_OF_RANGE)
		}
		for _, x := range existing {
			if x.rng.Start < rec.rng.End && rec.rng.Start < x.rng.End {
				return refusal(index, fsmpb.RejectCode_RECORD_OVERLAP)
			}
		}
		if code := m.usable(rec.obj); code != 0 {
			return refusal(index, code)
		}
		if refChecksum(s.id, c.View, c.Generation, rec.rng, rec.surv, rec.obj, rec.bytes) != pr.Checksum {
			return refusal(index, fsmpb.RejectCode_CHECKSUM_MISMATCH)
		}
		if rec.rng.End > s.trim { // wholly trimmed records are never kept
			add = append(add, rec)
		}
	}
	if g == nil {
		g = &refGen{num: c.Generation, building: true, cover: cover}
		v.gens = append(v.gens, g)
		v.last, v.any = c.Generation, true
	}
	g.recs = append(g.recs, add...)
	slices.SortFunc(g.recs, func(a, b refRecord) int { return cmpU64(a.rng.Start, b.rng.Start) })
	g.version = index
	if c.Complete {
		g.building = false
	}
	return &fsmpb.Result{Version: index, StreamId: s.id, Generation: c.Generation}
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (m *refModel) retire(index uint64, c *fsmpb.RetireGeneration) *fsmpb.Result {
	s := m.stream(c.StreamId)
	if s == nil {
		return refusal(index, fsmpb.RejectCode_STREAM_NOT_FOUND)
	}
	if c.View == Committed && c.Generation == 0 {
		return refusal(index, fsmpb.RejectCode_INVALID_ARGUMENT)
	}
	v := s.views[c.View]
	i := slices.IndexFunc(v.gens, func(g *refGen) bool { return g.num == c.Generation })
	if i < 0 {
		return refusal(index, fsmpb.RejectCode_GENERATION_NOT_FOUND)
	}
	v.gens = slices.Delete(v.gens, i, i+1)
	return &fsmpb.Result{Version: index, StreamId: s.id, Generation: c.Generation}
}

func (m *refModel) trim(index, id, to uint64) *fsmpb.Result {
	s := m.stream(id)
	if s == nil {
		return refusal(index, fsmpb.RejectCode_STREAM_NOT_FOUND)
	}
	if to > s.end || to < s.trim {
		code := fsmpb.RejectCode_TRIM_BEYOND_END
		if to < s.trim {
			code = fsmpb.RejectCode_TRIM_BACKWARDS
		}
		r := refusal(index, code)
		r.CommittedEnd, r.Trim = s.end, s.trim
		return r
	}
	if to > s.trim {
		s.trim = to
		s.version = index
		s.evidence = slices.DeleteFunc(s.evidence, func(e refEvidence) bool { return e.rng.End <= to })
		for _, v := range s.views {
			for _, g := range v.gens {
				g.recs = slices.DeleteFunc(g.recs, func(r refRecord) bool { return r.rng.End <= to })
			}
		}
	}
	return &fsmpb.Result{Version: index, StreamId: id, Trim: s.trim, CommittedEnd: s.end}
}

func (m *refModel) seal(index, id uint64) *fsmpb.Result {
	s := m.stream(id)
	if s == nil {
		return refusal(index, fsmpb.RejectCode_STREAM_NOT_FOUND)
	}
	if !s.sealed {
		s.sealed = true
		s.version = index
	}
	return &fsmpb.Result{Version: index, StreamId: id, CommittedEnd: s.end}
}

func (m *refModel) deleteStream(index, id uint64) *fsmpb.Result {
	if m.stream(id) == nil {
		return refusal(index, fsmpb.RejectCode_STREAM_NOT_FOUND)
	}
	m.streams = slices.DeleteFunc(m.streams, func(s *refStream) bool { return s.id == id })
	return &fsmpb.Result{Version: index, StreamId: id}
}

func (m *refModel) register(index uint64, ref ObjectRef, size uint64) *fsmpb.Result {
	o := m.objects[ref.Key]
	switch {
	case o == nil:
		m.objects[ref.Key] = &refObject{ref: ref, size: size, status: ObjectLive, version: index, idle: m.clock}
		return res(index)
	case o.status == ObjectDeleting:
		return refusal(index, fsmpb.RejectCode_OBJECT_NOT_LIVE)
	case o.status == ObjectLive && o.ref == ref:
		if o.size != size {
			return refusal(index, fsmpb.RejectCode_INVALID_ARGUMENT)
		}
		return res(index)
	}
	// New bytes under a live key, or a deleted key registered again.
	if m.refs()[ref.Key] == 0 {
		o.idle = m.clock
	}
	o.ref, o.size, o.status, o.version = ref, size, ObjectLive, index
	return res(index)
}

func (m *refModel) pin(index uint64, c *fsmpb.PinObject) *fsmpb.Result {
	ref := refOfPB(c.Object)
	if code := m.usable(ref); code != 0 {
		return refusal(index, code)
	}
	expiry := int64(math.MaxInt64)
	if m.clock <= math.MaxInt64-c.TtlNanos {
		expiry = m.clock + c.TtlNanos
	}
	p := refPin{id: m.nextPin, ref: ref, holder: c.Holder, ttl: c.TtlNanos, expiry: expiry, version: index}
	m.nextPin++
	m.pins = append(m.pins, p)
	o := m.objects[ref.Key]
	o.maxExpiry = max(o.maxExpiry, expiry)
	return &fsmpb.Result{Version: index, PinId: p.id, PinExpiryUnixNano: expiry}
}

func (m *refModel) release(index, id uint64) *fsmpb.Result {
	i := slices.IndexFunc(m.pins, func(p refPin) bool { return p.id == id })
	if i < 0 {
		return refusal(index, fsmpb.RejectCode_PIN_NOT_FOUND)
	}
	m.pins = slices.Delete(m.pins, i, i+1)
	return &fsmpb.Result{Version: index, PinId: id}
}

func (m *refModel) markDeleting(index uint64, ref ObjectRef) *fsmpb.Result {
	if code := m.usable(ref); code != 0 {
		return refusal(index, code)
	}
	if m.refs()[ref.Key] > 0 {
		return refusal(index, fsmpb.RejectCode_OBJECT_REFERENCED)
	}
	o := m.objects[ref.Key]
	o.status, o.version = ObjectDeleting, index
	return res(index)
}

func (m *refModel) markDeleted(index uint64, ref ObjectRef) *fsmpb.Result {
	o := m.objects[ref.Key]
	switch {
	case o == nil:
		return refusal(index, fsmpb.RejectCode_OBJECT_NOT_REGISTERED)
	case o.ref.Identity != ref.Identity:
		return refusal(index, fsmpb.RejectCode_IDENTITY_MISMATCH)
	case o.status == ObjectDeleted:
		return res(index)
	case o.status != ObjectDeleting:
		return refusal(index, fsmpb.RejectCode_OBJECT_NOT_LIVE)
	case m.pinCount(ref.Key) > 0 && o.maxExpiry > m.clock:
		return refusal(index, fsmpb.RejectCode_OBJECT_PINNED)
	}
	o.status, o.version = ObjectDeleted, index
	return res(index)
}

func (m *refModel) report(index uint64, c *fsmpb.ReportCandidateFailure) *fsmpb.Result {
	k := c.Key
	s := m.stream(k.StreamId)
	if s == nil {
		return refusal(index, fsmpb.RejectCode_STREAM_NOT_FOUND)
	}
	var g *refGen
	for _, x := range s.views[k.View].gens {
		if x.num == k.Generation {
			g = x
		}
	}
	if g == nil {
		return refusal(index, fsmpb.RejectCode_RECORD_NOT_FOUND)
	}
	i := slices.IndexFunc(g.recs, func(r refRecord) bool { return r.rng.Start == k.Start })
	if i < 0 {
		return refusal(index, fsmpb.RejectCode_RECORD_NOT_FOUND)
	}
	r := &fsmpb.Result{Version: index, StreamId: s.id, Generation: g.num}
	permanent := c.Kind == fsmpb.FailureKind_FAILURE_KIND_IDENTITY_MISMATCH ||
		c.Kind == fsmpb.FailureKind_FAILURE_KIND_OBJECT_MISSING || c.Kind == fsmpb.FailureKind_FAILURE_KIND_CORRUPT
	if rec := &g.recs[i]; permanent && rec.version == c.Version && rec.status == RecordValid {
		rec.status, rec.version = RecordQuarantined, index
		g.version = index
		r.Quarantined = true
	}
	return r
}

func (m *refModel) repair(index uint64, c *fsmpb.RepairGen0) *fsmpb.Result {
	s := m.stream(c.StreamId)
	if s == nil {
		return refusal(index, fsmpb.RejectCode_STREAM_NOT_FOUND)
	}
	i := slices.IndexFunc(s.evidence, func(e refEvidence) bool { return e.rng.Start == c.EvidenceStart })
	if i < 0 || s.evidence[i].version != c.EvidenceVersion {
		return refusal(index, fsmpb.RejectCode_CONDITION_FAILED)
	}
	ev := s.evidence[i]
	if rangePB(c.Record.Range) != ev.rng || refOfPB(c.Record.Object) != ev.obj || bytesPB(c.Record.Bytes) != ev.bytes {
		return refusal(index, fsmpb.RejectCode_CONDITION_FAILED)
	}
	sum := refChecksum(s.id, Committed, 0, ev.rng, nil, ev.obj, ev.bytes)
	if sum != c.Record.Checksum {
		return refusal(index, fsmpb.RejectCode_CHECKSUM_MISMATCH)
	}
	g := s.views[Committed].gens[0]
	var over []refRecord
	for _, r := range g.recs {
		if r.rng.Start < ev.rng.End && ev.rng.Start < r.rng.End {
			over = append(over, r)
		}
	}
	if len(over) != len(c.Replace) {
		return refusal(index, fsmpb.RejectCode_CONDITION_FAILED)
	}
	for j, r := range over {
		if r.rng.Start != c.Replace[j].Start || r.version != c.Replace[j].Version {
			return refusal(index, fsmpb.RejectCode_CONDITION_FAILED)
		}
	}
	if code := m.usable(ev.obj); code != 0 {
		return refusal(index, code)
	}
	g.recs = slices.DeleteFunc(g.recs, func(r refRecord) bool { return r.rng.Start < ev.rng.End && ev.rng.Start < r.rng.End })
	g.recs = append(g.recs, refRecord{rng: ev.rng, obj: ev.obj, bytes: ev.bytes, version: index, sum: sum, status: RecordValid})
	slices.SortFunc(g.recs, func(a, b refRecord) int { return cmpU64(a.rng.Start, b.rng.Start) })
	g.version = index
	return &fsmpb.Result{Version: index, StreamId: s.id}
}

// refShapeOK is the model's reading of what a well-formed command is
// (fsm.proto and limits.go), checked without any state.
func refShapeOK(cmd *fsmpb.Command) bool {
	if len(cmd.RequestId) > MaxRequestIDLen {
		return false
	}
	objOK := func(o *fsmpb.ObjectRef) bool {
		return o != nil && o.Key != "" && len(o.Key) <= MaxKeyLen && o.Identity != "" && len(o.Identity) <= MaxIdentityLen
	}
	rangeOK := func(r *fsmpb.Range) bool { return r != nil && r.Start < r.End && r.End <= MaxOffset }
	bytesOK := func(b *fsmpb.ByteRange) bool { return b != nil && b.Offset <= MaxOffset && b.Length <= MaxOffset }
	viewOK := func(v View) bool { return v == Committed || v == TopicCompacted }
	recordOK := func(view View, r *fsmpb.IndexRecord) bool {
		if r == nil || !rangeOK(r.Range) || !objOK(r.Object) || !bytesOK(r.Bytes) {
			return false
		}
		if view == Committed {
			return len(r.Survivors) == 0
		}
		if len(r.Survivors) == 0 || len(r.Survivors) > MaxSurvivorsPerRecord {
			return false
		}
		at := r.Range.Start
		for _, s := range r.Survivors {
			if !rangeOK(s) || s.Start < at || s.End > r.Range.End {
				return false
			}
			at = s.End
		}
		return true
	}
	switch op := cmd.Op.(type) {
	case *fsmpb.Command_CreateStream:
		n := op.CreateStream.Name
		return n != "" && len(n) <= MaxNameLen && utf8.ValidString(n) && !strings.ContainsFunc(n, unicode.IsControl)
	case *fsmpb.Command_OpenForWrite:
		return op.OpenForWrite.StreamId != 0
	case *fsmpb.Command_CommitAppend:
		c := op.CommitAppend
		return c.StreamId != 0 && c.End <= MaxOffset && c.ExpectedStart < c.End && objOK(c.Object) && bytesOK(c.Bytes)
	case *fsmpb.Command_PublishGeneration:
		c := op.PublishGeneration
		if c.StreamId == 0 || !viewOK(c.View) || c.Generation == 0 || !rangeOK(c.Coverage) || len(c.Records) > MaxRecordsPerCommand {
			return false
		}
		for i, r := range c.Records {
			if !recordOK(c.View, r) || (i > 0 && r.Range.Start < c.Records[i-1].Range.End) {
				return false
			}
		}
		return true
	case *fsmpb.Command_RetireGeneration:
		return op.RetireGeneration.StreamId != 0 && viewOK(op.RetireGeneration.View)
	case *fsmpb.Command_Trim:
		return op.Trim.StreamId != 0 && op.Trim.Offset <= MaxOffset
	case *fsmpb.Command_Seal:
		return op.Seal.StreamId != 0
	case *fsmpb.Command_DeleteStream:
		return op.DeleteStream.StreamId != 0
	case *fsmpb.Command_RegisterObject:
		return objOK(op.RegisterObject.Object)
	case *fsmpb.Command_PinObject:
		c := op.PinObject
		return objOK(c.Object) && len(c.Holder) <= MaxHolderLen && c.TtlNanos >= int64(MinPinTTL) && c.TtlNanos <= int64(MaxPinTTL)
	case *fsmpb.Command_ReleasePin:
		return op.ReleasePin.PinId != 0
	case *fsmpb.Command_MarkObjectDeleting:
		return objOK(op.MarkObjectDeleting.Object)
	case *fsmpb.Command_MarkObjectDeleted:
		return objOK(op.MarkObjectDeleted.Object)
	case *fsmpb.Command_ReportCandidateFailure:
		c := op.ReportCandidateFailure
		return c.Key != nil && c.Key.StreamId != 0 && viewOK(c.Key.View) &&
			c.Kind >= 1 && c.Kind <= 4 && len(c.Detail) <= MaxDetailLen
	case *fsmpb.Command_RepairGen0:
		c := op.RepairGen0
		if c.StreamId == 0 || len(c.Replace) > MaxRepairReplace {
			return false
		}
		for i, r := range c.Replace {
			if r == nil || (i > 0 && r.Start <= c.Replace[i-1].Start) {
				return false
			}
		}
		return recordOK(Committed, c.Record)
	}
	return false
}
