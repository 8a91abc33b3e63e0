package statestore

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	bolt "go.etcd.io/bbolt"
)

// TestENOSPC fills a small file system with applies until one fails, then
// closes, reopens and checks that the store opens and holds an applied
// index no later than the last apply that succeeded: behind the log, never
// ahead. It needs a small tmpfs that the caller mounts, named by
// STATESTORE_ENOSPC_DIR (README.md has the commands); without it, it skips.
func TestENOSPC(t *testing.T) {
	base := os.Getenv("STATESTORE_ENOSPC_DIR")
	if base == "" {
		t.Skip("STATESTORE_ENOSPC_DIR is not set: no small file system to fill")
	}
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			dir := filepath.Join(base, kind)
			t.Cleanup(func() { os.RemoveAll(dir) })
			spare := filepath.Join(base, "spare")
			if err := os.WriteFile(spare, make([]byte, 8<<20), 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := openStore(kind, dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			a := newAppender(newDataset(100_000), 1)
			var acked atomic.Uint64
			var stop atomic.Bool
			done := make(chan error, 1)
			go func() {
				for !stop.Load() {
					recs, applied := a.batch(64)
					if err := s.apply(recs, applied); err != nil {
						done <- err
						return
					}
					acked.Store(applied)
				}
				done <- nil
			}()
			// Poll progress: an apply that fails ends the loop; one that
			// blocks (a write stall) shows as no progress for 10 s.
			var applyErr error
			last, still := uint64(0), 0
			tick := time.NewTicker(time.Second)
		poll:
			for {
				select {
				case applyErr = <-done:
					break poll
				case <-tick.C:
				}
				if cur := acked.Load(); cur != last {
					last, still = cur, 0
				} else if still++; still == 10 {
					t.Logf("applies stalled at applied index %d: no error, no progress for 10 s", cur)
					stop.Store(true)
					os.Remove(spare) // free space: does the store recover?
					applyErr = <-done
					t.Logf("after freeing 8 MiB: the blocked apply returned %v, applied index %d", applyErr, acked.Load())
					break poll
				}
			}
			tick.Stop()
			ok := acked.Load()
			t.Logf("apply loop ended after applied index %d: %v", ok, applyErr)
			t.Logf("close: %v", s.close())
			os.Remove(spare) // room to reopen
			s, err = openStore(kind, dir, 0)
			if err != nil {
				t.Fatalf("reopen after ENOSPC: %v", err)
			}
			defer s.close()
			got, err := appliedIndex(s)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("reopened: applied index %d (last acknowledged %d)", got, ok)
			if got > ok {
				t.Fatalf("store is ahead of the last successful apply: %d > %d", got, ok)
			}
		})
	}
}

// appliedIndex reads the applied index the store holds.
func appliedIndex(s store) (uint64, error) {
	var v []byte
	switch s := s.(type) {
	case *pebbleStore:
		val, closer, err := s.db.Get(metaApplied)
		if errors.Is(err, pebble.ErrNotFound) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		v = append(v, val...)
		closer.Close()
	case *boltStore:
		err := s.db.View(func(tx *bolt.Tx) error {
			v = append(v, tx.Bucket(bucketMeta).Get(metaApplied)...)
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	if len(v) == 0 {
		return 0, nil
	}
	return binary.BigEndian.Uint64(v), nil
}
