package model

import (
	"fmt"
	"sort"

	"github.com/metad/metad/jepsen/history"
)

// CheckWatch is G14 for the watchers' sessions (ops of
// kind watch): each watcher's events on a stream are a gap-free,
// duplicate-free, in-order slice of the stream's committed history, and
// each resume starts exactly after the last event seen.
//
// The committed history is known only in part, from three sources that
// must agree where they meet: the acknowledged writes (an append, open,
// retire or complete publish that returned OK committed a change at the
// version it returned), the final read-back's append evidence (version,
// offsets and object of every append above the final trim), and the
// changes any watcher saw (every event is a committed change). A session
// covers the versions after its from_version (after its STARTED event for
// a fresh start) up to the last event it received; it must have delivered
// every known change in that span, in version order, none twice. Each
// event also carries the stream's state after it, so the events of one
// watcher chain: an append starts at the committed end the event before
// it left, any other change leaves the end alone. That catches a gap no
// other source knows of.
func CheckWatch(h history.History) []Anomaly {
	c := watchCheck{known: map[uint64]map[uint64]change{}}
	c.collect(h)
	for _, f := range c.follows(h) {
		c.follow(f)
	}
	c.againstEvidence(h)
	return c.out
}

// change is one committed change of a stream, as one source tells it.
type change struct {
	kind string
	rng  *history.Range
	obj  *history.Object
	view string
	gen  uint64
	op   int
	what string // the source, for anomaly details
}

func (a change) sameAs(b change) bool {
	switch {
	case a.kind != b.kind:
		return false
	case a.rng != nil && b.rng != nil && *a.rng != *b.rng:
		return false
	case a.obj != nil && b.obj != nil && *a.obj != *b.obj:
		return false
	case a.view != "" && b.view != "" && (a.view != b.view || a.gen != b.gen):
		return false
	}
	return true
}

func (a change) String() string {
	s := a.kind
	if a.rng != nil {
		s += " " + a.rng.String()
	}
	if a.view != "" {
		s += fmt.Sprintf(" %s g%d", a.view, a.gen)
	}
	return s + " (" + a.what + ")"
}

type watchCheck struct {
	known map[uint64]map[uint64]change // stream -> version -> change
	out   []Anomaly
}

func (c *watchCheck) bad(op int, stream uint64, format string, args ...any) {
	c.out = append(c.out, Anomaly{Check: "G14", Op: op, Stream: stream, Detail: fmt.Sprintf(format, args...)})
}

// add records a committed change; two sources naming different changes at
// one version is an anomaly (a lost write shows so: its version was reused).
func (c *watchCheck) add(stream, version uint64, ch change) {
	if version == 0 {
		return
	}
	m := c.known[stream]
	if m == nil {
		m = map[uint64]change{}
		c.known[stream] = m
	}
	if old, ok := m[version]; ok {
		if !old.sameAs(ch) {
			c.bad(ch.op, stream, "version %d: %s, but %s", version, old, ch)
		}
		return
	}
	m[version] = ch
}

// collect gathers the known committed changes of every stream.
func (c *watchCheck) collect(h history.History) {
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Out == nil || op.Stream == 0 {
			continue
		}
		if op.Kind == history.KindWatch { // whatever ended the session, what it delivered was committed
			for _, e := range op.Out.Events {
				if e.Kind != history.EventStarted {
					c.add(op.Stream, e.Version, eventChange(op, e))
				}
			}
			continue
		}
		if op.Status != history.OK {
			continue
		}
		what := fmt.Sprintf("acknowledged %s op %d", op.Kind, op.ID)
		switch op.Kind {
		case history.KindAppend:
			r := history.Range{Start: op.In.ExpectedStart, End: op.In.End}
			c.add(op.Stream, op.Out.Version, change{kind: history.EventAppended, rng: &r, obj: op.In.Object, op: op.ID, what: what})
		case history.KindOpen:
			c.add(op.Stream, op.Out.Version, change{kind: history.EventOpened, op: op.ID, what: what})
		case history.KindRetire:
			c.add(op.Stream, op.Out.Version, change{kind: history.EventRetired, view: op.In.View, gen: op.In.Generation, op: op.ID, what: what})
		case history.KindPublish:
			if op.In.Complete {
				c.add(op.Stream, op.Out.Version, change{kind: history.EventPublished, view: op.In.View, gen: op.In.Generation, op: op.ID, what: what})
			}
		case history.KindEvidence:
			for _, e := range op.Out.Evidence {
				r, o := e.Range, e.Object
				c.add(op.Stream, e.Version, change{kind: history.EventAppended, rng: &r, obj: &o, op: op.ID, what: "final evidence"})
			}
		}
	}
}

