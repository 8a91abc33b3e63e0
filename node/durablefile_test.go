package node

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/metad/metad/internal/faultfs"
)

// The identity files survive a power cut right after they are written:
// the fault filesystem forgets every write never synced, as a power cut
// does, and the node-id, incarnation and cluster-id files read back whole.
// (Written with a plain os.WriteFile, node-id read back empty and the node
// refused to start: the Jepsen lose-unsynced nemesis found it.)
func TestIdentityFilesSurviveAPowerCut(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a FUSE filesystem needs root (CI runs as root)")
	}
	backing, mnt := t.TempDir(), t.TempDir()
	f, err := faultfs.Mount(backing, mnt)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := f.Unmount(); err != nil {
			t.Error(err)
		}
	}()
	dir := filepath.Join(mnt, "n1")
	if err := StoreNodeID(dir, "n1"); err != nil {
		t.Fatal(err)
	}
	inc, err := LoadIncarnation(dir)
	if err != nil {
		t.Fatal(err)
	}
	const id = "0aa20a63bc9a3c1334709d0d6c824a3a"
	if err := StoreClusterID(dir, id); err != nil {
		t.Fatal(err)
	}
	if err := f.LoseUnsynced(); err != nil {
		t.Fatal(err)
	}
	if got, err := StoredNodeID(dir); err != nil || got != "n1" {
		t.Fatalf("node-id after a power cut: %q, %v", got, err)
	}
	if got, err := LoadIncarnation(dir); err != nil || got != inc {
		t.Fatalf("incarnation after a power cut: %q, %v; want %q", got, err, inc)
	}
	if got, err := LoadClusterID(dir); err != nil || got != id {
		t.Fatalf("cluster-id after a power cut: %q, %v", got, err)
	}
}
