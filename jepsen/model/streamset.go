package model

import (
	"fmt"
	"sort"

	"github.com/metad/metad/jepsen/history"
)

// CheckStreamSets is G16: a stream-set object's appends (KindObject, one
// CommitObject: one object version and an append to each of several
// streams, in one Raft command at one version) are visible in all of
// their streams or in none, to every read and every watch.
//
// An object is visible if it was acknowledged, or if any of its appends
// was seen: a watch event APPENDED naming its version (key, identity) and
// the append's offsets, an entry of the final evidence, or a target a
// reader resolved. Its version V is the one its acknowledgement returned,
// else the first version an event or evidence entry showed. For every
// visible object:
//
//   - it was not refused, nor did it certainly fail: nothing of either
//     may be seen;
//   - every event and evidence entry of any of its appends, in any
//     stream, carries V: one command, one version;
//   - the final evidence of every one of its streams holds its append at
//     its offsets (unless the stream's final trim lies above the append's
//     start: trimmed evidence is gone);
//   - no describe or resolve of one of its streams answered from a state
//     at index V or later (describe's applied_index, resolve's read_index
//     ≥ V: the index of the state it read) shows a committed end below the
//     append's end: a read at V or later sees every append or misses one;
//   - every watcher following one of its streams whose session covered V
//     (the span (from, last event], or (STARTED, last event] for a fresh
//     start, as CheckWatch defines it) delivered the append: a watcher of
//     a stream set that saw the object in one stream sees it in every
//     other stream it follows the object touches, since the read-back
//     resumes every watcher to the end of its stream's history.
//
// Each append is also in the history as a KindAppend op of its stream
// (In.Set), which the per-stream checks (G1, G2, G8, G14) hold like any
// append; G16 adds what they cannot see, the link between streams.
func CheckStreamSets(h history.History) []Anomaly {
	c := setCheck{objects: map[history.Object]*setObject{}, reported: map[*setObject]int{}}
	for i := range h.Ops {
		if op := &h.Ops[i]; op.Kind == history.KindObject && op.In.Object != nil {
			c.objects[*op.In.Object] = &setObject{op: op, version: acknowledgedVersion(op)}
		}
	}
	if len(c.objects) == 0 {
		return nil
	}
	c.collect(h)
	objs := make([]*setObject, 0, len(c.objects))
	for _, o := range c.objects {
		if o.visible() {
			objs = append(objs, o)
		}
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].op.ID < objs[j].op.ID })
	for _, o := range objs {
		c.check(o)
	}
	return c.out
}

// setObject is one CommitObject and what the history shows of it.
type setObject struct {
	op      *history.Op
	version uint64 // V: acknowledged, else the first version seen; 0 unknown
	seen    []sighting
}

func (o *setObject) visible() bool { return o.op.Status == history.OK || len(o.seen) > 0 }

// sighting is one of an object's appends as a read or watch showed it.
type sighting struct {
	app     int    // index into the object's appends
	version uint64 // 0: the sighting names no version (a target)
	op      int
	what    string
}

func acknowledgedVersion(op *history.Op) uint64 {
	if op.Status == history.OK && op.Out != nil {
		return op.Out.Version
	}
	return 0
}

// setFinal is a stream's final read-back: its trim and evidence.
type setFinal struct {
	trim     uint64
	haveEv   bool
	evidence map[setKey]uint64 // an entry's version by object and offsets
	evOp     int
}

type setKey struct {
	obj history.Object
	rng history.Range
}

// setSession is one watch session's covered span on one stream.
type setSession struct {
	op     *history.Op
	lo, hi uint64
}

type setCheck struct {
	objects  map[history.Object]*setObject
	finals   map[uint64]*setFinal
	sessions map[uint64][]setSession // by stream
	// delivered: (watcher, stream, object) of every APPENDED event.
	delivered map[setDelivery]bool
	reads     map[uint64][]*history.Op // OK describes and resolves by stream, with their index
	out       []Anomaly
	reported  map[*setObject]int
}

type setDelivery struct {
	client int
	stream uint64
	obj    history.Object
}

