package fsm

// A generator of command sequences for the property tests and the sequence
// fuzzer. It reads the reference model to aim at interesting edges: most
// commands are valid, and parameters cluster around the committed end, the
// trim point, pin expiries, dedup ages and the current generations, with a
// minority of deliberate mistakes (stale epochs, wrong conditions, bad
// checksums, malformed shapes).

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/fsm/fsmpb"
)

// chooser is the generator's only source of decisions.
type chooser interface {
	// intn returns a number in [0, n); n > 0.
	intn(n int) int
}

type randChooser struct{ r *rand.Rand }

func (c randChooser) intn(n int) int { return c.r.IntN(n) }

// byteChooser takes decisions from fuzzer bytes; once they run out every
// decision is 0 and done reports true.
type byteChooser struct {
	data []byte
	done bool
}

func (c *byteChooser) intn(n int) int {
	if len(c.data) == 0 {
		c.done = true
		return 0
	}
	v := int(c.data[0])
	c.data = c.data[1:]
	if n > 256 && len(c.data) > 0 {
		v = v<<8 | int(c.data[0])
		c.data = c.data[1:]
	}
	return v % n
}

// recordingChooser passes decisions through and records them as bytes a
// byteChooser replays (for decisions below 256; larger ones as two bytes).
type recordingChooser struct {
	c   chooser
	out []byte
}

func (r *recordingChooser) intn(n int) int {
	v := r.c.intn(n)
	if n > 256 {
		r.out = append(r.out, byte(v>>8), byte(v))
	} else {
		r.out = append(r.out, byte(v))
	}
	return v
}

type generator struct {
	ch   chooser
	m    *refModel
	last *fsmpb.Command // for retries
	// followUps are commands worth trying soon, in order.
	followUps []*fsmpb.Command
}

func (g *generator) pct(p int) bool { return g.ch.intn(100) < p }

func (g *generator) pick(n int) int { return g.ch.intn(n) }

// u64Near returns x moved by one of -1, 0, +1 (not below 0).
func (g *generator) near(x uint64) uint64 {
	switch g.pick(4) {
	case 0:
		if x > 0 {
			return x - 1
		}
	case 1:
		return x + 1
	}
	return x
}

// next returns the next command, stamped.
func (g *generator) next() *fsmpb.Command {
	if g.last != nil && g.last.RequestId != "" && g.pct(8) {
		c := proto.Clone(g.last).(*fsmpb.Command) // a retry, maybe stamped later
		c.StampUnixNano = g.stamp()
		return c
	}
	c := g.op()
	if len(g.followUps) > 0 && g.pct(60) {
		c, g.followUps = g.followUps[0], g.followUps[1:]
	}
	if g.pct(15) {
		c.RequestId = fmt.Sprintf("r%d", g.pick(6))
	}
	c.StampUnixNano = g.stamp()
	g.last = c
	return c
}

func (g *generator) op() *fsmpb.Command {
	if g.activeStream() == nil && g.pct(70) {
		return g.create()
	}
	weights := []struct {
		w  int
		mk func() *fsmpb.Command
	}{
		{4, g.create}, {4, g.open}, {22, g.append}, {14, g.publish}, {3, g.retire}, {8, g.trim},
		{1, g.seal}, {1, g.delete}, {8, g.register}, {8, g.pin}, {5, g.release},
		{4, g.deleting}, {4, g.deleted}, {6, g.report}, {8, g.repair},
	}
	total := 0
	for _, w := range weights {
		total += w.w
	}
	n := g.pick(total)
	for _, w := range weights {
		if n < w.w {
			return w.mk()
		}
		n -= w.w
	}
	panic("unreachable")
}

// stamp chooses the command's stamp relative to machine time, aiming at
// pin expiries, pin pruning and dedup ageing, and sometimes going back.
func (g *generator) stamp() int64 {
	now := g.m.clock
	switch n := g.pick(20); {
	case n < 5:
		return now
	case n < 12:
		return now + int64(1+g.pick(1000))*int64(time.Millisecond)
	case n < 14 && len(g.m.pins) > 0:
		p := g.m.pins[g.pick(len(g.m.pins))]
		at := p.expiry
		if g.pct(50) {
			at += int64(PinGrace)
		}
		return max(now, at+int64(g.pick(3))-1)
	case n < 15 && len(g.m.dedup) > 0:
		d := g.m.dedup[g.pick(len(g.m.dedup))]
		return max(now, d.at+int64(DedupTTL)+int64(g.pick(2))-1)
	case n < 17:
		return now + int64(1+g.pick(11))*int64(time.Minute)
	case n < 19:
		return now - int64(g.pick(1000))*int64(time.Millisecond)
	}
	return now + 1
}

