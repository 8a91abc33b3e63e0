package statestore

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	bolt "go.etcd.io/bbolt"
)

// store is the slice of a state store the benchmarks drive.
type store interface {
	// apply writes recs and the applied index as one atomic batch,
	// without fsync.
	apply(recs []rec, applied uint64) error
	// resolve finds the record of (stream, committed, generation 1) that
	// contains offset, or else the next one (fsm's RecordFrom).
	resolve(stream, offset uint64) (bool, error)
	// snapshot takes a consistent point of the store.
	snapshot() (snap, error)
	// compact rewrites the store so that its disk bytes are steady.
	compact() error
	close() error
}

// snap is a consistent point: stream writes every key and value as it
// was when the point was taken, whatever is applied after.
type snap interface {
	stream(w io.Writer) (int64, error)
	release() error
}

// kinds are the stores and modes compared.
//
//	pebble        batch commit with pebble.NoSync: the batch is in the WAL
//	              buffer when Commit returns and reaches the file shortly
//	              after; a process crash loses at most the last batches, a
//	              power loss a WAL suffix. Recovery replays a prefix.
//	pebble-nowal  DisableWAL: a batch is durable only once its memtable is
//	              flushed; a crash loses every batch since the last flush,
//	              always a prefix, and the applied index goes back with it.
//	bbolt         NoSync + NoFreelistSync: a commit writes pages and the meta
//	              page with write(2), no fdatasync; a process crash loses
//	              nothing (the page cache has it), a power loss can lose
//	              pages the meta page points at: a torn file, not a prefix.
var kinds = []string{"pebble", "pebble-nowal", "bbolt"}

// openStore opens (or creates) the store of kind in dir; cache is the
// pebble block cache in bytes (0: pebble's default, 8 MiB). bbolt has no
// cache of its own: it reads through mmap, so the page cache is its cache.
func openStore(kind, dir string, cache int64) (store, error) {
	switch kind {
	case "pebble", "pebble-nowal":
		return openPebble(dir, cache, kind == "pebble-nowal")
	case "bbolt":
		return openBolt(dir)
	}
	return nil, fmt.Errorf("store kind %q: want pebble, pebble-nowal or bbolt", kind)
}

// quiet drops pebble's informational log lines, which would interleave with
// benchmark output; errors still reach stderr.
type quiet struct{}

func (quiet) Infof(string, ...any) {}
func (quiet) Errorf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
}
func (quiet) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "pebble: "+format+"\n", args...)
	os.Exit(1)
}

type pebbleStore struct {
	db    *pebble.DB
	cache interface{ Unref() }
}

func openPebble(dir string, cache int64, noWAL bool) (*pebbleStore, error) {
	if cache <= 0 {
		cache = 8 << 20
	}
	c := pebble.NewCache(cache)
	db, err := pebble.Open(dir, &pebble.Options{
		Cache:              c,
		DisableWAL:         noWAL,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             quiet{},
	})
	if err != nil {
		c.Unref()
		return nil, err
	}
	return &pebbleStore{db: db, cache: c}, nil
}

func (p *pebbleStore) apply(recs []rec, applied uint64) error {
	b := p.db.NewBatch()
	defer b.Close()
	for _, r := range recs {
		if err := b.Set(r.key, r.value, nil); err != nil {
			return err
		}
	}
	if err := b.Set(metaApplied, binary.BigEndian.AppendUint64(nil, applied), nil); err != nil {
		return err
	}
	return b.Commit(pebble.NoSync)
}

func (p *pebbleStore) resolve(stream, offset uint64) (bool, error) {
	lower := genPrefix(nil, stream, viewCommitted, 1)
	upper := append(bytes.Clone(lower), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	it, err := p.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return false, err
	}
	// The last record starting at or before offset, if it reaches past
	// it; else the first one after.
	ok := it.SeekLT(recordKey(nil, stream, viewCommitted, 1, offset+1))
	if ok && valueEnd(it.Value()) <= offset {
		ok = it.Next()
	} else if !ok {
		ok = it.First()
	}
	return ok, errors.Join(it.Error(), it.Close())
}

type pebbleSnap struct{ s *pebble.Snapshot }

func (p *pebbleStore) snapshot() (snap, error) { return pebbleSnap{p.db.NewSnapshot()}, nil }

func (s pebbleSnap) stream(w io.Writer) (int64, error) {
	it, err := s.s.NewIter(nil)
	if err != nil {
		return 0, err
	}
	n, err := streamKVs(w, func(yield func(k, v []byte) error) error {
		for ok := it.First(); ok; ok = it.Next() {
			if err := yield(it.Key(), it.Value()); err != nil {
				return err
			}
		}
		return it.Error()
	})
	return n, errors.Join(err, it.Close())
}

func (s pebbleSnap) release() error { return s.s.Close() }

func (p *pebbleStore) compact() error {
	if err := p.db.Flush(); err != nil {
		return err
	}
	return p.db.Compact(context.Background(), []byte{0}, []byte{0xff}, true)
}

func (p *pebbleStore) close() error {
	err := p.db.Close()
	p.cache.Unref()
	return err
}

var (
	bucketRecords = []byte("records")
	bucketMeta    = []byte("meta")
)

const boltFile = "state.db"

type boltStore struct {
	db *bolt.DB
	// fill is the bucket fill percent for puts: bbolt's default for
	// applies, 1.0 when a store is built from a sorted stream.
	fill float64
}

func openBolt(dir string) (*boltStore, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	db, err := bolt.Open(filepath.Join(dir, boltFile), 0o600, &bolt.Options{
		NoSync:         true,
		NoFreelistSync: true,
		FreelistType:   bolt.FreelistMapType,
	})
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketRecords)
		if err == nil {
			_, err = tx.CreateBucketIfNotExists(bucketMeta)
		}
		return err
	})
	if err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return &boltStore{db: db, fill: bolt.DefaultFillPercent}, nil
}