func eventChange(op *history.Op, e history.Event) change {
	return change{kind: e.Kind, rng: e.Range, obj: e.Object, view: e.View, gen: e.Generation, op: op.ID,
		what: fmt.Sprintf("watcher %d saw it in op %d", op.Client, op.ID)}
}

// follows groups watch sessions by (watcher, stream), each in call order.
func (c *watchCheck) follows(h history.History) [][]*history.Op {
	type key struct {
		client int
		stream uint64
	}
	by := map[key][]*history.Op{}
	var keys []key
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Kind != history.KindWatch {
			continue
		}
		k := key{op.Client, op.Stream}
		if by[k] == nil {
			keys = append(keys, k)
		}
		by[k] = append(by[k], op)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].client < keys[j].client || keys[i].client == keys[j].client && keys[i].stream < keys[j].stream
	})
	out := make([][]*history.Op, 0, len(keys))
	for _, k := range keys {
		s := by[k]
		sort.SliceStable(s, func(i, j int) bool { return s[i].Call < s[j].Call })
		out = append(out, s)
	}
	return out
}

// followState is one watcher's view of its stream across sessions.
type followState struct {
	last       uint64 // version of the last event received (the resume point)
	lastChange uint64 // version of the last change (not STARTED) received
	end        uint64 // committed end after the last event
	endKnown   bool
	endAt      uint64 // the version end was seen at
	compacted  bool   // the previous session ended with WATCH_COMPACTED
}

// follow checks one watcher's sessions on one stream.
func (c *watchCheck) follow(sessions []*history.Op) {
	var st followState
	for i, op := range sessions {
		c.resume(op, i == 0, &st)
		if op.In.From == 0 {
			st.last, st.lastChange, st.endKnown = 0, 0, false // a fresh start: a new slice
		}
		lo := op.In.From
		if op.Out == nil || len(op.Out.Events) == 0 {
			st.compacted = op.Reason == "WATCH_COMPACTED"
			continue
		}
		for _, e := range op.Out.Events {
			if e.Kind == history.EventStarted {
				if op.In.From == 0 && lo == 0 {
					lo = e.Version // a fresh start covers what follows its STARTED
				}
			} else {
				c.order(op, e, &st)
			}
			c.chain(op, e, &st)
			st.last = e.Version
		}
		c.gaps(op, lo, st.last)
		st.compacted = op.Reason == "WATCH_COMPACTED"
	}
}

// resume: a session resumes after the version of the last event its
// watcher received; only the first session, or one after WATCH_COMPACTED,
// starts afresh (from 0).
func (c *watchCheck) resume(op *history.Op, first bool, st *followState) {
	switch {
	case op.In.From == st.last:
	case op.In.From == 0 && (first || st.compacted):
	default:
		c.bad(op.ID, op.Stream, "watcher %d resumed after version %d, but the last event it received was version %d",
			op.Client, op.In.From, st.last)
	}
}

// order: changes come in increasing version, none twice, and a resumed
// session delivers nothing at or before its from_version.
func (c *watchCheck) order(op *history.Op, e history.Event, st *followState) {
	switch {
	case op.In.From > 0 && e.Version <= op.In.From:
		c.bad(op.ID, op.Stream, "watcher %d resumed after version %d and was sent version %d (%s) again: the resume did not start after the last event seen",
			op.Client, op.In.From, e.Version, e.Kind)
	case e.Version == st.lastChange:
		c.bad(op.ID, op.Stream, "watcher %d was sent version %d (%s) twice", op.Client, e.Version, e.Kind)
	case e.Version < st.lastChange:
		c.bad(op.ID, op.Stream, "watcher %d was sent version %d (%s) after version %d: out of order", op.Client, e.Version, e.Kind, st.lastChange)
	}
	st.lastChange = max(st.lastChange, e.Version)
}