func (g *generator) streamID() uint64 {
	if len(g.m.streams) > 0 && g.pct(95) {
		return g.m.streams[g.pick(len(g.m.streams))].id
	}
	return uint64(g.pick(int(g.m.nextStream) + 1))
}

// activeStream returns an unsealed stream, if there is one.
func (g *generator) activeStream() *refStream {
	var active []*refStream
	for _, s := range g.m.streams {
		if !s.sealed {
			active = append(active, s)
		}
	}
	if len(active) == 0 {
		return nil
	}
	return active[g.pick(len(active))]
}

// writableID prefers an unsealed stream with data, for appends and
// publishes.
func (g *generator) writableID() uint64 {
	if s := g.activeStream(); s != nil && g.pct(90) {
		return s.id
	}
	return g.streamID()
}

func (g *generator) objRef() ObjectRef {
	if len(g.m.objects) > 0 && g.pct(85) {
		keys := sortedKeys(g.m.objects)
		o := g.m.objects[keys[g.pick(len(keys))]]
		if g.pct(90) {
			return o.ref
		}
		return ObjectRef{o.ref.Key, fmt.Sprintf("i%d", g.pick(3))}
	}
	return ObjectRef{fmt.Sprintf("k%d", g.pick(9)), fmt.Sprintf("i%d", g.pick(3))}
}

// liveRef prefers a LIVE object, for commands that need one.
func (g *generator) liveRef() ObjectRef {
	var live []ObjectRef
	for _, k := range sortedKeys(g.m.objects) {
		if o := g.m.objects[k]; o.status == ObjectLive {
			live = append(live, o.ref)
		}
	}
	if len(live) > 0 && g.pct(90) {
		return live[g.pick(len(live))]
	}
	return g.objRef()
}

func (g *generator) anyLive() bool {
	for _, o := range g.m.objects {
		if o.status == ObjectLive {
			return true
		}
	}
	return false
}

func (g *generator) bytes() ByteRange {
	return ByteRange{uint64(g.pick(1000)), uint64(g.pick(1000))}
}

func (g *generator) create() *fsmpb.Command {
	if g.pct(3) {
		return cmdCreate("")
	}
	return cmdCreate(fmt.Sprintf("s%d", g.pick(4)))
}

func (g *generator) open() *fsmpb.Command { return cmdOpen(g.streamID()) }

func (g *generator) append() *fsmpb.Command {
	if !g.anyLive() && g.pct(70) {
		return g.register()
	}
	id := g.writableID()
	var epoch, end uint64
	if s := g.m.stream(id); s != nil {
		epoch, end = s.epoch, s.end
	}
	if g.pct(10) {
		epoch = g.near(epoch)
	}
	start := end
	if g.pct(12) {
		start = g.near(end)
	}
	length := uint64(1 + g.pick(8))
	if g.pct(3) {
		length = 0 // malformed
	}
	return cmdAppend(id, epoch, start, start+length, g.liveRef(), g.bytes(), g.pct(70))
}

func (g *generator) seal() *fsmpb.Command   { return cmdSeal(g.streamID()) }
func (g *generator) delete() *fsmpb.Command { return cmdDelete(g.streamID()) }

func (g *generator) trim() *fsmpb.Command {
	id := g.streamID()
	s := g.m.stream(id)
	if s == nil {
		return cmdTrim(id, uint64(g.pick(3)))
	}
	var to uint64
	switch g.pick(6) {
	case 0:
		to = g.near(s.trim)
	case 1:
		to = g.near(s.end)
	case 2:
		if len(s.evidence) > 0 {
			to = g.near(s.evidence[g.pick(len(s.evidence))].rng.End)
		}
	default:
		to = s.trim + uint64(g.pick(int(s.end-s.trim)+1))
	}
	return cmdTrim(id, to)
}

func (g *generator) retire() *fsmpb.Command {
	id := g.streamID()
	view := View(1 + g.pick(2))
	if s := g.m.stream(id); s != nil && len(s.views[view].gens) > 0 && g.pct(80) {
		gens := s.views[view].gens
		return cmdRetire(id, view, gens[g.pick(len(gens))].num)
	}
	return cmdRetire(id, view, uint64(g.pick(4)))
}

func (g *generator) publish() *fsmpb.Command {
	id := g.writableID()
	view := TopicCompacted
	if g.pct(35) {
		view = Committed
	}
	s := g.m.stream(id)
	if s == nil || (s.end == 0 && g.pct(80)) {
		return g.append()
	}
	v := s.views[view]
	epoch := s.epoch
	if g.pct(5) {
		epoch = g.near(epoch)
	}
	var num uint64
	var cover Range
	if n := len(v.gens); n > 0 && v.gens[n-1].building && g.pct(70) {
		num, cover = v.gens[n-1].num, v.gens[n-1].cover
		if g.pct(5) {
			cover.End = g.near(cover.End)
		}
	} else {
		num = v.last + 1
		if g.pct(8) {
			num = g.near(v.last)
		}
		cover = g.coverage(s)
	}
	var recs []*fsmpb.IndexRecord
	if cover.Start < cover.End {
		recs = g.records(s, view, num, cover)
	}
	return cmdPublish(id, view, num, epoch, cover, g.pct(55), recs...)
}

