package statestore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/metad/metad/fsm/kv"
)

// Config configures a Store.
type Config struct {
	// CacheBytes is Pebble's block cache in bytes; 0 means DefaultCacheBytes.
	CacheBytes int64
	// Logger receives Pebble's errors and this package's notices; nil
	// discards them.
	Logger *slog.Logger
}

// DefaultCacheBytes is the block cache when Config.CacheBytes is 0.
const DefaultCacheBytes = 64 << 20

// memTableBytes is Pebble's memtable size: large enough that a burst of
// applies does not flush every few milliseconds.
const memTableBytes = 32 << 20

// memTables is how many memtables may exist at once: the one being
// written and one being flushed (Pebble's MemTableStopWritesThreshold;
// writes wait for the flush beyond it).
const memTables = 2

// Pebble charges every memtable's bytes to the block cache it is given
// (Cache.Reserve), so a cache of CacheBytes alone would be taken whole by
// two 32 MiB memtables and hold no block: every read would go to the
// files. The cache is made that much larger, so that CacheBytes is what
// blocks get, as --state-cache promises.
const memTableReserve = memTables * memTableBytes

// activeFile names the live database directory.
const activeFile = "ACTIVE"

// Store is a kv.Store in a Pebble database. One goroutine writes (the
// applier); any number read Views and, between the applier's batches,
// the store itself.
type Store struct {
	dir    string // the store's directory, holding ACTIVE
	dbName string // the database's directory under dir
	db     *pebble.DB
	logger *slog.Logger
	// batch holds the writes since the last Commit; nil when there are
	// none. Indexed, so reads see them.
	batch *pebble.Batch

	// mu guards the fields below. The database stays open while the Store
	// is open or any View is: refs counts both, and the last release
	// closes it (and, for a retired store, removes its directory).
	mu      sync.Mutex
	refs    int
	closed  bool
	retired bool
}

var _ kv.Store = (*Store)(nil)

// Open opens (creating if needed) the store in dir, and removes any
// database directory ACTIVE does not name.
func Open(dir string, cfg Config) (*Store, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("statestore: %w", err)
	}
	name, err := readActive(dir)
	if errors.Is(err, os.ErrNotExist) {
		name = "db-1"
		if err = writeActive(dir, name); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, err
	}
	if err := removeOthers(dir, name, cfg.logger()); err != nil {
		return nil, err
	}
	return openDB(dir, name, cfg)
}

func (c Config) logger() *slog.Logger {
	if c.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return c.Logger
}

func openDB(dir, name string, cfg Config) (*Store, error) {
	size := cfg.CacheBytes
	if size <= 0 {
		size = DefaultCacheBytes
	}
	cache := pebble.NewCache(size + memTableReserve)
	defer cache.Unref()
	opts := &pebble.Options{
		Cache:                       cache,
		MemTableSize:                memTableBytes,
		MemTableStopWritesThreshold: memTables,
		L0StopWritesThreshold:       1000,
		Logger:                      pebbleLogger{cfg.logger()},
		FormatMajorVersion:          pebble.FormatNewest,
	}
	opts.CompactionConcurrencyRange = func() (int, int) { return 1, 2 }
	db, err := openPebble(filepath.Join(dir, name), opts)
	if err != nil {
		return nil, fmt.Errorf("statestore: open %s: %w", filepath.Join(dir, name), err)
	}
	return &Store{dir: dir, dbName: name, db: db, logger: cfg.logger(), refs: 1}, nil
}

// openPebble is pebble.Open with a Fatalf during the open (a corrupt
// manifest or WAL) returned as an error.
func openPebble(path string, opts *pebble.Options) (db *pebble.DB, err error) {
	defer kv.Catch(&err)
	return pebble.Open(path, opts)
}

// Dir is the store's directory; Path the live database's.
func (s *Store) Dir() string  { return s.dir }
func (s *Store) Path() string { return filepath.Join(s.dir, s.dbName) }

