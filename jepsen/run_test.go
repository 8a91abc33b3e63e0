package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/jepsen/cluster"
	"github.com/metad/metad/jepsen/history"
	"github.com/metad/metad/jepsen/report"
)

// A run whose nemesis planned faults but injected none (the time limit left
// no room for the first) tested nothing: it is invalid, never passed.
func TestRunWithoutItsFaultsIsInvalid(t *testing.T) {
	cfg := RunConfig{Name: "t", CheckTimeout: time.Second}
	conv := report.Convergence{Converged: true}
	said := func(res report.Result) bool {
		for _, v := range res.Invalid {
			if strings.Contains(v, "injected none of its 1 planned faults") {
				return true
			}
		}
		return false
	}
	if res := check(cfg, history.History{}, conv, 0, 1); !said(res) || res.Passed {
		t.Errorf("no fault of 1 planned: invalid %q, passed %v", res.Invalid, res.Passed)
	}
	injected := history.History{Faults: []history.Fault{{Kind: "kill", Shape: "all-quiet"}}}
	if res := check(cfg, injected, conv, 0, 1); said(res) {
		t.Errorf("a run with its fault called invalid for lacking it: %q", res.Invalid)
	}
	if res := check(cfg, history.History{}, conv, 0, 0); said(res) {
		t.Errorf("a run with no nemesis called invalid for lacking faults: %q", res.Invalid)
	}
}

// A server that panicked (a broken invariant) fails the run; one the
// nemesis killed, which leaves no such line, does not, nor one that
// stopped after a failed write of its raft log.
func TestCrashedServerIsAnAnomaly(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cl := &cluster.Cluster{Nodes: []*cluster.Node{
		{ID: "n1", LogPath: write("n1.log", "==== jepsen: starting n1\nlevel=INFO msg=serving\n==== jepsen: starting n1\n")},
		{ID: "n2", LogPath: write("n2.log", "level=INFO msg=serving\npanic: fsm: invariant broken after index 7 (*fsmpb.Command_Trim): byName has 2 names for 1 streams\n\ngoroutine 1 [running]:\n")},
		// A node stopped by a failed fsync of its raft log: raft panics on
		// the refused write of its term, naming the disk failure.
		{ID: "n3", LogPath: write("n3.log", "level=ERROR msg=\"shutting down\"\npanic: failed to save current term: raftstore: writing the raft log failed at d/raft/wal/1.wal: sync d/raft/wal/1.wal: input/output error; this node stops and does not retry the write (a failed fsync may have dropped data the kernel reported written); check the disk\n")},
	}}
	got := crashes(cl)
	if len(got) != 1 || got[0].Check != "crash" || !strings.Contains(got[0].Detail, "n2 crashed: panic: fsm: invariant broken") {
		t.Fatalf("crashes = %+v, want one naming n2's panic", got)
	}
}

// The disk-full nemesis is refused, naming root, unless the harness runs
// as root: in a run and in the full matrix (it mounts a filesystem per
// node); the smoke matrix and other nemeses need nothing.
func TestDiskFullNeedsRoot(t *testing.T) {
	full, err := matrixCells("full")
	if err != nil {
		t.Fatal(err)
	}
	smoke, _ := matrixCells("smoke")
	disk := []cell{{nemesis: []string{"disk-full", "kill"}, profile: "stream"}}
	for _, c := range []struct {
		name  string
		cells []cell
		euid  int
		fails bool
	}{
		{"a disk-full run, not root", disk, 1000, true},
		{"the full matrix, not root", full, 1000, true},
		{"a disk-full run as root", disk, 0, false},
		{"the smoke matrix, not root", smoke, 1000, false},
	} {
		err := checkDiskFlags(c.cells, c.euid)
		if c.fails != (err != nil) || err != nil && !strings.Contains(err.Error(), "needs root") {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// The disk-error and lose-unsynced nemeses are refused, naming what is
// missing, without root or without /dev/fuse: in a run and in the full
// matrix; other nemeses need neither.
func TestFaultFSNeedsRootAndFUSE(t *testing.T) {
	full, err := matrixCells("full")
	if err != nil {
		t.Fatal(err)
	}
	saved := fuseOK
	t.Cleanup(func() { fuseOK = saved })
	noFUSE := func(int) error { return errors.New("stat /dev/fuse: no such file or directory") }
	withFUSE := func(euid int) error {
		if euid != 0 {
			return errors.New("needs root")
		}
		return nil
	}
	cells := func(k string) []cell { return []cell{{nemesis: []string{k}, profile: "stream"}} }
	for _, c := range []struct {
		name  string
		cells []cell
		euid  int
		fuse  func(int) error
		want  string // "" allowed
	}{
		{"disk-error, not root", cells("disk-error"), 1000, withFUSE, "needs root"},
		{"lose-unsynced as root, no /dev/fuse", cells("lose-unsynced"), 0, noFUSE, "/dev/fuse"},
		{"the full matrix as root, no /dev/fuse", full, 0, noFUSE, "/dev/fuse"},
		{"disk-error as root with /dev/fuse", cells("disk-error:leader"), 0, withFUSE, ""},
		{"kill, no /dev/fuse", cells("kill"), 1000, noFUSE, ""},
	} {
		fuseOK = c.fuse
		err := checkDiskFlags(c.cells, c.euid)
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