// coverage picks a coverage range, mostly inside [trim, end], sometimes
// reaching past the end or below the trim point.
func (g *generator) coverage(s *refStream) Range {
	if s.end == 0 {
		return Range{0, uint64(1 + g.pick(3))}
	}
	lo := s.trim
	if g.pct(20) {
		lo = 0
	}
	if lo >= s.end {
		lo = s.end - 1
	}
	start := lo + uint64(g.pick(int(s.end-lo)))
	end := start + 1 + uint64(g.pick(int(s.end-start)))
	if g.pct(6) {
		end++
	}
	return Range{start, end}
}

// records cuts cover into up to four sorted records (with gaps), each
// sometimes spilling out of it, naming mostly live objects, with survivors
// for a sparse view and mostly right checksums.
func (g *generator) records(s *refStream, view View, num uint64, cover Range) []*fsmpb.IndexRecord {
	var recs []*fsmpb.IndexRecord
	at := cover.Start
	for n := g.pick(5); n > 0 && at < cover.End; n-- {
		start := at + uint64(g.pick(2))
		if start >= cover.End {
			break
		}
		end := start + 1 + uint64(g.pick(int(cover.End-start)))
		if g.pct(4) {
			end++
		}
		if g.pct(3) && start > 0 {
			start-- // overlaps the previous record or leaves the coverage
		}
		rng := Range{start, end}
		var surv []Range
		if view == TopicCompacted {
			surv = g.survivors(rng)
		} else if g.pct(2) {
			surv = []Range{rng}
		}
		obj, b := g.liveRef(), g.bytes()
		sum := refChecksum(s.id, view, num, rng, surv, obj, b)
		if g.pct(4) {
			sum ^= 1 << g.pick(32)
		}
		recs = append(recs, &fsmpb.IndexRecord{Range: rng.PB(), Survivors: RangesPB(surv), Object: obj.PB(), Bytes: b.PB(), Checksum: sum})
		at = end
	}
	return recs
}

func (g *generator) survivors(span Range) []Range {
	var out []Range
	at := span.Start
	for n := 1 + g.pick(3); n > 0 && at < span.End; n-- {
		start := at + uint64(g.pick(int(span.End-at)))
		end := start + 1 + uint64(g.pick(int(span.End-start)))
		out = append(out, Range{start, end})
		at = end
	}
	if g.pct(4) && len(out) > 0 {
		// Malformed: empty, or reaching out of the span, or none at all.
		switch g.pick(3) {
		case 0:
			out = nil
		case 1:
			out[0].End = out[0].Start
		case 2:
			out[len(out)-1].End = span.End + 1
		}
	}
	return out
}

func (g *generator) register() *fsmpb.Command {
	ref := g.objRef()
	size := uint64(100)
	if g.pct(10) {
		size = uint64(g.pick(200))
	}
	if g.pct(10) {
		ref.Identity = fmt.Sprintf("i%d", g.pick(3))
	}
	return cmdRegister(ref, size)
}

func (g *generator) pin() *fsmpb.Command {
	ttls := []time.Duration{MinPinTTL, time.Second, 30 * time.Second, MaxPinTTL}
	ttl := ttls[g.pick(len(ttls))]
	switch {
	case g.pct(40):
		ttl = MinPinTTL + time.Duration(g.pick(600))*time.Second
	case g.pct(8):
		ttl = []time.Duration{MinPinTTL - 1, MaxPinTTL + 1, 0}[g.pick(3)]
	}
	ref := g.liveRef()
	if g.pct(30) { // race GC: pin what it may be about to delete
		refs := g.m.refs()
		for _, k := range sortedKeys(g.m.objects) {
			if o := g.m.objects[k]; o.status == ObjectLive && refs[k] == 0 {
				ref = o.ref
				g.followUps = []*fsmpb.Command{cmdDeleting(ref), cmdDeleted(ref)}
			}
		}
	}
	return cmdPin(ref, fmt.Sprintf("h%d", g.pick(3)), int64(ttl))
}

func (g *generator) release() *fsmpb.Command {
	if len(g.m.pins) == 0 && g.pct(70) {
		return g.pin()
	}
	if len(g.m.pins) > 0 && g.pct(85) {
		return cmdRelease(g.m.pins[g.pick(len(g.m.pins))].id)
	}
	return cmdRelease(uint64(g.pick(int(g.m.nextPin) + 1)))
}

