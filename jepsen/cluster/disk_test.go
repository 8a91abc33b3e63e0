package cluster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mounted reports whether dir is a mount point, from /proc/self/mountinfo.
func mounted(t *testing.T, dir string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == dir {
			return true
		}
	}
	return false
}

// With DiskSize each node's data dir is on its own tmpfs of that size:
// Fill leaves free space below what it is asked to leave plus a block and
// above zero, Free gives it back, and Close unmounts every filesystem,
// lazily when a file on one is still open. Not root: New refuses with
// ErrNotRoot and mounts nothing.
func TestOwnDisksFillFreeAndUnmount(t *testing.T) {
	const size, leave = 64 << 20, 16 << 20
	c, err := New(Config{Binary: "metad-not-run", Dir: t.TempDir(), Nodes: 2, DiskSize: size})
	if os.Geteuid() != 0 {
		if !errors.Is(err, ErrNotRoot) {
			t.Fatalf("New with DiskSize as uid %d: %v, want ErrNotRoot", os.Geteuid(), err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = c.Close()
		}
	})
	for _, n := range c.Nodes {
		if !mounted(t, n.Mount) || filepath.Dir(n.DataDir) != n.Mount {
			t.Fatalf("%s: data dir %s, mount %s (mounted %v)", n.ID, n.DataDir, n.Mount, mounted(t, n.Mount))
		}
	}
	before, err := c.DiskOf(0)
	if err != nil || before.Total != size {
		t.Fatalf("disk of n1: %+v, %v; want %d bytes", before, err, size)
	}
	ballast, after, err := c.Fill(0, leave)
	if err != nil {
		t.Fatal(err)
	}
	if after.Free > leave || after.Free == 0 || ballast != before.Free-leave {
		t.Fatalf("filled: ballast %d, %d free, want about %d free (of %d)", ballast, after.Free, leave, before.Free)
	}
	if other, _ := c.DiskOf(1); other.Free != before.Free {
		t.Fatalf("filling n1 took space from n2: %d free, was %d", other.Free, before.Free)
	}
	if err := c.Free(0); err != nil {
		t.Fatal(err)
	}
	if freed, _ := c.DiskOf(0); freed.Free != before.Free {
		t.Fatalf("freed: %d free, was %d", freed.Free, before.Free)
	}
	if err := c.Free(0); err != nil {
		t.Fatalf("freeing a free disk: %v", err)
	}

	// A file still open on n2's filesystem: the plain unmount is busy.
	if err := os.MkdirAll(c.Nodes[1].DataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(c.Nodes[1].DataDir, "held"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mounts := []string{c.Nodes[0].Mount, c.Nodes[1].Mount}
	closed = true
	if err := c.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for _, m := range mounts {
		if mounted(t, m) {
			t.Errorf("%s still mounted after Close", m)
		}
	}
}
