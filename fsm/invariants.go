package fsm

import (
	"errors"
	"fmt"
)

// CheckInvariants verifies every invariant of the state and returns all that
// are broken, joined. It is O(state): tests run it after every Apply (see
// WithInvariantChecks) and Restore runs it once before returning a machine.
func (m *Machine) CheckInvariants() error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }

	// refs and pins are counted per entry that counts them (counted): by
	// version from level 3 on, by key below it.
	refs := make(map[ObjectRef]uint64)
	for id, s := range m.streams {
		m.checkStream(id, s, refs, fail)
	}
	if len(m.byName) != len(m.streams) {
		fail("byName has %d names for %d streams", len(m.byName), len(m.streams))
	}
	pins := make(map[ObjectRef]uint64)
	m.pins.Ascend(func(p pin) bool {
		pins[m.countedBy(p.object)]++
		if p.id >= m.nextPinID {
			fail("pin %d not below next pin id %d", p.id, m.nextPinID)
		}
		if _, ok := m.pinExpiry.Get(pinDeadline{at: p.pruneAt(), id: p.id}); !ok {
			fail("pin %d missing from the expiry index", p.id)
		}
		return true
	})
	if m.pinExpiry.Len() != m.pins.Len() {
		fail("expiry index has %d entries for %d pins", m.pinExpiry.Len(), m.pins.Len())
	}
	m.checkObjects(refs, pins, fail)
	if m.dedup.Len() != m.dedupAge.Len() || m.dedup.Len() > MaxDedupEntries {
		fail("dedup table has %d entries and %d ages (bound %d)", m.dedup.Len(), m.dedupAge.Len(), MaxDedupEntries)
	}
	if err := m.checkTombstones(); err != nil {
		fail("%v", err)
	}
	if err := m.checkClusterID(); err != nil {
		fail("%v", err)
	}
	if m.kv != nil && m.kv.store != nil {
		if err := m.checkPersisted(); err != nil {
			fail("%v", err)
		}
	}
	return errors.Join(errs...)
}

// sampledCheck reports whether the apply at index checks the invariants in
// a build that has them built in (builtInChecks). After each check the
// next one waits for as many applies as the check visited entries, over
// 32 (nextSampledCheck), so the O(state) check costs each apply O(1)
// amortised and a long -race test or harness run stays linear in its
// commands, while a small state is checked at every apply.
func (m *Machine) sampledCheck(index uint64) bool { return index >= m.nextCheck }

// nextSampledCheck schedules the next sampled check after the one at index.
func (m *Machine) nextSampledCheck(index uint64) {
	work := m.checkWork()
	if m.kv == nil {
		// A walk of memory: 32 entries cost about one apply.
		work /= 32
	}
	m.nextCheck = index + 1 + uint64(work)
}

// checkWork is how many entries a check visits.
func (m *Machine) checkWork() int {
	work := len(m.streams) + m.objects.Len() + m.pins.Len() + m.dedup.Len()
	for _, s := range m.streams {
		work += s.evidence.Len()
		for _, vi := range s.views {
			for _, g := range vi.gens {
				work += g.records.Len()
			}
		}
	}
	return work
}

// countedBy is what the invariants count a reference or pin naming ref
// under: the version from level 3 on, the key alone below it.
func (m *Machine) countedBy(ref ObjectRef) ObjectRef {
	if m.Level() < versionsLevel {
		return ObjectRef{Key: ref.Key}
	}
	return ref
}

func (m *Machine) checkStream(id uint64, s *stream, refs map[ObjectRef]uint64, fail func(string, ...any)) {
	in := s.info
	if in.ID != id || m.byName[in.Name] != id || id == 0 || id >= m.nextStreamID {
		fail("stream %d: id or name index inconsistent (%d, %q)", id, in.ID, in.Name)
	}
	if in.Trim > in.CommittedEnd {
		fail("stream %d: trim %d beyond committed end %d", id, in.Trim, in.CommittedEnd)
	}
	var prev *evidence
	s.evidence.Ascend(func(e evidence) bool {
		refs[m.countedBy(e.target.ref)]++
		if e.rng.Start >= e.rng.End || e.rng.End <= in.Trim {
			fail("stream %d: evidence %v empty or wholly trimmed (trim %d)", id, e.rng, in.Trim)
		}
		if prev != nil && prev.rng.End != e.rng.Start {
			fail("stream %d: evidence %v does not follow %v", id, e.rng, prev.rng)
		}
		prev = &e
		return true
	})
	if prev != nil && prev.rng.End != in.CommittedEnd {
		fail("stream %d: evidence ends at %d, committed end is %d", id, prev.rng.End, in.CommittedEnd)
	}
	if prev == nil && in.CommittedEnd > in.Trim {
		fail("stream %d: no evidence for committed offsets [%d,%d)", id, in.Trim, in.CommittedEnd)
	}
	for _, view := range []View{Committed, TopicCompacted} {
		m.checkView(s, view, refs, fail)
	}
}

