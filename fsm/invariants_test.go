package fsm

import (
	"strings"
	"testing"
)

// TestCheckInvariantsDetects breaks each invariant of a valid state on
// purpose and checks that CheckInvariants says so: an invariant check that
// cannot fail proves nothing.
func TestCheckInvariantsDetects(t *testing.T) {
	g0rec := func(m *Machine) record { r, _ := m.streams[1].views[Committed].gens[0].records.Min(); return r }
	putG0 := func(m *Machine, r record) { m.streams[1].views[Committed].gens[0].records.ReplaceOrInsert(r) }
	tc3 := func(m *Machine) *generation { _, g := m.streams[1].views[TopicCompacted].find(3); return g }
	obj := func(m *Machine, key string, f func(*object)) {
		o, _ := m.firstVersion(key)
		f(&o)
		m.objects.ReplaceOrInsert(o)
	}
	for _, tc := range []struct {
		name, want string
		corrupt    func(m *Machine)
	}{
		{"extra name", "byName has", func(m *Machine) { m.byName["ghost"] = 99 }},
		{"name points elsewhere", "id or name index inconsistent", func(m *Machine) { m.byName["one"] = 2 }},
		{"stream id above next", "id or name index inconsistent", func(m *Machine) { m.nextStreamID = 1 }},
		{"pin id above next", "not below next pin id", func(m *Machine) { m.nextPinID = 1 }},
		{"pin not in expiry index", "missing from the expiry index", func(m *Machine) {
			d, _ := m.pinExpiry.Min()
			m.pinExpiry.Delete(d)
		}},
		{"reference count", `object "a" (version "A") counts`, func(m *Machine) { obj(m, "a", func(o *object) { o.refs++ }) }},
		{"referenced object deleting", "but referenced", func(m *Machine) { obj(m, "a", func(o *object) { o.status = ObjectDeleting }) }},
		{"pin count", `counts 2 pins`, func(m *Machine) { obj(m, "a", func(o *object) { o.pins++ }) }},
		{"object target", `shared target does not name it`, func(m *Machine) {
			obj(m, "a", func(o *object) { o.target = &target{ref: ObjectRef{Key: "a", Identity: "other"}} })
		}},
		{"referenced object unregistered", "reference to unregistered object", func(m *Machine) {
			o, _ := m.firstVersion("a")
			m.objects.Delete(o)
		}},
		{"pinned object unregistered", "pin on unregistered object", func(m *Machine) {
			o, _ := m.firstVersion("c")
			m.objects.Delete(o)
		}},
		{"dedup age index", "dedup table has", func(m *Machine) { m.dedupAge.DeleteMin() }},
		{"trim beyond end", "beyond committed end", func(m *Machine) { m.streams[1].info.Trim = 41 }},
		{"evidence gap", "does not follow", func(m *Machine) {
			e, _ := m.streams[1].evidence.Min()
			m.streams[1].evidence.Delete(e)
			e.rng.End--
			m.streams[1].evidence.ReplaceOrInsert(e)
		}},
		{"evidence short of end", "evidence ends at", func(m *Machine) { m.streams[1].info.CommittedEnd++ }},
		{"no evidence", "no evidence for committed offsets", func(m *Machine) { m.streams[2].evidence.Clear() }},
		{"evidence wholly trimmed", "wholly trimmed", func(m *Machine) { m.streams[1].info.Trim = 10 }},
		{"no generation 0", "COMMITTED generation 0 missing", func(m *Machine) {
			vi := &m.streams[1].views[Committed]
			vi.gens = vi.gens[1:]
		}},
		{"generations out of order", "generation 3 after 4", func(m *Machine) {
			vi := &m.streams[1].views[TopicCompacted]
			vi.gens[0], vi.gens[1] = vi.gens[1], vi.gens[0]
		}},
		{"generation above last", "above last", func(m *Machine) { m.streams[1].views[TopicCompacted].last = 3 }},
		{"generation retired but live", "is GENERATION_STATUS_RETIRED", func(m *Machine) { tc3(m).status = GenerationRetired }},
		{"records overlap", "overlaps", func(m *Machine) {
			r := g0rec(m)
			r.rng = Range{15, 25}
			r.checksum = RecordChecksum(IndexKey{1, Committed, 0, 15}, r.rng, nil, r.target.ref, r.bytes)
			putG0(m, r)
		}},
		{"record past end", "outside (trim", func(m *Machine) { m.streams[1].info.CommittedEnd = 30 }},
		{"record outside coverage", "outside coverage", func(m *Machine) { tc3(m).coverage = Range{0, 10} }},
		{"survivors in COMMITTED", "survivors in a COMMITTED record", func(m *Machine) {
			r := g0rec(m)
			r.target = r.target.withSurvivors([]Range{{r.rng.Start, r.rng.End}})
			putG0(m, r)
		}},
		{"checksum", "checksum does not verify", func(m *Machine) {
			r := g0rec(m)
			r.bytes.Length++
			putG0(m, r)
		}},
		{"record version", "version 0 outside", func(m *Machine) {
			r := g0rec(m)
			r.version = 0
			putG0(m, r)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := richMachine(t)
			if err := m.CheckInvariants(); err != nil {
				t.Fatalf("the fixture is broken already: %v", err)
			}
			tc.corrupt(m)
			err := m.CheckInvariants()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckInvariants() = %v, want an error containing %q", err, tc.want)
			}
			// With checks on, the next Apply refuses to go on.
			m.checkInvariants = true
			mustPanic(t, "invariant broken", func() { m.Apply(m.AppliedIndex()+1, cmdCreate("x")) })
		})
	}
}

func TestCheckMonotone(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(s *stream)
	}{
		{"committed end", func(s *stream) { s.info.CommittedEnd-- }},
		{"trim", func(s *stream) { s.info.Trim-- }},
		{"epoch", func(s *stream) { s.info.WriterEpoch-- }},
		{"version", func(s *stream) { s.info.Version-- }},
		{"last committed generation", func(s *stream) { s.views[Committed].last-- }},
		{"last compacted generation", func(s *stream) { s.views[TopicCompacted].last-- }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := richMachine(t)
			before := m.watermarks()
			if err := m.checkMonotone(before, m.clock); err != nil {
				t.Fatal(err)
			}
			tc.change(m.streams[1])
			if err := m.checkMonotone(before, m.clock); err == nil || !strings.Contains(err.Error(), "went backwards") {
				t.Fatalf("checkMonotone() = %v", err)
			}
		})
	}
	m := richMachine(t)
	if err := m.checkMonotone(m.watermarks(), m.clock+1); err == nil || !strings.Contains(err.Error(), "clock went back") {
		t.Fatalf("clock: %v", err)
	}
	// A deleted stream is not a regression.
	before := m.watermarks()
	delete(m.streams, 1)
	if err := m.checkMonotone(before, m.clock); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreRefusesBrokenInvariants writes a snapshot of a broken state
// (with valid checksums and order) and expects Restore to refuse it.
func TestRestoreRefusesBrokenInvariants(t *testing.T) {
	m := richMachine(t)
	obj := func(key string, f func(*object)) {
		o, _ := m.firstVersion(key)
		f(&o)
		m.objects.ReplaceOrInsert(o)
	}
	obj("a", func(o *object) { o.refs++ })
	snap := snapshotBytes(t, m)
	wantCorrupt(t, "reference count", snap)
}
