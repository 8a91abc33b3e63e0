package fsm

// Read-only queries. Each is O(log n) in the size of the collection it
// searches (plus the size of what it returns), so they are safe on the
// resolve path however large the state grows. Callers synchronise with
// Apply (raftstore holds a read lock), or read a Clone.

// Stream returns a stream's snapshot.
func (m *Machine) Stream(id uint64) (StreamInfo, bool) {
	s, ok := m.streams[id]
	if !ok {
		return StreamInfo{}, false
	}
	return s.info, true
}

// StreamByName returns the stream with the given name.
func (m *Machine) StreamByName(name string) (StreamInfo, bool) {
	id, ok := m.byName[name]
	if !ok {
		return StreamInfo{}, false
	}
	return m.Stream(id)
}

// Streams returns up to limit streams with ids above `after`, by id.
// It is O(number of streams); it serves listings, not the read path.
func (m *Machine) Streams(after uint64, limit int) []StreamInfo {
	var out []StreamInfo
	for _, id := range m.sortedStreamIDs() {
		if id > after && len(out) < limit {
			out = append(out, m.streams[id].info)
		}
	}
	return out
}

// Generations returns the live generations of (stream, view), newest first.
func (m *Machine) Generations(streamID uint64, view View) []GenerationInfo {
	s, ok := m.streams[streamID]
	if !ok || !ValidView(view) {
		return nil
	}
	gens := s.views[view].gens
	out := make([]GenerationInfo, 0, len(gens))
	for i := len(gens) - 1; i >= 0; i-- {
		out = append(out, gens[i].info(streamID, view))
	}
	return out
}

// LastGeneration returns the largest generation number ever used in (stream,
// view), retired ones included.
func (m *Machine) LastGeneration(streamID uint64, view View) (uint64, bool) {
	s, ok := m.streams[streamID]
	if !ok || !ValidView(view) {
		return 0, false
	}
	vi := s.views[view]
	return vi.last, vi.hasLast
}

func (g *generation) info(streamID uint64, view View) GenerationInfo {
	return GenerationInfo{
		Stream: streamID, View: view, Number: g.number, Status: g.status,
		Version: g.version, Coverage: g.coverage, Records: g.records.Len(),
	}
}

func (m *Machine) generation(streamID uint64, view View, number uint64) *generation {
	s, ok := m.streams[streamID]
	if !ok || !ValidView(view) {
		return nil
	}
	_, g := s.views[view].find(number)
	return g
}

// RecordFrom returns the first record of one generation that ends after
// offset: the record containing offset if there is one, else the next one.
func (m *Machine) RecordFrom(streamID uint64, view View, gen, offset uint64) (RecordInfo, bool) {
	g := m.generation(streamID, view, gen)
	if g == nil {
		return RecordInfo{}, false
	}
	key := IndexKey{Stream: streamID, View: view, Generation: gen}
	var found record
	ok := false
	g.records.DescendLessOrEqual(record{rng: Range{Start: offset}}, func(r record) bool {
		found, ok = r, r.rng.End > offset
		return false
	})
	if !ok {
		g.records.AscendGreaterOrEqual(record{rng: Range{Start: offset}}, func(r record) bool {
			found, ok = r, true
			return false
		})
	}
	if !ok {
		return RecordInfo{}, false
	}
	return found.info(key), true
}

// Records returns up to limit records of one generation that end after
// `from`, in offset order.
func (m *Machine) Records(streamID uint64, view View, gen, from uint64, limit int) []RecordInfo {
	var out []RecordInfo
	first, ok := m.RecordFrom(streamID, view, gen, from)
	if !ok || limit <= 0 {
		return nil
	}
	g := m.generation(streamID, view, gen)
	key := IndexKey{Stream: streamID, View: view, Generation: gen}
	g.records.AscendGreaterOrEqual(record{rng: Range{Start: first.Range.Start}}, func(r record) bool {
		out = append(out, r.info(key))
		return len(out) < limit
	})
	return out
}

func (r record) info(key IndexKey) RecordInfo {
	key.Start = r.rng.Start
	return RecordInfo{
		Key: key, Range: r.rng, Survivors: r.target.survivors, Object: r.target.ref, Bytes: r.bytes,
		Version: r.version, Checksum: r.checksum, Status: r.status, Data: r.data,
	}
}

// EvidenceAt returns the append evidence covering offset.
func (m *Machine) EvidenceAt(streamID, offset uint64) (EvidenceInfo, bool) {
	s, ok := m.streams[streamID]
	if !ok {
		return EvidenceInfo{}, false
	}
	var found evidence
	ok = false
	s.evidence.DescendLessOrEqual(evidence{rng: Range{Start: offset}}, func(e evidence) bool {
		found, ok = e, e.rng.Contains(offset)
		return false
	})
	if !ok {
		return EvidenceInfo{}, false
	}
	return found.info(streamID), true
}