func (s *boltStore) apply(recs []rec, applied uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketRecords)
		b.FillPercent = s.fill
		for _, r := range recs {
			if err := b.Put(r.key, r.value); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(metaApplied, binary.BigEndian.AppendUint64(nil, applied))
	})
}

func (s *boltStore) resolve(stream, offset uint64) (bool, error) {
	prefix := genPrefix(nil, stream, viewCommitted, 1)
	found := false
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketRecords).Cursor()
		// bbolt has no SeekLT: Seek to the first key after offset's,
		// step back once.
		next, nv := c.Seek(recordKey(nil, stream, viewCommitted, 1, offset+1))
		var k, v []byte
		if next == nil {
			k, v = c.Last()
		} else {
			k, v = c.Prev()
		}
		if k != nil && bytes.HasPrefix(k, prefix) && valueEnd(v) > offset {
			found = true
			return nil
		}
		found = next != nil && bytes.HasPrefix(next, prefix) && nv != nil
		return nil
	})
	return found, err
}

type boltSnap struct{ tx *bolt.Tx }

func (s *boltStore) snapshot() (snap, error) {
	tx, err := s.db.Begin(false)
	return boltSnap{tx}, err
}

func (s boltSnap) stream(w io.Writer) (int64, error) {
	return streamKVs(w, func(yield func(k, v []byte) error) error {
		for _, name := range [][]byte{bucketMeta, bucketRecords} {
			c := s.tx.Bucket(name).Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if err := yield(k, v); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func (s boltSnap) release() error { return s.tx.Rollback() }

// compact is nothing for bbolt: it reuses freed pages but never shrinks
// its file short of rewriting it (bbolt compact).
func (s *boltStore) compact() error { return nil }

func (s *boltStore) close() error { return s.db.Close() }

// streamKVs writes each pair as uvarint lengths, key, value: the portable
// form a snapshot is streamed in, whichever store produced it.
func streamKVs(w io.Writer, each func(yield func(k, v []byte) error) error) (int64, error) {
	bw := bufio.NewWriterSize(w, 1<<16)
	var n int64
	var hdr [2 * binary.MaxVarintLen64]byte
	err := each(func(k, v []byte) error {
		h := binary.AppendUvarint(hdr[:0], uint64(len(k)))
		h = binary.AppendUvarint(h, uint64(len(v)))
		for _, p := range [][]byte{h, k, v} {
			m, err := bw.Write(p)
			n += int64(m)
			if err != nil {
				return err
			}
		}
		return nil
	})
	return n, errors.Join(err, bw.Flush())
}

// readKVs calls fn for each pair streamKVs wrote to r.
func readKVs(r io.Reader, fn func(k, v []byte) error) error {
	br := bufio.NewReaderSize(r, 1<<16)
	var buf []byte
	for {
		kl, err := binary.ReadUvarint(br)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		vl, err := binary.ReadUvarint(br)
		if err != nil {
			return err
		}
		buf = append(buf[:0], make([]byte, kl+vl)...)
		if _, err := io.ReadFull(br, buf); err != nil {
			return err
		}
		if err := fn(buf[:kl], buf[kl:]); err != nil {
			return err
		}
	}
}

// install builds a store of kind from a stream in dir+".install" and then
// renames it over dir. Until the rename the old store is untouched; the
// rename is the commit point. A crash before it leaves a partial
// ".install" directory, which the next start removes; after it, the new
// store. A directory rename cannot replace a non-empty directory, so the
// old one is first moved aside to dir+".old" and removed after: a crash
// between the two renames leaves dir missing and both others present, so
// the start-up must finish the swap (".install" complete => rename it).
func install(kind, dir string, r io.Reader) (int, error) {
	tmp := dir + ".install"
	if err := os.RemoveAll(tmp); err != nil {
		return 0, err
	}
	n, err := build(kind, tmp, r)
	if err != nil {
		return n, err
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return n, err
	}
	old := dir + ".old"
	if err := os.Rename(dir, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return n, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return n, err
	}
	if err := syncDir(filepath.Dir(dir)); err != nil {
		return n, err
	}
	return n, os.RemoveAll(old)
}

// build writes the stream into a new store at dir and makes it durable:
// an install, unlike an apply, has no log to replay it from.
func build(kind, dir string, r io.Reader) (int, error) {
	s, err := openStore(kind, dir, 0)
	if err != nil {
		return 0, err
	}
	if bs, ok := s.(*boltStore); ok {
		bs.fill = 1.0 // the stream is sorted: fill pages fully
	}
	const chunk = 10000
	var pending []rec
	var applied uint64
	n := 0
	flush := func() error {
		err := s.apply(pending, applied)
		pending = pending[:0]
		return err
	}
	err = readKVs(r, func(k, v []byte) error {
		n++
		if bytes.Equal(k, metaApplied) {
			applied = binary.BigEndian.Uint64(v)
			return nil
		}
		pending = append(pending, rec{key: bytes.Clone(k), value: bytes.Clone(v)})
		if len(pending) == chunk {
			return flush()
		}
		return nil
	})
	if err == nil && len(pending) > 0 {
		err = flush()
	}
	if err == nil {
		err = durable(s)
	}
	return n, errors.Join(err, s.close())
}

// durable forces what s holds to disk.
func durable(s store) error {
	switch s := s.(type) {
	case *pebbleStore:
		return s.db.Flush()
	case *boltStore:
		return s.db.Sync()
	}
	return nil
}

func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

// diskBytes sums the sizes of the files under dir.
func diskBytes(dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			total += info.Size()
		}
		return err
	})
	return total, err
}
