package fsm

import "github.com/google/btree"

// orderedSet is an ordered collection of T, the shape of the state's two
// big collections: a stream's append evidence and a generation's index
// records, both ordered by range start. Two implementations keep them:
// memSet, a B-tree in memory, and kvSet (kvset.go), keys in the state
// store on disk. The machine's decisions run over this interface only, so
// both give the same results for the same commands (conformance_test.go
// runs every script on both).
//
// Like google/btree, a set must not be changed while one of its Ascend or
// Descend walks is running.
type orderedSet[T any] interface {
	Get(key T) (T, bool)
	ReplaceOrInsert(item T)
	// insertSorted puts items, sorted and none already present, into the
	// set: what ReplaceOrInsert one by one would do, only faster.
	insertSorted(items []T)
	Delete(key T)
	Min() (T, bool)
	DeleteMin()
	// deleteFrontWhile deletes items from the smallest up for as long as
	// drop, called on each in order, returns true; the first item drop
	// refuses stays, and so does everything after it. drop must not change
	// the set. On a store this is one range deletion, not one deletion per
	// item: a trim's deletions would otherwise leave a tombstone per item
	// in front of the set's first live key, and every later walk from the
	// front (Min) would step over all of them.
	deleteFrontWhile(drop func(T) bool)
	Ascend(fn func(T) bool)
	AscendGreaterOrEqual(pivot T, fn func(T) bool)
	// AscendRange walks [lo, hi).
	AscendRange(lo, hi T, fn func(T) bool)
	DescendLessOrEqual(pivot T, fn func(T) bool)
	Len() int
	Clear()
}

// memSet is an orderedSet in a B-tree, shared copy-on-write by Clone.
type memSet[T any] struct{ t *btree.BTreeG[T] }

func newMemSet[T any](less btree.LessFunc[T]) memSet[T] {
	return memSet[T]{t: btree.NewG(treeDegree, less)}
}

func (s memSet[T]) Get(key T) (T, bool) { return s.t.Get(key) }
func (s memSet[T]) ReplaceOrInsert(x T) { s.t.ReplaceOrInsert(x) }
func (s memSet[T]) insertSorted(xs []T) { insertSorted(s.t, xs) }
func (s memSet[T]) Delete(key T)        { s.t.Delete(key) }
func (s memSet[T]) Min() (T, bool)      { return s.t.Min() }
func (s memSet[T]) DeleteMin()          { s.t.DeleteMin() }

func (s memSet[T]) deleteFrontWhile(drop func(T) bool) {
	for {
		x, ok := s.t.Min()
		if !ok || !drop(x) {
			return
		}
		s.t.DeleteMin()
	}
}
func (s memSet[T]) Ascend(fn func(T) bool) { s.t.Ascend(fn) }
func (s memSet[T]) AscendGreaterOrEqual(p T, fn func(T) bool) {
	s.t.AscendGreaterOrEqual(p, fn)
}
func (s memSet[T]) AscendRange(lo, hi T, fn func(T) bool) { s.t.AscendRange(lo, hi, fn) }
func (s memSet[T]) DescendLessOrEqual(p T, fn func(T) bool) {
	s.t.DescendLessOrEqual(p, fn)
}
func (s memSet[T]) Len() int { return s.t.Len() }
func (s memSet[T]) Clear()   { s.t.Clear(false) }

// clone shares the tree copy-on-write.
func (s memSet[T]) clone() memSet[T] { return memSet[T]{t: s.t.Clone()} }

// cloneMem is a point-in-time copy of a memSet, shared copy-on-write; a
// kvSet is returned as it is, for cloneOnStore to re-point at a view.
func cloneMem[T any](s orderedSet[T]) orderedSet[T] {
	if ms, ok := s.(memSet[T]); ok {
		return ms.clone()
	}
	return s
}