// Evidence returns up to limit evidence entries of a stream that end after
// `from`, in offset order.
func (m *Machine) Evidence(streamID, from uint64, limit int) []EvidenceInfo {
	s, ok := m.streams[streamID]
	if !ok || limit <= 0 {
		return nil
	}
	start := from
	if e, ok := m.EvidenceAt(streamID, from); ok {
		start = e.Range.Start
	}
	var out []EvidenceInfo
	s.evidence.AscendGreaterOrEqual(evidence{rng: Range{Start: start}}, func(e evidence) bool {
		out = append(out, e.info(streamID))
		return len(out) < limit
	})
	return out
}

func (e evidence) info(streamID uint64) EvidenceInfo {
	return EvidenceInfo{
		Stream: streamID, Range: e.rng, Object: e.target.ref, Bytes: e.bytes,
		WriterEpoch: e.epoch, Version: e.version, Data: e.data,
	}
}

// Object returns the registry entry of exactly the version ref: the key
// and the identity of its bytes.
func (m *Machine) Object(ref ObjectRef) (ObjectInfo, bool) {
	o, ok := m.version(ref)
	if !ok {
		return ObjectInfo{}, false
	}
	return o.info(), true
}

// ObjectVersions returns every version of key the registry holds, by
// identity (below feature level 3, at most one).
func (m *Machine) ObjectVersions(key string) []ObjectInfo {
	var out []ObjectInfo
	m.versions(key, func(o object) bool {
		out = append(out, o.info())
		return true
	})
	return out
}

// Objects returns up to limit registry entries after `after`, in (key,
// identity) order; the zero ref starts at the first.
func (m *Machine) Objects(after ObjectRef, limit int) []ObjectInfo {
	var out []ObjectInfo
	if limit <= 0 {
		return nil
	}
	m.objects.AscendGreaterOrEqual(object{ref: after}, func(o object) bool {
		if o.ref == after {
			return true
		}
		out = append(out, o.info())
		return len(out) < limit
	})
	return out
}

// Pin returns one pin.
func (m *Machine) Pin(id uint64) (PinInfo, bool) {
	p, ok := m.pins.Get(pin{id: id})
	if !ok {
		return PinInfo{}, false
	}
	return p.info(), true
}

// Pins returns up to limit pins with ids above `after`.
func (m *Machine) Pins(after uint64, limit int) []PinInfo {
	var out []PinInfo
	if limit <= 0 {
		return nil
	}
	m.pins.AscendGreaterOrEqual(pin{id: after + 1}, func(p pin) bool {
		out = append(out, p.info())
		return len(out) < limit
	})
	return out
}

// Counts summarises the size of the state.
type Counts struct {
	Streams, Evidence, Generations, Records, Objects, Pins, Dedup int
}

// Counts returns the number of entries of each kind. O(number of streams
// and generations).
func (m *Machine) Counts() Counts {
	c := Counts{Streams: len(m.streams), Objects: m.objects.Len(), Pins: m.pins.Len(), Dedup: m.dedup.Len()}
	for _, s := range m.streams {
		c.Evidence += s.evidence.Len()
		for v := range s.views {
			for _, g := range s.views[v].gens {
				c.Generations++
				c.Records += g.records.Len()
			}
		}
	}
	return c
}

// Quarantined walks index records in key order (stream, view, generation,
// start) after the key `after` (from the first record when after is nil)
// and returns the quarantined ones, at most limit of them, having examined
// at most budget records. next is where to resume, nil once the walk has
// reached the end. It serves the repair job's re-verification and
// operators' listings, not the read path: it is O(streams) to start and
// O(budget) to walk.
func (m *Machine) Quarantined(after *IndexKey, limit, budget int) (out []RecordInfo, next *IndexKey) {
	var last IndexKey
	stop := false
	visit := func(key IndexKey, r record) bool {
		budget--
		last = key
		if r.status == RecordQuarantined {
			out = append(out, r.info(key))
		}
		stop = len(out) >= limit || budget <= 0
		return !stop
	}
	for _, id := range m.sortedStreamIDs() {
		if after != nil && id < after.Stream {
			continue
		}
		s := m.streams[id]
		for _, view := range []View{Committed, TopicCompacted} {
			for _, g := range s.views[view].gens {
				key := IndexKey{Stream: id, View: view, Generation: g.number}
				if after != nil && !keyAfterGeneration(key, *after) {
					continue
				}
				from := record{}
				if after != nil && key.Stream == after.Stream && key.View == after.View && key.Generation == after.Generation {
					from.rng.Start = after.Start + 1
				}
				g.records.AscendGreaterOrEqual(from, func(r record) bool {
					key.Start = r.rng.Start
					return visit(key, r)
				})
				if stop {
					return out, &last
				}
			}
		}
	}
	return out, nil
}

// keyAfterGeneration reports whether generation key (Start ignored) is at
// or after the generation of after, in key order.
func keyAfterGeneration(key, after IndexKey) bool {
	switch {
	case key.Stream != after.Stream:
		return key.Stream > after.Stream
	case key.View != after.View:
		return key.View > after.View
	}
	return key.Generation >= after.Generation
}