// reader is what reads go to: the batch while it holds writes, else the
// database (safe for concurrent readers).
type reader interface {
	Get(key []byte) ([]byte, io.Closer, error)
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

func (s *Store) reader() reader {
	if s.batch != nil && !s.batch.Empty() {
		return s.batch
	}
	return s.db
}

func (s *Store) Get(key []byte) ([]byte, bool) { return get(s.reader(), key, s.Path()) }

func (s *Store) Iter(lower, upper []byte) kv.Iter { return newIter(s.reader(), lower, upper, s.Path()) }

func (s *Store) writer() *pebble.Batch {
	if s.batch == nil {
		s.batch = s.db.NewIndexedBatch()
	}
	return s.batch
}

func (s *Store) Set(key, value []byte) {
	if err := s.writer().Set(key, value, nil); err != nil {
		kv.Fail("set", err)
	}
}

func (s *Store) Delete(key []byte) {
	if err := s.writer().Delete(key, nil); err != nil {
		kv.Fail("delete", err)
	}
}

func (s *Store) DeleteRange(lower, upper []byte) {
	if err := s.writer().DeleteRange(lower, upper, nil); err != nil {
		kv.Fail("delete range", err)
	}
}

// Commit writes the batch to the WAL without an fsync (doc.go).
func (s *Store) Commit() {
	b := s.batch
	if b == nil {
		return
	}
	s.batch = nil
	defer b.Close()
	if b.Empty() {
		return
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		kv.Fail("commit", err)
	}
}

// ErrClosed is Sync's answer on a closed store: raft's snapshot goroutine
// may sync a store that an installed snapshot has replaced and retired.
var ErrClosed = errors.New("statestore: store is closed")

// Sync makes every committed batch durable: it forces the WAL to disk.
// Safe to call from any goroutine, even racing Close: it holds a reference
// while it syncs, and a closed store answers ErrClosed.
func (s *Store) Sync() error {
	if !s.acquire() {
		return fmt.Errorf("sync %s: %w", s.Path(), ErrClosed)
	}
	defer s.releaseLogged()
	if err := s.db.LogData(nil, pebble.Sync); err != nil {
		return fmt.Errorf("statestore: sync %s: %w", s.Path(), err)
	}
	return nil
}

// View returns a consistent point of the committed state. It stays
// readable after the Store is closed, until it is closed itself.
func (s *Store) View() kv.View {
	if !s.acquire() {
		kv.Fail("view", ErrClosed)
	}
	return &view{s: s, snap: s.db.NewSnapshot()}
}

// acquire takes a reference that keeps the database open, unless the store
// is closed.
func (s *Store) acquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.refs++
	return true
}

// releaseLogged is release for a caller with nobody to hand its error to.
func (s *Store) releaseLogged() {
	if err := s.release(); err != nil {
		s.logger.Error("statestore: close", "err", err)
	}
}

type view struct {
	s    *Store
	snap *pebble.Snapshot
	once sync.Once
}

func (v *view) Get(key []byte) ([]byte, bool)    { return get(v.snap, key, v.s.Path()) }
func (v *view) Iter(lower, upper []byte) kv.Iter { return newIter(v.snap, lower, upper, v.s.Path()) }

func (v *view) Close() {
	v.once.Do(func() {
		_ = v.snap.Close()
		v.s.releaseLogged()
	})
}

// Close drops uncommitted writes and closes the store; the database closes
// once the last open View is closed too. Safe to call twice.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if s.batch != nil {
		_ = s.batch.Close()
		s.batch = nil
	}
	return s.release()
}

// Retire closes a store another has replaced (Builder.Activate) and
// removes its directory once its last View is closed.
func (s *Store) Retire() error {
	s.mu.Lock()
	s.retired = true
	s.mu.Unlock()
	return s.Close()
}

// release drops one reference; the last closes the database.
func (s *Store) release() error {
	s.mu.Lock()
	s.refs--
	last, retired := s.refs == 0, s.retired
	s.mu.Unlock()
	if !last {
		return nil
	}
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("statestore: close %s: %w", s.Path(), err)
	}
	if retired {
		return os.RemoveAll(s.Path())
	}
	return nil
}

// Stats are the store's figures for the metrics.
type Stats struct {
	DiskBytes   uint64
	CacheBytes  int64
	CacheHits   int64
	CacheMisses int64
}

// Stats reads the store's figures from Pebble.
func (s *Store) Stats() Stats {
	m := s.db.Metrics()
	return Stats{DiskBytes: m.DiskSpaceUsage(), CacheBytes: m.BlockCache.Size, CacheHits: m.BlockCache.Hits, CacheMisses: m.BlockCache.Misses}
}

// inDB names the database a Pebble error came from: Pebble's own text
// names a table by number only ("file 000006").
func inDB(path string, err error) error { return fmt.Errorf("database %s: %w", path, err) }

func get(r reader, key []byte, path string) ([]byte, bool) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false
	}
	if err != nil {
		kv.Fail("get", inDB(path, err))
	}
	out := bytes.Clone(v)
	_ = closer.Close()
	return out, true
}

