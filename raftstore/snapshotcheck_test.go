package raftstore

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// A byte flipped in the newest raft snapshot's state file stops the node
// at start, naming the snapshot, even though an older intact snapshot is
// there (raft alone would restore the older one and go on).
func TestCorruptSnapshotIsRefusedAtStart(t *testing.T) {
	c := newCluster(t, 1, func(_ int, cfg *Config, _ *openOptions) { cfg.SnapshotRetain = 2 })
	s := c.store(0)
	for i, name := range []string{"first", "second"} {
		c.propose(createStream(name))
		if err := s.raft.Snapshot().Error(); err != nil {
			t.Fatalf("snapshot %d: %v", i, err)
		}
	}
	list, err := s.snaps.List()
	if err != nil || len(list) != 2 {
		t.Fatalf("snapshots: %v, %v; want 2", list, err)
	}
	newest := filepath.Join(c.nodes[0].cfg.DataDir, "snapshots", list[0].ID)
	c.stop(0)

	state := filepath.Join(newest, "state.bin")
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(state, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = open(c.nodes[0].cfg, nil, c.logger, c.nodes[0].opts)
	if !errors.Is(err, ErrCorruptSnapshot) || !strings.Contains(err.Error(), newest) {
		t.Fatalf("open with a corrupt newest snapshot: %v; want ErrCorruptSnapshot naming %s", err, newest)
	}

	// Intact again, it opens and holds both streams.
	b[len(b)/2] ^= 0x01
	if err := os.WriteFile(state, b, 0o600); err != nil {
		t.Fatal(err)
	}
	c.start(0)
	c.leader()
	if !c.hasStream(c.store(0), "second") {
		t.Fatal("the restored snapshot misses a stream")
	}
}

// A data dir whose raft state belongs to n1 refuses to open as n2 (a
// damaged node-id file, or another node's dir), naming raft.db and both
// ids.
func TestRaftStateRecordsItsNodeID(t *testing.T) {
	c := newCluster(t, 1, nil)
	c.propose(createStream("a"))
	c.stop(0)
	cfg := c.nodes[0].cfg
	cfg.NodeID = "n2"
	_, err := open(cfg, nil, c.logger, c.nodes[0].opts)
	if !errors.Is(err, ErrNodeIDMismatch) || !strings.Contains(err.Error(), `node "n1"`) || !strings.Contains(err.Error(), "raft.db") {
		t.Fatalf("open n1's raft state as n2: %v; want ErrNodeIDMismatch naming both", err)
	}
	c.start(0)
	c.leader()
}

// A snapshot a crash left half-written is removed when the store opens;
// a complete one stays.
func TestHalfWrittenSnapshotIsRemovedAtOpen(t *testing.T) {
	c := newCluster(t, 1, nil)
	s := c.store(0)
	c.propose(createStream("a"))
	if err := s.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(c.nodes[0].cfg.DataDir, "snapshots")
	c.stop(0)
	tmp := filepath.Join(dir, "2-9-1796223268187.tmp")
	if err := os.MkdirAll(tmp, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "state.bin"), []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.start(0)
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("half-written snapshot still there: %v", err)
	}
	if list, err := c.store(0).snaps.List(); err != nil || len(list) != 1 {
		t.Fatalf("complete snapshots after open: %v, %v; want the one", list, err)
	}
}

// failingSink is a sink whose Close fails after leaving its directory.
type failingSink struct{ raft.SnapshotSink }

func (failingSink) Close() error { return errors.New("write meta.json: no space left on device") }

func TestFailedSnapshotCloseLeavesNoDirectory(t *testing.T) {
	tmp := filepath.Join(t.TempDir(), "2-9-1.tmp")
	if err := os.MkdirAll(tmp, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := (&cleanSink{SnapshotSink: failingSink{}, tmp: tmp}).Close(); err == nil {
		t.Fatal("the failure was lost")
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed snapshot left %s behind: %v", tmp, err)
	}
}
