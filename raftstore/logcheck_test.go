package raftstore

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
)

// A byte flipped in an entry's data on disk, in a raft-wal segment or in
// raft.db, is caught on read back and named; the other entries read as
// they were written, trailer stripped; an entry written without a
// checksum (an older release) reads unchecked.
func TestFlippedByteInTheLogIsDetected(t *testing.T) {
	for _, kind := range []LogStore{LogStoreWAL, LogStoreBolt} {
		t.Run(string(kind), func(t *testing.T) {
			dir := t.TempDir()
			d, err := openDisk(dir, diskOptions{want: kind, create: true, record: true})
			if err != nil {
				t.Fatal(err)
			}
			var logs []*raft.Log
			for i := uint64(1); i <= 20; i++ {
				logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: fmt.Appendf(nil, "needle-%02d-payload", i)})
			}
			logs[4].Extensions = barrierMarker
			for _, l := range logs { // one batch each, as raft writes them one commit at a time
				if err := d.log.StoreLogs([]*raft.Log{l}); err != nil {
					t.Fatal(err)
				}
			}
			if logs[0].Extensions != nil || !bytes.Equal(logs[4].Extensions, barrierMarker) {
				t.Fatal("storing changed the entries raft holds")
			}
			if err := d.close(); err != nil {
				t.Fatal(err)
			}

			file := flipIn(t, dir, []byte("needle-07-payload"))
			d, err = openDisk(dir, diskOptions{want: kind})
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			defer d.close()
			for i := uint64(1); i <= 20; i++ {
				var l raft.Log
				err := d.log.GetLog(i, &l)
				if i == 7 {
					var ce *CorruptLogError
					if !errors.As(err, &ce) || ce.Index != 7 || !errors.Is(err, ErrCorruptLog) {
						t.Fatalf("entry 7 with a flipped byte in %s: %v, want a CorruptLogError", file, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("entry %d: %v", i, err)
				}
				if string(l.Data) != string(logs[i-1].Data) || !bytes.Equal(l.Extensions, logs[i-1].Extensions) {
					t.Fatalf("entry %d read back as %q %q", i, l.Data, l.Extensions)
				}
			}
			if !errors.Is(<-d.failure.ch, ErrCorruptLog) || !errors.Is(d.log.StoreLogs([]*raft.Log{{Index: 21, Term: 1}}), ErrCorruptLog) {
				t.Fatal("a corrupt read did not stop the store's writes")
			}
		})
	}
	t.Run("unchecked", func(t *testing.T) {
		l := &raft.Log{Index: 3, Data: []byte("old"), Extensions: barrierMarker}
		if err := unseal(l, "x"); err != nil || !bytes.Equal(l.Extensions, barrierMarker) {
			t.Fatalf("an entry of an older release: %v, %q", err, l.Extensions)
		}
	})
}

// A byte flipped in the last batch of raft-wal's tail segment is what a
// torn write looks like: raft-wal checks that batch's CRC when it opens
// and drops it (the entries were never acknowledged if the write was torn
// by a crash before its fsync returned). In raft.db the same flip is
// caught on read by the entry checksum: bbolt has no torn tail (a commit
// is its meta page, written after the data pages are synced).
func TestFlippedByteInTheLastBatch(t *testing.T) {
	for _, kind := range []LogStore{LogStoreWAL, LogStoreBolt} {
		t.Run(string(kind), func(t *testing.T) {
			dir := t.TempDir()
			d, err := openDisk(dir, diskOptions{want: kind, create: true, record: true})
			if err != nil {
				t.Fatal(err)
			}
			for i := uint64(1); i <= 5; i++ {
				if err := d.log.StoreLogs([]*raft.Log{{Index: i, Term: 1, Type: raft.LogCommand, Data: fmt.Appendf(nil, "tail-%02d-payload", i)}}); err != nil {
					t.Fatal(err)
				}
			}
			if err := d.close(); err != nil {
				t.Fatal(err)
			}
			flipIn(t, dir, []byte("tail-05-payload"))
			d, err = openDisk(dir, diskOptions{want: kind})
			if err != nil {
				t.Fatalf("reopen: %v", err)
			}
			defer d.close()
			last, err := d.log.LastIndex()
			if err != nil {
				t.Fatal(err)
			}
			var l raft.Log
			err = d.log.GetLog(5, &l)
			switch kind {
			case LogStoreWAL:
				if last != 4 || !errors.Is(err, raft.ErrLogNotFound) {
					t.Fatalf("raft-wal after a flip in its last batch: last index %d, entry 5: %v; want the batch dropped", last, err)
				}
			case LogStoreBolt:
				if last != 5 || !errors.Is(err, ErrCorruptLog) {
					t.Fatalf("raft.db after a flip in its last entry: last index %d, entry 5: %v; want it caught", last, err)
				}
			}
		})
	}
}

// flipIn flips one byte of every occurrence of needle in the files under
// dir (bbolt's copy-on-write leaves stale copies in free pages), and
// returns the last file it changed.
func flipIn(t *testing.T, dir string, needle []byte) string {
	t.Helper()
	var found string
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil || !bytes.Contains(b, needle) {
			return err
		}
		for at := 0; ; {
			i := bytes.Index(b[at:], needle)
			if i < 0 {
				break
			}
			b[at+i+len(needle)-1] ^= 0x01
			at += i + len(needle)
		}
		found = path
		return os.WriteFile(path, b, e.Type().Perm()|0o600)
	})
	if err != nil || found == "" {
		t.Fatalf("flip a byte of %q under %s: %v (found %q)", needle, dir, err, found)
	}
	return found
}

// BenchmarkLogChecksum is the CPU a stored entry's checksum costs: seal on
// write, check and strip on read, for a 160-byte command.
func BenchmarkLogChecksum(b *testing.B) {
	l := &raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: make([]byte, 160)}
	b.SetBytes(160)
	for b.Loop() {
		s := sealed(l)
		if err := unseal(s, ""); err != nil {
			b.Fatal(err)
		}
	}
}