// deleting prefers a live object nothing references, as GC would.
func (g *generator) deleting() *fsmpb.Command {
	refs := g.m.refs()
	var idle, pinned []ObjectRef
	for _, k := range sortedKeys(g.m.objects) {
		if o := g.m.objects[k]; o.status == ObjectLive && refs[k] == 0 {
			idle = append(idle, o.ref)
			if g.m.pinCount(k) > 0 {
				pinned = append(pinned, o.ref)
			}
		}
	}
	switch {
	case len(pinned) > 0 && g.pct(60):
		ref := pinned[g.pick(len(pinned))]
		g.followUps = []*fsmpb.Command{cmdDeleted(ref)}
		return cmdDeleting(ref)
	case len(idle) > 0 && g.pct(70):
		return cmdDeleting(idle[g.pick(len(idle))])
	}
	return cmdDeleting(g.objRef())
}
func (g *generator) deleted() *fsmpb.Command {
	for _, k := range sortedKeys(g.m.objects) {
		if o := g.m.objects[k]; o.status == ObjectDeleting && g.pct(60) {
			return cmdDeleted(o.ref)
		}
	}
	return cmdDeleted(g.objRef())
}

// anyRecord picks an existing record, if there is one.
func (g *generator) anyRecord() (IndexKey, refRecord, bool) {
	type found struct {
		key IndexKey
		rec refRecord
	}
	var all []found
	for _, s := range g.m.streams {
		for _, view := range []View{Committed, TopicCompacted} {
			for _, gen := range s.views[view].gens {
				for _, r := range gen.recs {
					all = append(all, found{IndexKey{s.id, view, gen.num, r.rng.Start}, r})
				}
			}
		}
	}
	if len(all) == 0 {
		return IndexKey{}, refRecord{}, false
	}
	f := all[g.pick(len(all))]
	return f.key, f.rec, true
}

func (g *generator) report() *fsmpb.Command {
	kind := FailureKind(1 + g.pick(4))
	if g.pct(3) {
		kind = FailureKind(g.pick(6))
	}
	key, rec, ok := g.anyRecord()
	if !ok && g.pct(70) {
		return g.append()
	}
	if ok && g.pct(90) {
		version := rec.version
		if g.pct(25) {
			version = g.near(version)
		}
		if g.pct(5) {
			key.Start = g.near(key.Start)
		}
		return cmdReport(key, version, kind, "d")
	}
	return cmdReport(IndexKey{g.streamID(), View(1 + g.pick(2)), uint64(g.pick(3)), uint64(g.pick(20))}, uint64(g.pick(50)), kind, "")
}

// repair plans a RepairGen0 from the model's state, right most of the time,
// then maybe spoils one of its conditions.
func (g *generator) repair() *fsmpb.Command {
	var cands []*refStream
	for _, s := range g.m.streams {
		if len(s.evidence) > 0 {
			cands = append(cands, s)
		}
	}
	if len(cands) == 0 && g.pct(70) {
		return g.append()
	}
	if len(cands) == 0 || g.pct(4) {
		return cmdRepair(g.streamID(), uint64(g.pick(10)), uint64(g.pick(20)), nil,
			&fsmpb.IndexRecord{Range: Range{0, 1}.PB(), Object: g.objRef().PB(), Bytes: g.bytes().PB()})
	}
	s := cands[g.pick(len(cands))]
	ev := s.evidence[g.pick(len(s.evidence))]
	var replace []*fsmpb.RecordVersion
	for _, r := range s.views[Committed].gens[0].recs {
		if r.rng.Overlaps(ev.rng) {
			replace = append(replace, &fsmpb.RecordVersion{Start: r.rng.Start, Version: r.version})
		}
	}
	rec := &fsmpb.IndexRecord{
		Range: ev.rng.PB(), Object: ev.obj.PB(), Bytes: ev.bytes.PB(),
		Checksum: refChecksum(s.id, Committed, 0, ev.rng, nil, ev.obj, ev.bytes),
	}
	evVersion := ev.version
	switch g.pick(12) {
	case 0:
		evVersion = g.near(evVersion)
	case 1:
		rec.Bytes.Length++
	case 2:
		rec.Checksum ^= 1
	case 3:
		if len(replace) > 0 {
			replace[0].Version = g.near(replace[0].Version)
		}
	case 4:
		if len(replace) > 0 {
			replace = replace[1:]
		} else {
			replace = []*fsmpb.RecordVersion{{Start: ev.rng.Start, Version: ev.version}}
		}
	}
	return cmdRepair(s.id, ev.rng.Start, evVersion, replace, rec)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
