package statestore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metad/metad/fsm/kv"
)

func open(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, Config{CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// pairs reads every pair of r in order.
func pairs(r kv.Reader) []string {
	var out []string
	it := r.Iter([]byte{0}, nil)
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		out = append(out, string(it.Key())+"="+string(it.Value()))
	}
	return out
}

func checkPairs(t *testing.T, what string, r kv.Reader, want ...string) {
	t.Helper()
	if got := pairs(r); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("%s: got %v, want %v", what, got, want)
	}
}

// twin is a kv.Mem and a Store driven by the same calls.
type twin struct {
	t     *testing.T
	rng   *rand.Rand
	m     *kv.Mem
	s     *Store
	iters []iterPair
	views []viewPair
	step  int
}

type iterPair struct {
	m, s         kv.Iter
	lower, upper []byte
}

type viewPair struct{ m, s kv.View }

// key is 1–3 bytes of "abcd": fsm never uses an empty key.
func (w *twin) key() []byte {
	k := make([]byte, 1+w.rng.IntN(3))
	for i := range k {
		k[i] = "abcd"[w.rng.IntN(4)]
	}
	return k
}

func (w *twin) fail(format string, args ...any) {
	w.t.Helper()
	w.t.Fatalf("step %d: "+format, append([]any{w.step}, args...)...)
}

// write closes the Iters first (kv.Iter: callers do not write while they
// iterate), then makes one random write on both.
func (w *twin) write() {
	w.closeIters()
	switch w.rng.IntN(6) {
	case 0, 1, 2:
		k, v := w.key(), fmt.Appendf(nil, "v%d", w.step)
		w.m.Set(k, v)
		w.s.Set(k, v)
	case 3, 4:
		k := w.key()
		w.m.Delete(k)
		w.s.Delete(k)
	case 5:
		lo, hi := w.key(), w.key()
		if bytes.Compare(lo, hi) > 0 {
			lo, hi = hi, lo
		}
		w.m.DeleteRange(lo, hi)
		w.s.DeleteRange(lo, hi)
	}
}

func (w *twin) get(r1, r2 kv.Reader, what string) {
	k := w.key()
	v1, ok1 := r1.Get(k)
	v2, ok2 := r2.Get(k)
	if ok1 != ok2 || !bytes.Equal(v1, v2) {
		w.fail("%s Get(%q): mem %q %v, store %q %v", what, k, v1, ok1, v2, ok2)
	}
}

// move makes the same random move on both Iters of p and compares.
func (w *twin) move(p iterPair) {
	k := w.key()
	moves := []struct {
		name string
		f    func(kv.Iter) bool
	}{
		{"First", kv.Iter.First}, {"Last", kv.Iter.Last},
		{"SeekGE", func(it kv.Iter) bool { return it.SeekGE(k) }},
		{"SeekLT", func(it kv.Iter) bool { return it.SeekLT(k) }},
		{"Next", kv.Iter.Next}, {"Next", kv.Iter.Next},
		{"Prev", kv.Iter.Prev}, {"Prev", kv.Iter.Prev},
	}
	mv := moves[w.rng.IntN(len(moves))]
	ok1, ok2 := mv.f(p.m), mv.f(p.s)
	if ok1 != ok2 {
		w.fail("iter [%q,%q) %s(%q): mem %v, store %v", p.lower, p.upper, mv.name, k, ok1, ok2)
	}
	if ok1 && (!bytes.Equal(p.m.Key(), p.s.Key()) || !bytes.Equal(p.m.Value(), p.s.Value())) {
		w.fail("iter [%q,%q) %s(%q): mem %q=%q, store %q=%q", p.lower, p.upper, mv.name, k,
			p.m.Key(), p.m.Value(), p.s.Key(), p.s.Value())
	}
}

func (w *twin) closeIters() {
	for _, p := range w.iters {
		p.m.Close()
		p.s.Close()
	}
	w.iters = nil
}

func (w *twin) iterOp() {
	switch {
	case len(w.iters) == 0 || (len(w.iters) < 3 && w.rng.IntN(8) == 0):
		lo := w.key()
		var hi []byte
		if w.rng.IntN(4) > 0 {
			hi = w.key()
		}
		w.iters = append(w.iters, iterPair{m: w.m.Iter(lo, hi), s: w.s.Iter(lo, hi), lower: lo, upper: hi})
	default:
		w.move(w.iters[w.rng.IntN(len(w.iters))])
	}
}

