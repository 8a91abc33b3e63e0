package fsm

import (
	"bytes"
	"encoding/binary"

	"github.com/metad/metad/fsm/kv"
)

// kvReader is what a kvSet reads through: the store itself (the live
// machine, which must see its own uncommitted writes) or a view (a clone).
type kvReader = kv.Reader

// kvSet is an orderedSet kept in the state store: one key per item,
// prefix + the item's order key (its range start, big-endian, so byte
// order is start order), and the item's snapshot encoding as the value.
// Nothing of it is held in memory but the count.
//
// Invariant: n is the number of keys under prefix. The count is kept in
// the owner's row (a stream's, kvstate.go) so that Len costs nothing.
//
// Invariant: no key of the set is below floor (nil: no floor). A trim's
// range deletion (deleteFrontWhile) leaves its deleted keys in the store's
// memtable under the deletion until a flush drops them, and a walk from
// the set's front would step over every one of them; walks start at floor
// instead. An insert below floor lowers it back to nothing.
type kvSet[T any] struct {
	r      kvReader
	w      kv.Store // nil on a clone: read only
	prefix []byte
	n      int
	codec  setCodec[T]
	floor  []byte
}

// setCodec is how a kvSet turns its items into keys and values and back.
type setCodec[T any] struct {
	order func(T) uint64
	enc   func(b []byte, x T) []byte
	// dec decodes a value; the bytes are valid only during the call.
	dec func(v []byte) T
}

func (s *kvSet[T]) key(x T) []byte { return s.keyAt(s.codec.order(x)) }

func (s *kvSet[T]) keyAt(order uint64) []byte {
	k := make([]byte, len(s.prefix)+8)
	copy(k, s.prefix)
	binary.BigEndian.PutUint64(k[len(s.prefix):], order)
	return k
}

// end is the first key after every key of the set.
func (s *kvSet[T]) end() []byte { return prefixEnd(s.prefix) }

func (s *kvSet[T]) writer() kv.Store {
	if s.w == nil {
		panic("fsm: write to a clone's state")
	}
	return s.w
}

func (s *kvSet[T]) Get(key T) (T, bool) {
	v, ok := s.r.Get(s.key(key))
	if !ok {
		var zero T
		return zero, false
	}
	return s.codec.dec(v), true
}

func (s *kvSet[T]) ReplaceOrInsert(x T) {
	k := s.key(x)
	s.lowerFloor(k)
	if _, ok := s.r.Get(k); !ok {
		s.n++
	}
	s.writer().Set(k, s.codec.enc(nil, x))
}

func (s *kvSet[T]) insertSorted(xs []T) {
	w := s.writer()
	if len(xs) > 0 {
		s.lowerFloor(s.key(xs[0]))
	}
	var buf []byte
	for _, x := range xs {
		buf = s.codec.enc(buf[:0], x)
		w.Set(s.key(x), buf)
	}
	s.n += len(xs)
}

func (s *kvSet[T]) Delete(key T) {
	k := s.key(key)
	if _, ok := s.r.Get(k); ok {
		s.n--
		s.writer().Delete(k)
	}
}

func (s *kvSet[T]) Min() (T, bool) {
	var out T
	found := false
	s.walk(nil, nil, false, func(x T) bool { out, found = x, true; return false })
	return out, found
}

func (s *kvSet[T]) DeleteMin() {
	if x, ok := s.Min(); ok {
		s.Delete(x)
	}
}

func (s *kvSet[T]) deleteFrontWhile(drop func(T) bool) {
	var last T
	n := 0
	s.walk(nil, nil, false, func(x T) bool {
		if !drop(x) {
			return false
		}
		last = x
		n++
		return true
	})
	if n == 0 {
		return
	}
	// The key after last's and before any other: keys have one length.
	s.floor = append(s.key(last), 0)
	s.writer().DeleteRange(s.prefix, s.floor)
	s.n -= n
}

// lowerFloor keeps floor at or below k, a key about to be written.
func (s *kvSet[T]) lowerFloor(k []byte) {
	if s.floor != nil && bytes.Compare(k, s.floor) < 0 {
		s.floor = nil
	}
}

func (s *kvSet[T]) Ascend(fn func(T) bool) { s.walk(nil, nil, false, fn) }

func (s *kvSet[T]) AscendGreaterOrEqual(p T, fn func(T) bool) {
	s.walk(s.key(p), nil, false, fn)
}

func (s *kvSet[T]) AscendRange(lo, hi T, fn func(T) bool) {
	if s.codec.order(hi) <= s.codec.order(lo) {
		return
	}
	s.walk(s.key(lo), s.key(hi), false, fn)
}

func (s *kvSet[T]) DescendLessOrEqual(p T, fn func(T) bool) {
	// The key after p's and before any other: keys have one length.
	s.walk(nil, append(s.key(p), 0), true, fn)
}

// walk visits the items with keys in [lo, hi) (nil: the set's bounds) in
// key order, or in reverse order when down, until fn returns false.
func (s *kvSet[T]) walk(lo, hi []byte, down bool, fn func(T) bool) {
	if lo == nil {
		lo = s.prefix
	}
	if s.floor != nil && bytes.Compare(lo, s.floor) < 0 {
		lo = s.floor
	}
	if hi == nil {
		hi = s.end()
	}
	if bytes.Compare(lo, hi) >= 0 {
		return
	}
	it := s.r.Iter(lo, hi)
	defer it.Close()
	move, ok := it.Next, it.First()
	if down {
		move, ok = it.Prev, it.Last()
	}
	for ; ok; ok = move() {
		if !fn(s.codec.dec(it.Value())) {
			return
		}
	}
}

func (s *kvSet[T]) Len() int { return s.n }

func (s *kvSet[T]) Clear() {
	if s.n > 0 {
		s.writer().DeleteRange(s.prefix, s.end())
	}
	s.n = 0
	s.floor = nil
}

// prefixEnd is the first key greater than every key starting with p.
func prefixEnd(p []byte) []byte {
	end := bytes.Clone(p)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}