func (m *Machine) checkView(s *stream, view View, refs map[ObjectRef]uint64, fail func(string, ...any)) {
	id, vi := s.info.ID, s.views[view]
	if view == Committed && (len(vi.gens) == 0 || vi.gens[0].number != 0 || vi.gens[0].status != GenerationPublished || !vi.hasLast) {
		fail("stream %d: COMMITTED generation 0 missing or not published", id)
	}
	for i, g := range vi.gens {
		if i > 0 && g.number <= vi.gens[i-1].number {
			fail("stream %d %s: generation %d after %d", id, view, g.number, vi.gens[i-1].number)
		}
		if !vi.hasLast || g.number > vi.last {
			fail("stream %d %s: live generation %d above last %d", id, view, g.number, vi.last)
		}
		if g.status != GenerationBuilding && g.status != GenerationPublished {
			fail("stream %d %s: live generation %d is %s", id, view, g.number, g.status)
		}
		// prev is a copy, not a pointer to r: that would move every r to
		// the heap, one allocation per record of the state.
		var prev record
		first := true
		g.records.Ascend(func(r record) bool {
			refs[m.countedBy(r.target.ref)]++
			key := IndexKey{Stream: id, View: view, Generation: g.number, Start: r.rng.Start}
			if first {
				m.checkRecord(s, g, key, r, nil, fail)
			} else {
				m.checkRecord(s, g, key, r, &prev, fail)
			}
			prev, first = r, false
			return true
		})
	}
}

func (m *Machine) checkRecord(s *stream, g *generation, key IndexKey, r record, prev *record, fail func(string, ...any)) {
	if prev != nil && prev.rng.End > r.rng.Start {
		fail("%v: overlaps %v", key, prev.rng)
	}
	if r.rng.Start >= r.rng.End || r.rng.End > s.info.CommittedEnd || r.rng.End <= s.info.Trim {
		fail("%v: range %v outside (trim %d, committed end %d]", key, r.rng, s.info.Trim, s.info.CommittedEnd)
	}
	if key.Generation > 0 && (r.rng.Start < g.coverage.Start || r.rng.End > g.coverage.End) {
		fail("%v: range %v outside coverage %v", key, r.rng, g.coverage)
	}
	if (key.View == Committed) != (len(r.target.survivors) == 0) {
		fail("%v: %d survivors in a %s record", key, len(r.target.survivors), key.View)
	}
	if r.checksum != RecordChecksumData(key, r.rng, r.target.survivors, r.target.ref, r.bytes, r.data) {
		fail("%v: checksum does not verify", key)
	}
	if r.version == 0 || r.version > m.applied {
		fail("%v: version %d outside (0, %d]", key, r.version, m.applied)
	}
}

// watermarks are the values that may never decrease, per stream.
type watermarks struct {
	committedEnd, trim, epoch, version, lastCommitted, lastCompacted uint64
}

func (m *Machine) watermarks() map[uint64]watermarks {
	w := make(map[uint64]watermarks, len(m.streams))
	for id, s := range m.streams {
		w[id] = watermarks{
			committedEnd: s.info.CommittedEnd, trim: s.info.Trim, epoch: s.info.WriterEpoch,
			version: s.info.Version, lastCommitted: s.views[Committed].last, lastCompacted: s.views[TopicCompacted].last,
		}
	}
	return w
}

// checkMonotone compares watermarks taken before an Apply with the state
// after it: for every stream that still exists, nothing went backwards.
func (m *Machine) checkMonotone(before map[uint64]watermarks, clockBefore int64) error {
	if m.clock < clockBefore {
		return fmt.Errorf("clock went back from %d to %d", clockBefore, m.clock)
	}
	after := m.watermarks()
	for id, b := range before {
		a, ok := after[id]
		if !ok {
			continue
		}
		if a.committedEnd < b.committedEnd || a.trim < b.trim || a.epoch < b.epoch || a.version < b.version ||
			a.lastCommitted < b.lastCommitted || a.lastCompacted < b.lastCompacted {
			return fmt.Errorf("stream %d went backwards: %+v then %+v", id, b, a)
		}
	}
	return nil
}

// checkObjects compares every registry entry's counts with those the state
// gives (refs and pins, by countedBy), and reports what no entry counts.
func (m *Machine) checkObjects(refs, pins map[ObjectRef]uint64, fail func(string, ...any)) {
	var prev *object
	m.objects.Ascend(func(o object) bool {
		if o.target == nil || o.target.ref != o.ref || len(o.target.survivors) > 0 {
			fail("object %v: shared target does not name it", o.ref)
		}
		if prev != nil && prev.ref.Key == o.ref.Key && m.Level() < versionsLevel {
			fail("object %q has versions %q and %q below level %d", o.ref.Key, prev.ref.Identity, o.ref.Identity, versionsLevel)
		}
		prev = &o
		by := m.countedBy(o.ref)
		if o.refs != refs[by] {
			fail("object %q (version %q) counts %d references, the state has %d", o.ref.Key, o.ref.Identity, o.refs, refs[by])
		}
		if o.refs > 0 && o.status != ObjectLive {
			fail("object %q (version %q) is %s but referenced %d times", o.ref.Key, o.ref.Identity, o.status, o.refs)
		}
		if o.pins != pins[by] {
			fail("object %q (version %q) counts %d pins, the state has %d", o.ref.Key, o.ref.Identity, o.pins, pins[by])
		}
		delete(refs, by)
		delete(pins, by)
		return true
	})
	for ref := range refs {
		fail("reference to unregistered object %v", ref)
	}
	for ref := range pins {
		fail("pin on unregistered object %v", ref)
	}
}