// maxSetAnomalies bounds the anomalies reported per object.
const maxSetAnomalies = 4

func (c *setCheck) bad(o *setObject, op int, stream uint64, format string, args ...any) {
	if c.reported[o]++; c.reported[o] > maxSetAnomalies {
		return
	}
	c.out = append(c.out, Anomaly{Check: "G16", Op: op, Stream: stream, Detail: fmt.Sprintf(format, args...)})
}

// see records a sighting of obj's append to stream at rng.
func (c *setCheck) see(stream uint64, obj history.Object, rng history.Range, version uint64, op int, what string) {
	o := c.objects[obj]
	if o == nil {
		return // not a stream-set object
	}
	for i, a := range o.op.In.Appends {
		if a.Stream != stream {
			continue
		}
		if a.Range() != rng {
			c.bad(o, op, stream, "%s shows object %s at %s in stream %d; its append there is %s (op %d)",
				what, obj.Key, rng, stream, a.Range(), o.op.ID)
		}
		o.seen = append(o.seen, sighting{app: i, version: version, op: op, what: what})
		if o.version == 0 {
			o.version = version
		}
		return
	}
	c.bad(o, op, stream, "%s shows object %s in stream %d, which it has no append to (op %d)", what, obj.Key, stream, o.op.ID)
}

func (c *setCheck) collect(h history.History) {
	c.finals, c.sessions = map[uint64]*setFinal{}, map[uint64][]setSession{}
	c.delivered, c.reads = map[setDelivery]bool{}, map[uint64][]*history.Op{}
	final := func(s uint64) *setFinal {
		if c.finals[s] == nil {
			c.finals[s] = &setFinal{evidence: map[setKey]uint64{}}
		}
		return c.finals[s]
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Out == nil || op.Status != history.OK && op.Kind != history.KindWatch {
			continue
		}
		switch op.Kind {
		case history.KindWatch:
			c.watchSession(op)
		case history.KindEvidence:
			if !op.Final {
				continue
			}
			f := final(op.Stream)
			f.haveEv, f.evOp = true, op.ID
			for _, e := range op.Out.Evidence {
				f.evidence[setKey{e.Object, e.Range}] = e.Version
				c.see(op.Stream, e.Object, e.Range, e.Version, op.ID, fmt.Sprintf("the final evidence (op %d)", op.ID))
			}
		case history.KindDescribe:
			c.reads[op.Stream] = append(c.reads[op.Stream], op)
			if op.Final {
				final(op.Stream).trim = max(final(op.Stream).trim, op.Out.Trim)
			}
		case history.KindResolve, history.KindRead:
			if op.Kind == history.KindResolve && op.Out.AppliedIndex > 0 {
				c.reads[op.Stream] = append(c.reads[op.Stream], op)
			}
			if op.Final {
				final(op.Stream).trim = max(final(op.Stream).trim, op.Out.Trim)
			}
			if t := op.Out.Target; t != nil && t.View == Committed && t.Generation == 0 {
				c.see(t.Stream, t.Object, t.RecordRange, 0, op.ID, fmt.Sprintf("resolve op %d", op.ID))
			}
		}
	}
}

// watchSession records a session's span and the appends it delivered.
func (c *setCheck) watchSession(op *history.Op) {
	if len(op.Out.Events) == 0 {
		return
	}
	s := setSession{op: op, lo: op.In.From}
	for _, e := range op.Out.Events {
		if e.Kind == history.EventStarted && op.In.From == 0 && s.lo == 0 {
			s.lo = e.Version // a fresh start covers what follows its STARTED
		}
		if e.Kind == history.EventAppended && e.Object != nil && e.Range != nil {
			c.delivered[setDelivery{op.Client, op.Stream, *e.Object}] = true
			c.see(op.Stream, *e.Object, *e.Range, e.Version, op.ID, fmt.Sprintf("watcher %d (op %d)", op.Client, op.ID))
		}
		s.hi = e.Version
	}
	c.sessions[op.Stream] = append(c.sessions[op.Stream], s)
}

