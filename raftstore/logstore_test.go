package raftstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	"go.etcd.io/bbolt"
)

// TestWALAndBoltNodesInOneCluster runs n1 on the bolt log store and n2, n3
// on the WAL (the log store is a node's own choice: nothing of it crosses
// the wire), through writes, a whole-cluster restart, and a WAL follower
// catching up by InstallSnapshot, after which raft empties its log
// (raft-wal is a MonotonicLogStore) and appends after the snapshot.
func TestWALAndBoltNodesInOneCluster(t *testing.T) {
	c := newCluster(t, 3, func(i int, cfg *Config, _ *openOptions) {
		cfg.TrailingLogs = 2
		cfg.LogStore = LogStoreWAL
		if i == 0 {
			cfg.LogStore = LogStoreBolt
		}
	})
	for i := range 10 {
		c.propose(createStream(fmt.Sprintf("w%d", i)))
	}
	for i, want := range []LogStore{LogStoreBolt, LogStoreWAL, LogStoreWAL} {
		if got := c.store(i).Status().LogStore; got != want {
			t.Errorf("%s: Status.LogStore %q, want %q", c.nodes[i].id, got, want)
		}
	}
	c.closeAll()
	for i := range c.nodes {
		c.start(i)
	}
	c.leader()
	for i := range c.nodes {
		if !c.hasStream(c.store(i), "w9") {
			t.Fatalf("after a full restart %s misses acknowledged w9", c.nodes[i].id)
		}
	}

	// A WAL follower falls behind a compacted log, on a bolt leader: a WAL
	// leader may still serve it from the log, since raft-wal v0.4.2 reads
	// an entry from the tail segment even once it is below FirstIndex
	// (harmless: a committed entry never changes).
	if l := c.leader(); l.ID() != "n1" {
		ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
		err := l.TransferLeadership(ctx, "n1")
		cancel()
		if err != nil {
			t.Fatalf("transfer leadership to n1: %v", err)
		}
		waitFor(t, "n1 to lead", func() bool { return c.leader().ID() == "n1" })
	}
	s := c.restartBehindSnapshot(t, 1)
	if !c.hasStream(s, "x19") || !c.hasStream(s, "w0") {
		t.Fatal("WAL follower did not catch up")
	}
	if snaps, err := s.snaps.List(); err != nil || len(snaps) == 0 {
		t.Fatalf("WAL follower has no installed snapshot (%v)", err)
	}
	c.propose(createStream("after"))
	if !c.hasStream(s, "after") {
		t.Fatal("WAL follower misses a write after the installed snapshot")
	}
	c.converge()

	// The WAL nodes' raft.db holds no log entries: their log is in wal/.
	c.closeAll()
	for i, node := range c.nodes {
		info, err := InspectDir(node.cfg.DataDir, true)
		if err != nil {
			t.Fatalf("inspect %s: %v", node.id, err)
		}
		if info.LastIndex == 0 || info.State == nil || info.State.Counts["stream"] < 31 {
			t.Errorf("%s: InspectDir sees log [%d, %d], state %+v", node.id, info.FirstIndex, info.LastIndex, info.State)
		}
		stable, err := openStable(node.cfg.DataDir, false)
		if err != nil {
			t.Fatal(err)
		}
		boltLast, _ := stable.LastIndex()
		stable.Close()
		if got := boltLast > 0; got != (i == 0) {
			t.Errorf("%s (%s): raft.db holds log entries up to %d", node.id, node.cfg.LogStore, boltLast)
		}
	}
}

// TestDataDirKeepsItsLogStore: a data dir records the log store it was
// first opened with, and refuses another; a dir written before the record
// existed (a bolt log, no record) is recognised as bolt.
func TestDataDirKeepsItsLogStore(t *testing.T) {
	for _, first := range []LogStore{LogStoreBolt, LogStoreWAL} {
		t.Run(string(first), func(t *testing.T) {
			other := LogStoreWAL
			if first == LogStoreWAL {
				other = LogStoreBolt
			}
			dir := t.TempDir()
			if has, err := DirLogStore(dir); !errors.Is(err, ErrNoState) {
				t.Fatalf("empty dir: DirLogStore %q, %v; want ErrNoState", has, err)
			}
			if err := CheckLogStore(dir, other); err != nil {
				t.Fatalf("empty dir refused: %v", err)
			}
			writeAlone(t, dir, first, "a")
			if has, err := DirLogStore(dir); err != nil || has != first {
				t.Fatalf("DirLogStore %q, %v; want %q", has, err, first)
			}
			var mm *LogStoreMismatchError
			if err := CheckLogStore(dir, other); !errors.As(err, &mm) || mm.Has != first || mm.Wants != other {
				t.Fatalf("CheckLogStore(%s) = %v, want a mismatch", other, err)
			}
			cfg := testConfig("solo", dir)
			cfg.LogStore = other
			if s, err := Open(cfg, nil, nil); !errors.Is(err, ErrLogStoreMismatch) {
				if err == nil {
					s.Close()
				}
				t.Fatalf("Open with %s: %v, want ErrLogStoreMismatch", other, err)
			}
			// Refused, and nothing changed: the first log store still opens
			// and still holds the write.
			writeAlone(t, dir, first, "b")
			if _, err := os.Stat(filepath.Join(dir, walDir)); (err == nil) != (first == LogStoreWAL) {
				t.Errorf("wal dir present: %v, log store %s", err == nil, first)
			}
		})
	}
	// auto opens what a dir holds, and starts a new one on wal.
	t.Run("auto", func(t *testing.T) {
		fresh := t.TempDir()
		writeAuto(t, fresh, LogStoreWAL, "a")
		writeAuto(t, fresh, LogStoreWAL, "b")
		bolt := t.TempDir()
		writeAlone(t, bolt, LogStoreBolt, "a")
		if err := CheckLogStore(bolt, LogStoreAuto); err != nil {
			t.Fatalf("CheckLogStore(auto) refused a bolt dir: %v", err)
		}
		writeAuto(t, bolt, LogStoreBolt, "b")
		unrecorded := t.TempDir()
		writeAlone(t, unrecorded, LogStoreBolt, "a")
		forgetLogStore(t, unrecorded)
		writeAuto(t, unrecorded, LogStoreBolt, "b")
	})
	t.Run("unrecorded bolt dir", func(t *testing.T) {
		dir := t.TempDir()
		writeAlone(t, dir, LogStoreBolt, "a")
		forgetLogStore(t, dir)
		if err := CheckLogStore(dir, LogStoreWAL); !errors.Is(err, ErrLogStoreMismatch) {
			t.Fatalf("a bolt log without a record opened as wal: %v", err)
		}
		writeAlone(t, dir, LogStoreBolt, "b")
	})
}