// iter is a kv.Iter on a Pebble iterator.
type iter struct {
	it           *pebble.Iterator
	path         string
	lower, upper []byte
	// valid: positioned on a key. Next and Prev from no key stay there
	// (kv.Mem's rule), where Pebble would wrap to an end.
	valid bool
}

func newIter(r reader, lower, upper []byte, path string) kv.Iter {
	if upper != nil && bytes.Compare(lower, upper) >= 0 {
		return emptyIter{} // Pebble wants lower < upper
	}
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		kv.Fail("iterate", inDB(path, err))
	}
	return &iter{it: it, path: path, lower: lower, upper: upper}
}

func (i *iter) check(ok bool) bool {
	i.valid = ok
	if !ok {
		if err := i.it.Error(); err != nil {
			kv.Fail("iterate", inDB(i.path, err))
		}
	}
	return ok
}

func (i *iter) First() bool { return i.check(i.it.First()) }
func (i *iter) Last() bool  { return i.check(i.it.Last()) }

// SeekGE and SeekLT clamp the key to the bounds, as Pebble requires (its
// invariant checks, compiled in under -race, insist).
func (i *iter) SeekGE(key []byte) bool {
	if bytes.Compare(key, i.lower) < 0 {
		key = i.lower
	}
	return i.check(i.it.SeekGE(key))
}

func (i *iter) SeekLT(key []byte) bool {
	if i.upper != nil && bytes.Compare(key, i.upper) > 0 {
		key = i.upper
	}
	return i.check(i.it.SeekLT(key))
}
func (i *iter) Next() bool    { return i.valid && i.check(i.it.Next()) }
func (i *iter) Prev() bool    { return i.valid && i.check(i.it.Prev()) }
func (i *iter) Key() []byte   { return i.it.Key() }
func (i *iter) Value() []byte { return i.it.Value() }

func (i *iter) Close() {
	if err := i.it.Close(); err != nil {
		kv.Fail("iterate", inDB(i.path, err))
	}
}

// pebbleLogger passes Pebble's errors on, drops its chatter, and turns
// Fatalf (a failed WAL write or fsync, a corrupt manifest) into a panic
// with a *kv.Error, which the applier's owner recovers to stop the node.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(string, ...any) {}
func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error("statestore: pebble: " + fmt.Sprintf(format, args...))
}
func (p pebbleLogger) Fatalf(format string, args ...any) {
	err := fmt.Errorf(format, args...)
	p.l.Error("statestore: pebble failed", "err", err)
	kv.Fail("pebble", err)
}

// The ACTIVE pointer.

func readActive(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, activeFile))
	if err != nil {
		return "", err
	}
	name := strings.TrimSpace(string(b))
	if _, ok := dbNumber(name); !ok {
		return "", fmt.Errorf("statestore: %s names %q, not a database directory (db-N)", filepath.Join(dir, activeFile), name)
	}
	return name, nil
}

// writeActive replaces ACTIVE atomically: a new file, synced, renamed over
// the old, and the directory synced so the rename survives a crash.
func writeActive(dir, name string) error {
	tmp := filepath.Join(dir, activeFile+".tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o640)
	if err != nil {
		return fmt.Errorf("statestore: %w", err)
	}
	_, err = f.WriteString(name + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, activeFile))
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return fmt.Errorf("statestore: write %s: %w", filepath.Join(dir, activeFile), err)
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func dbNumber(name string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(name, "db-"))
	return n, err == nil && strings.HasPrefix(name, "db-") && n > 0
}

// removeOthers removes the database directories of dir other than keep.
func removeOthers(dir, keep string, logger *slog.Logger) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("statestore: %w", err)
	}
	for _, e := range entries {
		if _, ok := dbNumber(e.Name()); !ok || e.Name() == keep {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("statestore: remove %s: %w", filepath.Join(dir, e.Name()), err)
		}
		logger.Info("statestore: removed a database ACTIVE does not name", "path", filepath.Join(dir, e.Name()))
	}
	return nil
}

// emptyIter is an Iter over an empty range.
type emptyIter struct{}

func (emptyIter) First() bool        { return false }
func (emptyIter) Last() bool         { return false }
func (emptyIter) SeekGE([]byte) bool { return false }
func (emptyIter) SeekLT([]byte) bool { return false }
func (emptyIter) Next() bool         { return false }
func (emptyIter) Prev() bool         { return false }
func (emptyIter) Key() []byte        { return nil }
func (emptyIter) Value() []byte      { return nil }
func (emptyIter) Close()             {}
