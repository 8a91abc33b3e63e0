package kv

import (
	"bytes"

	"github.com/google/btree"
)

// Mem is an in-memory Store for tests: the same contract as the on-disk
// store, minus the disk. Its committed state outlives a Machine that used
// it, so a test can "reopen" the state by opening a new Machine on it.
type Mem struct {
	committed *btree.BTreeG[pair]
	work      *btree.BTreeG[pair]
	// Commits counts Commit calls, for tests of batching.
	Commits int
	// auto: work is committed (AutoCommit).
	auto bool
}

type pair struct{ k, v []byte }

func pairLess(a, b pair) bool { return bytes.Compare(a.k, b.k) < 0 }

// NewMem returns an empty Mem.
func NewMem() *Mem {
	t := btree.NewG(16, pairLess)
	return &Mem{committed: t, work: t.Clone()}
}

func (m *Mem) Get(key []byte) ([]byte, bool) { return get(m.work, key) }

func (m *Mem) Iter(lower, upper []byte) Iter { return newMemIter(m.work, lower, upper) }

func (m *Mem) Set(key, value []byte) {
	m.work.ReplaceOrInsert(pair{k: bytes.Clone(key), v: bytes.Clone(value)})
}

func (m *Mem) Delete(key []byte) { m.work.Delete(pair{k: key}) }

func (m *Mem) DeleteRange(lower, upper []byte) {
	var doomed [][]byte
	m.work.AscendRange(pair{k: lower}, pair{k: upper}, func(p pair) bool {
		doomed = append(doomed, p.k)
		return true
	})
	for _, k := range doomed {
		m.work.Delete(pair{k: k})
	}
}

// Commit publishes the work tree; Discard would drop it.
func (m *Mem) Commit() {
	m.Commits++
	if m.auto {
		return
	}
	m.committed = m.work
	m.work = m.committed.Clone()
}

// Discard drops the writes since the last Commit, as a crash would.
func (m *Mem) Discard() {
	if !m.auto {
		m.work = m.committed.Clone()
	}
}

func (m *Mem) Sync() error { return nil }

func (m *Mem) View() View { return memView{t: m.committed.Clone()} }

// Len is the number of committed keys.
func (m *Mem) Len() int { return m.committed.Len() }

type memView struct{ t *btree.BTreeG[pair] }

func (v memView) Get(key []byte) ([]byte, bool) { return get(v.t, key) }
func (v memView) Iter(lower, upper []byte) Iter { return newMemIter(v.t, lower, upper) }
func (v memView) Close()                        {}

func get(t *btree.BTreeG[pair], key []byte) ([]byte, bool) {
	p, ok := t.Get(pair{k: key})
	return p.v, ok
}

// memIter moves by one tree lookup per step: slow, simple, and correct
// while the tree changes under it (fsm deletes while it walks).
type memIter struct {
	t            *btree.BTreeG[pair]
	lower, upper []byte
	cur          pair
	valid        bool
}

func newMemIter(t *btree.BTreeG[pair], lower, upper []byte) *memIter {
	return &memIter{t: t, lower: bytes.Clone(lower), upper: bytes.Clone(upper)}
}

func (it *memIter) inBounds(k []byte) bool {
	return bytes.Compare(k, it.lower) >= 0 && (it.upper == nil || bytes.Compare(k, it.upper) < 0)
}

func (it *memIter) set(p pair, ok bool) bool {
	it.cur, it.valid = p, ok && it.inBounds(p.k)
	return it.valid
}

func (it *memIter) ge(key []byte) bool {
	var found pair
	ok := false
	it.t.AscendGreaterOrEqual(pair{k: key}, func(p pair) bool { found, ok = p, true; return false })
	return it.set(found, ok)
}

func (it *memIter) lt(key []byte) bool {
	var found pair
	ok := false
	it.t.DescendLessOrEqual(pair{k: key}, func(p pair) bool {
		if bytes.Equal(p.k, key) {
			return true
		}
		found, ok = p, true
		return false
	})
	return it.set(found, ok)
}

func (it *memIter) First() bool { return it.ge(it.lower) }

func (it *memIter) Last() bool {
	if it.upper == nil {
		p, ok := it.t.Max()
		return it.set(p, ok)
	}
	return it.lt(it.upper)
}

func (it *memIter) SeekGE(key []byte) bool {
	if bytes.Compare(key, it.lower) < 0 {
		key = it.lower
	}
	return it.ge(key)
}

func (it *memIter) SeekLT(key []byte) bool {
	if it.upper != nil && bytes.Compare(key, it.upper) > 0 {
		key = it.upper
	}
	return it.lt(key)
}

func (it *memIter) Next() bool {
	if !it.valid {
		return false
	}
	return it.ge(append(bytes.Clone(it.cur.k), 0))
}

func (it *memIter) Prev() bool {
	if !it.valid {
		return false
	}
	return it.lt(it.cur.k)
}

func (it *memIter) Key() []byte   { return it.cur.k }
func (it *memIter) Value() []byte { return it.cur.v }
func (it *memIter) Close()        {}

// AutoCommit makes every write committed at once (Commit and Discard have
// nothing left to do): for tests that apply and clone command by command.
func (m *Mem) AutoCommit() *Mem {
	m.auto = true
	m.work = m.committed
	return m
}

// Fork returns a Mem holding a copy of m's committed state, which goes on
// independently of m.
func (m *Mem) Fork() *Mem {
	f := &Mem{committed: m.committed.Clone(), auto: m.auto}
	f.work = f.committed
	if !f.auto {
		f.work = f.committed.Clone()
	}
	return f
}