// forgetLogStore deletes the record of the log store from dir's raft.db,
// as in a dir written before the record existed.
func forgetLogStore(t *testing.T, dir string) {
	t.Helper()
	db, err := bbolt.Open(filepath.Join(dir, "raft.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("conf")) // raft-boltdb's stable-store bucket
		if b == nil || b.Get(keyLogStore) == nil {
			return errors.New("no log store record in raft.db's conf bucket")
		}
		return b.Delete(keyLogStore)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// writeAlone opens dir as a single-node cluster on the log store, writes
// stream name, checks every earlier stream is there, and closes it.
func writeAlone(t *testing.T, dir string, kind LogStore, name string) {
	t.Helper()
	writeAs(t, dir, kind, kind, name)
}

// writeAuto is writeAlone with Config.LogStore auto, which must open (or
// start) dir on kind.
func writeAuto(t *testing.T, dir string, kind LogStore, name string) {
	t.Helper()
	writeAs(t, dir, LogStoreAuto, kind, name)
}

func writeAs(t *testing.T, dir string, configured, kind LogStore, name string) {
	t.Helper()
	cfg := testConfig("solo", dir)
	cfg.LogStore = configured
	s, err := Open(cfg, nil, testLogger(t))
	if err != nil {
		t.Fatalf("open %s with %s: %v", dir, kind, err)
	}
	defer s.Close()
	if err := s.Bootstrap([]Server{{ID: "solo", Address: s.Addr()}}); err != nil && !errors.Is(err, ErrAlreadyBootstrapped) {
		t.Fatal(err)
	}
	c := &testCluster{t: t, nodes: []*testNode{{id: "solo", cfg: cfg}}}
	c.nodes[0].store.Store(s)
	c.propose(createStream(name))
	for _, n := range []string{"a", name} {
		if !c.hasStream(s, n) {
			t.Fatalf("%s log store lost stream %s", kind, n)
		}
	}
	if got := s.Status().LogStore; got != kind {
		t.Errorf("Status.LogStore %q, want %q", got, kind)
	}
}

// TestWALReopensAfterTailTruncation: raft truncates a follower's log tail
// when a new leader's log disagrees ("clearing log suffix"), and the log
// store must open again after it. raft-wal v0.4.0 sealed the tail segment
// without its index block there and then refused every read on reopen
// ("sealed segment has no index block", hashicorp/raft-wal#31): a Jepsen
// kill run hit it on a restarted node.
func TestWALReopensAfterTailTruncation(t *testing.T) {
	dir := t.TempDir()
	d, err := openDisk(dir, diskOptions{want: LogStoreWAL, create: true, record: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 10; i++ {
		if err := d.log.StoreLogs([]*raft.Log{{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.log.DeleteRange(8, 10); err != nil {
		t.Fatal(err)
	}
	if err := d.log.StoreLogs([]*raft.Log{{Index: 8, Term: 2, Type: raft.LogCommand, Data: []byte{80}}}); err != nil {
		t.Fatal(err)
	}
	if err := d.close(); err != nil {
		t.Fatal(err)
	}
	d, err = openDisk(dir, diskOptions{want: LogStoreWAL})
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	for i, want := range map[uint64]uint64{1: 1, 7: 1, 8: 2} {
		var l raft.Log
		if err := d.log.GetLog(i, &l); err != nil || l.Term != want {
			t.Fatalf("after reopening, entry %d: term %d, %v; want term %d", i, l.Term, err, want)
		}
	}
	if last, _ := d.log.LastIndex(); last != 8 {
		t.Errorf("last index %d, want 8", last)
	}
}

// TestLostWALIsRefused: a wal dir whose wal/ is gone while raft.db keeps
// the term is refused, not opened as an empty log under that term.
func TestLostWALIsRefused(t *testing.T) {
	dir := t.TempDir()
	writeAlone(t, dir, LogStoreWAL, "a")
	if err := os.RemoveAll(filepath.Join(dir, walDir)); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig("solo", dir)
	cfg.LogStore = LogStoreWAL
	if s, err := Open(cfg, nil, nil); !errors.Is(err, ErrLogMissing) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open without wal/: %v, want ErrLogMissing", err)
	}
	if _, err := InspectDir(dir, false); !errors.Is(err, ErrLogMissing) {
		t.Errorf("InspectDir without wal/: %v, want ErrLogMissing", err)
	}
}