func (w *twin) viewOp() {
	if len(w.views) < 2 && w.rng.IntN(3) == 0 {
		w.views = append(w.views, viewPair{m: w.m.View(), s: w.s.View()})
		return
	}
	if len(w.views) == 0 {
		return
	}
	i := w.rng.IntN(len(w.views))
	v := w.views[i]
	w.get(v.m, v.s, "view")
	if a, b := pairs(v.m), pairs(v.s); strings.Join(a, ",") != strings.Join(b, ",") {
		w.fail("view: mem %v, store %v", a, b)
	}
	if w.rng.IntN(3) == 0 {
		v.m.Close()
		v.s.Close()
		w.views = append(w.views[:i], w.views[i+1:]...)
	}
}

// TestConformance drives kv.Mem and a Store with the same random calls
// (writes, commits, reads of the store and of views taken along the way,
// every move of Iters with bounds) and compares every answer.
func TestConformance(t *testing.T) {
	for run := range 20 {
		w := &twin{t: t, rng: rand.New(rand.NewPCG(uint64(run), 7)), m: kv.NewMem(), s: open(t, t.TempDir())}
		for w.step = 0; w.step < 2000; w.step++ {
			switch r := w.rng.IntN(20); {
			case r < 7:
				w.write()
			case r < 8:
				w.closeIters()
				w.m.Commit()
				w.s.Commit()
			case r < 10:
				w.get(w.m, w.s, "store")
			case r < 18:
				w.iterOp()
			default:
				w.viewOp()
			}
		}
		w.closeIters()
		for _, v := range w.views {
			v.m.Close()
			v.s.Close()
		}
		if err := w.s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReopenKeepsCommits: committed batches survive a close and reopen;
// uncommitted writes do not.
func TestReopenKeepsCommits(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	s.Set([]byte("a"), []byte("1"))
	s.Commit()
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	s.Set([]byte("b"), []byte("2"))
	s.Commit()
	s.Set([]byte("c"), []byte("3")) // never committed
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	defer s.Close()
	checkPairs(t, "reopened", s, "a=1", "b=2")
}

// TestViewIsAPoint: a View sees the committed state when it was taken,
// and stays readable after the Store is closed, until it is closed.
func TestViewIsAPoint(t *testing.T) {
	s := open(t, t.TempDir())
	s.Set([]byte("a"), []byte("1"))
	s.Commit()
	v := s.View()
	s.Set([]byte("b"), []byte("2"))
	checkPairs(t, "store before commit", s, "a=1", "b=2")
	s.Commit()
	checkPairs(t, "view", v, "a=1")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	checkPairs(t, "view after the store closed", v, "a=1")
	v.Close()
}

func build(t *testing.T, dir string, pairs ...string) *Builder {
	t.Helper()
	b, err := NewBuilder(dir, Config{CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pairs {
		k, v, _ := strings.Cut(p, "=")
		b.Store().Set([]byte(k), []byte(v))
	}
	b.Store().Commit()
	return b
}

func dbs(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "db-*"))
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	return m
}

// TestBuildThenActivate: a state built beside the live one is invisible
// until Activate, and a crash at any point leaves one whole state: before
// the switch, the old one (the build is removed at Open), after it, the
// new one (the old is removed).
func TestBuildThenActivate(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	s.Set([]byte("old"), []byte("1"))
	s.Commit()

	// A crash during a build: the process dies with both open.
	b := build(t, dir, "new=2")
	_ = b.Store().Sync()
	_ = b.Store().Close()
	_ = s.Close()
	s = open(t, dir)
	checkPairs(t, "after a crash during a build", s, "old=1")
	if got := dbs(t, dir); strings.Join(got, ",") != "db-1" {
		t.Fatalf("databases after the crash: %v, want the build removed", got)
	}

	// Activate: the new state is live, the old one goes once retired.
	b = build(t, dir, "new=2")
	v := s.View()
	st, err := b.Activate()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Retire(); err != nil {
		t.Fatal(err)
	}
	checkPairs(t, "live after Activate", st, "new=2")
	checkPairs(t, "a view of the retired store", v, "old=1")
	v.Close()
	if got := dbs(t, dir); strings.Join(got, ",") != "db-2" {
		t.Fatalf("databases after the retired store's last view closed: %v", got)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, dir)
	defer s.Close()
	checkPairs(t, "reopened after Activate", s, "new=2")

	// Abort leaves nothing behind.
	b = build(t, dir, "x=3")
	b.Abort()
	if got := dbs(t, dir); strings.Join(got, ",") != "db-2" {
		t.Fatalf("databases after Abort: %v", got)
	}
}

// TestCorruptTableIsNamed: bytes flipped in a table file fail the read
// that meets them (Pebble checks each block's checksum as it reads it),
// with a *kv.Error naming the database and the table's number; nothing
// of it is returned as data.
func TestCorruptTableIsNamed(t *testing.T) {
	dir := t.TempDir()
	s := open(t, dir)
	for i := range 20000 {
		s.Set(fmt.Appendf(nil, "key%08d", i), fmt.Appendf(nil, "value %d %s", i, strings.Repeat("x", i%50)))
	}
	s.Commit()
	if err := s.db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	ssts, _ := filepath.Glob(filepath.Join(dir, "db-1", "*.sst"))
	if len(ssts) == 0 {
		t.Fatal("no table after a flush")
	}
	b, err := os.ReadFile(ssts[0])
	if err != nil {
		t.Fatal(err)
	}
	for i := len(b)/4 - 8; i < len(b)/4+8; i++ {
		b[i] ^= 0xff
	}
	if err := os.WriteFile(ssts[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Config{CacheBytes: 1 << 20})
	if err != nil {
		t.Fatalf("Open: %v (Pebble reads no data block at open)", err)
	}
	defer s.Close()
	var got *kv.Error
	func() {
		defer func() { got = kv.ErrorOf(recover()) }()
		pairs(s)
	}()
	num := strings.TrimSuffix(filepath.Base(ssts[0]), ".sst")
	if got == nil || !strings.Contains(got.Error(), filepath.Join(dir, "db-1")) || !strings.Contains(got.Error(), num) {
		t.Fatalf("a read over the corrupt table: %v; want a kv.Error naming %s and table %s", got, filepath.Join(dir, "db-1"), num)
	}
	t.Logf("read failed: %v", got)
}

// TestFatalfPanicsWithKVError: Pebble's Fatalf (a failed WAL fsync, say)
// reaches the applier as a *kv.Error, not an os.Exit.
func TestFatalfPanicsWithKVError(t *testing.T) {
	var got *kv.Error
	func() {
		defer func() { got = kv.ErrorOf(recover()) }()
		pebbleLogger{Config{}.logger()}.Fatalf("pebble: sync wal: %v", "input/output error")
	}()
	if got == nil || !strings.Contains(got.Error(), "sync wal: input/output error") {
		t.Fatalf("Fatalf: %v, want a *kv.Error naming the cause", got)
	}
}

// TestBlockCacheHoldsBlocks reads a flushed table twice: the second pass
// must come from the block cache. Pebble charges its memtables to the
// cache it is given, and a cache of --state-cache alone was taken whole by
// them: every read missed and went to the files.
func TestBlockCacheHoldsBlocks(t *testing.T) {
	st, err := Open(t.TempDir(), Config{CacheBytes: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const n = 20000
	key := func(i int) []byte { return binary.BigEndian.AppendUint64([]byte{1}, uint64(i)) }
	value := bytes.Repeat([]byte{7}, 100)
	for i := range n {
		st.Set(key(i), value)
	}
	st.Commit()
	if err := st.db.Flush(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		for i := range n {
			if _, ok := st.Get(key(i)); !ok {
				t.Fatalf("key %d lost", i)
			}
		}
	}
	s := st.Stats()
	if s.CacheBytes == 0 || s.CacheHits <= s.CacheMisses {
		t.Fatalf("after reading a 2 MB table twice through an 8 MiB cache: %+v; want blocks cached and more hits than misses", s)
	}
}