func (c *setCheck) check(o *setObject) {
	first := o.seen
	if len(first) > 0 && o.op.Status != history.OK && o.op.Status != history.Info {
		s := first[0]
		c.bad(o, s.op, o.op.In.Appends[s.app].Stream, "object %s was %s (op %d: %s), but %s shows its append to stream %d",
			o.op.In.Object.Key, o.op.Status, o.op.ID, o.op.Reason, s.what, o.op.In.Appends[s.app].Stream)
		return
	}
	seenIn := c.seenIn(o)
	for _, s := range o.seen {
		if s.version != 0 && s.version != o.version {
			c.bad(o, s.op, o.op.In.Appends[s.app].Stream, "%s shows object %s's append to stream %d at version %d; %s: one command has one version",
				s.what, o.op.In.Object.Key, o.op.In.Appends[s.app].Stream, s.version, c.versionSource(o))
		}
	}
	for _, a := range o.op.In.Appends {
		c.checkFinal(o, a, seenIn)
		if o.version == 0 {
			continue // seen only by targets: no version to hold reads and watchers to
		}
		c.checkReads(o, a, seenIn)
		c.checkWatchers(o, a, seenIn)
	}
}

// seenIn says where the object was seen first, for the anomalies' text.
func (c *setCheck) seenIn(o *setObject) string {
	if o.op.Status == history.OK {
		return fmt.Sprintf("acknowledged at version %d (op %d)", o.version, o.op.ID)
	}
	s := o.seen[0]
	return fmt.Sprintf("seen in stream %d by %s", o.op.In.Appends[s.app].Stream, s.what)
}

func (c *setCheck) versionSource(o *setObject) string {
	if o.op.Status == history.OK {
		return fmt.Sprintf("it was acknowledged at version %d (op %d)", o.version, o.op.ID)
	}
	for _, s := range o.seen {
		if s.version == o.version {
			return fmt.Sprintf("%s shows version %d in stream %d", s.what, o.version, o.op.In.Appends[s.app].Stream)
		}
	}
	return fmt.Sprintf("version %d", o.version)
}

// checkFinal: the stream's final evidence holds the append, at V.
func (c *setCheck) checkFinal(o *setObject, a history.ObjectAppend, seenIn string) {
	f := c.finals[a.Stream]
	if f == nil || !f.haveEv || a.ExpectedStart < f.trim {
		return
	}
	if _, ok := f.evidence[setKey{*o.op.In.Object, a.Range()}]; !ok {
		c.bad(o, f.evOp, a.Stream, "object %s (op %d) was %s, but stream %d's final evidence (trim %d) lacks its append %s there: a stream-set object applied in part",
			o.op.In.Object.Key, o.op.ID, seenIn, a.Stream, f.trim, a.Range())
	}
}

// checkReads: a describe or resolve answered from the state at index V
// or later shows the append's end.
func (c *setCheck) checkReads(o *setObject, a history.ObjectAppend, seenIn string) {
	for _, d := range c.reads[a.Stream] {
		if d.Out.AppliedIndex >= o.version && d.Out.CommittedEnd < a.End {
			c.bad(o, d.ID, a.Stream, "%s op %d read stream %d at index %d with committed end %d, below the end %d of object %s's append %s, which was %s",
				d.Kind, d.ID, a.Stream, d.Out.AppliedIndex, d.Out.CommittedEnd, a.End, o.op.In.Object.Key, a.Range(), seenIn)
			return
		}
	}
}

// checkWatchers: every watcher whose session on the stream covered V
// delivered the append.
func (c *setCheck) checkWatchers(o *setObject, a history.ObjectAppend, seenIn string) {
	for _, s := range c.sessions[a.Stream] {
		if s.lo < o.version && o.version <= s.hi && !c.delivered[setDelivery{s.op.Client, a.Stream, *o.op.In.Object}] {
			c.bad(o, s.op.ID, a.Stream, "watcher %d's session (op %d) on stream %d covered (%d, %d], but it never delivered object %s's append %s at version %d, which was %s",
				s.op.Client, s.op.ID, a.Stream, s.lo, s.hi, o.op.In.Object.Key, a.Range(), o.version, seenIn)
			return
		}
	}
}
