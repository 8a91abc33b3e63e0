package fsm

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/metad/metad/fsm/kv"
	"github.com/metad/metad/statestore"
)

// testSets returns an empty orderedSet of uint64 in each implementation:
// memory, kvSet on kv.Mem and kvSet on Pebble.
func testSets(t *testing.T) map[string]orderedSet[uint64] {
	codec := setCodec[uint64]{
		order: func(x uint64) uint64 { return x },
		enc:   func(b []byte, x uint64) []byte { return binary.BigEndian.AppendUint64(b, x) },
		dec:   func(v []byte) uint64 { return binary.BigEndian.Uint64(v) },
	}
	st, err := statestore.Open(t.TempDir(), statestore.Config{CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	mem := kv.NewMem()
	return map[string]orderedSet[uint64]{
		"memory": newMemSet(func(a, b uint64) bool { return a < b }),
		"kv.Mem": &kvSet[uint64]{r: mem, w: mem, prefix: []byte{0x42, 1}, codec: codec},
		"pebble": &kvSet[uint64]{r: st, w: st, prefix: []byte{0x42, 1}, codec: codec},
	}
}

func items(s orderedSet[uint64]) []uint64 {
	var out []uint64
	s.Ascend(func(x uint64) bool { out = append(out, x); return true })
	return out
}

// TestDeleteFrontWhile checks the trim's deletion on every implementation:
// it stops at the first item refused, and a set whose front was deleted
// still finds what is later inserted below it (kvSet's floor is lowered),
// walking up and down.
func TestDeleteFrontWhile(t *testing.T) {
	for name, s := range testSets(t) {
		t.Run(name, func(t *testing.T) {
			for x := uint64(10); x <= 100; x += 10 {
				s.ReplaceOrInsert(x)
			}
			var dropped []uint64
			s.deleteFrontWhile(func(x uint64) bool {
				if x > 40 {
					return false
				}
				dropped = append(dropped, x)
				return true
			})
			if want := []uint64{10, 20, 30, 40}; !slices.Equal(dropped, want) {
				t.Fatalf("dropped %v, want %v", dropped, want)
			}
			if got, want := items(s), []uint64{50, 60, 70, 80, 90, 100}; !slices.Equal(got, want) || s.Len() != len(want) {
				t.Fatalf("left %v (Len %d), want %v", got, s.Len(), want)
			}
			if m, ok := s.Min(); !ok || m != 50 {
				t.Fatalf("Min = %d, %v; want 50", m, ok)
			}
			var below []uint64
			s.DescendLessOrEqual(45, func(x uint64) bool { below = append(below, x); return true })
			if len(below) != 0 {
				t.Fatalf("DescendLessOrEqual(45) = %v, want nothing", below)
			}
			s.deleteFrontWhile(func(uint64) bool { return false })
			if s.Len() != 6 {
				t.Fatalf("a refused first item deleted something: Len %d", s.Len())
			}

			s.ReplaceOrInsert(5)
			s.insertSorted([]uint64{6, 7})
			if got, want := items(s), []uint64{5, 6, 7, 50, 60, 70, 80, 90, 100}; !slices.Equal(got, want) {
				t.Fatalf("after inserts below the deleted front: %v, want %v", got, want)
			}
			var down []uint64
			s.DescendLessOrEqual(60, func(x uint64) bool { down = append(down, x); return true })
			if want := []uint64{60, 50, 7, 6, 5}; !slices.Equal(down, want) {
				t.Fatalf("DescendLessOrEqual(60) = %v, want %v", down, want)
			}
			s.deleteFrontWhile(func(uint64) bool { return true })
			if got := items(s); len(got) != 0 || s.Len() != 0 {
				t.Fatalf("after deleting everything: %v (Len %d)", got, s.Len())
			}
			s.ReplaceOrInsert(1)
			if m, ok := s.Min(); !ok || m != 1 {
				t.Fatalf("Min after an insert below everything deleted = %d, %v; want 1", m, ok)
			}
		})
	}
}