// chain: every event carries the stream's committed end after it; an
// append starts where the previous event left the end, other events keep it.
func (c *watchCheck) chain(op *history.Op, e history.Event, st *followState) {
	if e.Kind == history.EventDeleted {
		return
	}
	if st.endKnown && e.Kind != history.EventStarted {
		switch {
		case e.Kind == history.EventAppended && e.Range != nil && e.Range.Start != st.end:
			c.bad(op.ID, op.Stream, "watcher %d: append %s at version %d does not start at the committed end %d of version %d: a gap",
				op.Client, e.Range, e.Version, st.end, st.endAt)
		case e.Kind != history.EventAppended && e.End != st.end:
			c.bad(op.ID, op.Stream, "watcher %d: %s at version %d shows committed end %d, version %d showed %d: a change is missing",
				op.Client, e.Kind, e.Version, e.End, st.endAt, st.end)
		}
	}
	st.end, st.endKnown, st.endAt = e.End, true, e.Version
}

// gaps: the session delivered every known change in (lo, hi].
func (c *watchCheck) gaps(op *history.Op, lo, hi uint64) {
	if hi <= lo {
		return
	}
	got := map[uint64]bool{}
	for _, e := range op.Out.Events {
		got[e.Version] = true
	}
	var missed []uint64
	for v := range c.known[op.Stream] {
		if v > lo && v <= hi && !got[v] {
			missed = append(missed, v)
		}
	}
	sort.Slice(missed, func(i, j int) bool { return missed[i] < missed[j] })
	for i, v := range missed {
		if i == 3 {
			c.bad(op.ID, op.Stream, "watcher %d: %d more changes missed in (%d, %d]", op.Client, len(missed)-3, lo, hi)
			break
		}
		c.bad(op.ID, op.Stream, "watcher %d missed version %d (%s) in the span (%d, %d] its session covered: a gap",
			op.Client, v, c.known[op.Stream][v], lo, hi)
	}
}

// watchFinal is the read-back of one stream, as CheckWatch uses it.
type watchFinal struct {
	evidence map[uint64]bool // the versions of the final evidence
	trim     uint64          // the largest trim the read-back saw
	end      uint64          // the final describe's committed end
	haveEv   bool
	haveDesc bool
}

func watchFinals(h history.History) map[uint64]*watchFinal {
	finals := map[uint64]*watchFinal{}
	for i := range h.Ops {
		op := &h.Ops[i]
		if !op.Final || op.Status != history.OK || op.Out == nil {
			continue
		}
		f := finals[op.Stream]
		if f == nil {
			f = &watchFinal{evidence: map[uint64]bool{}}
			finals[op.Stream] = f
		}
		switch op.Kind {
		case history.KindEvidence:
			f.haveEv = true
			for _, e := range op.Out.Evidence {
				f.evidence[e.Version] = true
			}
		case history.KindDescribe:
			f.haveDesc, f.trim, f.end = true, max(f.trim, op.Out.Trim), op.Out.CommittedEnd
		case history.KindResolve:
			f.trim = max(f.trim, op.Out.Trim)
		}
	}
	return finals
}

// againstEvidence: an append a watcher saw whose offsets lie above the
// final trim must be in the final evidence, at its version; and no watcher
// saw a committed end beyond the final one.
func (c *watchCheck) againstEvidence(h history.History) {
	finals := watchFinals(h)
	for i := range h.Ops {
		op := &h.Ops[i]
		f := finals[op.Stream]
		if op.Kind != history.KindWatch || f == nil || op.Out == nil {
			continue
		}
		for _, e := range op.Out.Events {
			if f.haveDesc && e.End > f.end {
				c.bad(op.ID, op.Stream, "watcher %d saw committed end %d at version %d; the final read-back shows %d",
					op.Client, e.End, e.Version, f.end)
			}
			if f.haveEv && e.Kind == history.EventAppended && e.Range != nil && e.Range.Start >= f.trim && !f.evidence[e.Version] {
				c.bad(op.ID, op.Stream, "watcher %d saw append %s at version %d, which the final evidence (trim %d) does not hold",
					op.Client, e.Range, e.Version, f.trim)
			}
		}
	}
}
