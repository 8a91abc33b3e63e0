package integration

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/internal/proc"
)

// mountTmpfs mounts a tmpfs of size bytes at a new directory and unmounts
// it when the test ends, after the servers (whose cleanup, registered
// later, runs first) have stopped. Mounting needs root, which CI has.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small filesystem for the data dir needs root (CI runs as root)")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size="+strconv.FormatInt(size, 10)); err != nil {
		t.Fatalf("mount a %d-byte tmpfs at %s: %v", size, dir, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes a ballast file until the filesystem of dir has about leave
// bytes free.
func fill(t *testing.T, dir string, leave uint64) string {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := st.Bavail * uint64(st.Bsize)
	if free <= leave {
		t.Fatalf("only %d bytes free, want more than %d", free, leave)
	}
	path := filepath.Join(dir, "ballast")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 1<<20)
	for left := free - leave; left > 0; {
		n := min(left, uint64(len(chunk)))
		if _, err := f.Write(chunk[:n]); err != nil {
			t.Fatal(err)
		}
		left -= n
	}
	return path
}

// TestDiskFullRefusesGrowthAndHeals: a node whose data dir's filesystem
// falls below its reserve refuses appends and new streams (DISK_FULL,
// retryable, the CLI exits 4 naming the data dir), keeps serving
// describe and resolve, says why in status and /readyz, and accepts
// appends again by itself once space is freed, with every acknowledged
// append there.
func TestDiskFullRefusesGrowthAndHeals(t *testing.T) {
	const reserve = 256 << 20
	mnt := mountTmpfs(t, 512<<20)
	c := proc.New(t, 1, "--disk-reserve", strconv.Itoa(reserve))
	nd := c.Nodes[0]
	dataDir := filepath.Join(mnt, "n1")
	nd.SetDataDir(dataDir)
	c.StartAll()
	c.WaitLeader(0)
	cl := c.Client(0)
	w := proc.NewWriter(t, cl, "disk")
	w.MustAppend(t, 10)
	acked := w.End

	ballast := fill(t, mnt, reserve/2)
	c.WaitFor("the node sees its disk below the reserve", 30*time.Second, func() bool {
		st, err := c.Status(0)
		return err == nil && len(st.Nodes) == 1 && st.Nodes[0].Disk != ""
	})

	// Growth refused: definite, retryable, naming the data dir.
	err := w.Append(ctxT(t, 3*time.Second), 5)
	if !errors.Is(err, client.ErrDiskFull) || !errors.Is(err, client.ErrRetryable) || !strings.Contains(err.Error(), dataDir) {
		t.Fatalf("append on a full disk: %v, want DISK_FULL, retryable, naming %s", err, dataDir)
	}
	if w.Pending() {
		t.Fatal("a refused append was left pending: the refusal must be definite")
	}
	cmd := exec.Command(proc.Binary(t), "stream", "create", "another", "--addr", nd.GRPC, "--timeout", "2s")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 || !strings.Contains(string(out), "DISK_FULL") || !strings.Contains(string(out), dataDir) {
		t.Fatalf("metad stream create on a full disk: %v, %q; want exit 4 naming DISK_FULL and %s", err, out, dataDir)
	}

	t.Logf("metad stream create on a full disk: %s", out)

	// Reads go on: describe, and a resolve (its pin is a small write the
	// reserve keeps room for).
	if s, err := c.Describe(0, w.Stream); err != nil || s.CommittedEnd != acked {
		t.Fatalf("describe on a full disk: %v, %v; want committed end %d", s, err, acked)
	}
	if _, err := cl.Resolve(ctxT(t, 10*time.Second), w.Stream, metadpb.View_COMMITTED, 3, nil); err != nil {
		t.Fatalf("resolve on a full disk: %v", err)
	}
	if code, body := c.Readyz(0); code != 200 || !strings.Contains(body, "disk full") {
		t.Fatalf("/readyz on a full disk: %d %q, want ready, saying the disk is full", code, body)
	}

	// Space freed: the node heals by itself; the writer's retries go through.
	if err := os.Remove(ballast); err != nil {
		t.Fatal(err)
	}
	w.MustAppend(t, 5)
	if s, err := c.Describe(0, w.Stream); err != nil || s.CommittedEnd != acked+5 {
		t.Fatalf("after space returned: %v, %v; want committed end %d", s, err, acked+5)
	}
	if st, err := c.Status(0); err != nil || st.Nodes[0].Disk != "" {
		t.Fatalf("status after space returned: %v, %v", st, err)
	}
	if !strings.Contains(c.Log(0), "disk space below the reserve") || !strings.Contains(c.Log(0), "writes accepted again") {
		t.Error("the log does not mark the disk going low and coming back")
	}
}
