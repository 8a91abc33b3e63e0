package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Own filesystems (the disk-full nemesis): with Config.DiskSize set, each
// node's data dir lives on its own tmpfs of that size, mounted by New at
// <Dir>/disk-nK before any node starts, the data dir being its "data"
// subdirectory (so a wipe removes the data dir and leaves the mount). A
// ballast file beside the data dir fills the filesystem; Close unmounts
// every one, lazily (MNT_DETACH) if a plain unmount fails.

// ballastName is the file that fills a node's filesystem.
const ballastName = "ballast"

// ErrNotRoot: mounting a filesystem for each node needs root.
var ErrNotRoot = errors.New("mounting a filesystem for each node's data dir needs root")

// Disk is what a node's own filesystem holds, as statfs saw it.
type Disk struct {
	Free, Total uint64 // bytes an unprivileged writer may still use; size
}

// mountDisks mounts a tmpfs of size bytes for every node and points its
// data dir into it. It refuses at once unless the harness runs as root.
func (c *Cluster) mountDisks(size int64) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("cluster: %w (running as uid %d)", ErrNotRoot, os.Geteuid())
	}
	for _, n := range c.Nodes {
		mnt, err := filepath.Abs(filepath.Join(c.cfg.Dir, "disk-"+n.ID))
		if err != nil {
			return err
		}
		if err := os.MkdirAll(mnt, 0o755); err != nil {
			return err
		}
		if err := unix.Mount("tmpfs", mnt, "tmpfs", 0, "size="+strconv.FormatInt(size, 10)); err != nil {
			return fmt.Errorf("cluster: mount a %d-byte tmpfs at %s for %s's data dir: %w", size, mnt, n.ID, err)
		}
		n.Mount, n.DataDir = mnt, filepath.Join(mnt, "data")
	}
	return nil
}

// unmountDisks unmounts every node's filesystem (the nodes must have
// stopped); a mount still busy is detached (umount -l). It returns what
// could not be unmounted at all.
func (c *Cluster) unmountDisks() error {
	var errs []error
	for _, n := range c.Nodes {
		if n.Mount == "" {
			continue
		}
		if err := unix.Unmount(n.Mount, 0); err != nil {
			if lerr := unix.Unmount(n.Mount, unix.MNT_DETACH); lerr != nil {
				errs = append(errs, fmt.Errorf("unmount %s: %w; lazily: %w", n.Mount, err, lerr))
				continue
			}
		}
		n.Mount = ""
	}
	return errors.Join(errs...)
}

// OwnDisks reports whether every node's data dir is on its own filesystem.
func (c *Cluster) OwnDisks() bool { return c.cfg.DiskSize > 0 }

// DiskOf reports node i's filesystem's space.
func (c *Cluster) DiskOf(i int) (Disk, error) {
	n := c.Nodes[i]
	if n.Mount == "" {
		return Disk{}, fmt.Errorf("%s's data dir has no filesystem of its own (Config.DiskSize)", n.ID)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(n.Mount, &st); err != nil {
		return Disk{}, fmt.Errorf("statfs %s: %w", n.Mount, err)
	}
	return Disk{Free: st.Bavail * uint64(st.Bsize), Total: st.Blocks * uint64(st.Bsize)}, nil
}

// Fill writes a ballast file on node i's filesystem so that about leave
// bytes stay free, and returns the ballast's size and the space after.
// The ballast's blocks are allocated (fallocate), not a sparse file, so
// the filesystem counts them.
func (c *Cluster) Fill(i int, leave uint64) (uint64, Disk, error) {
	d, err := c.DiskOf(i)
	if err != nil {
		return 0, d, err
	}
	if d.Free <= leave {
		return 0, d, fmt.Errorf("%s's filesystem has %d bytes free, not more than the %d to leave", c.Nodes[i].ID, d.Free, leave)
	}
	size := d.Free - leave
	path := filepath.Join(c.Nodes[i].Mount, ballastName)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, d, err
	}
	err = unix.Fallocate(int(f.Fd()), 0, 0, int64(size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(path)
		return 0, d, fmt.Errorf("fallocate %d bytes at %s: %w", size, path, err)
	}
	after, err := c.DiskOf(i)
	return size, after, err
}

// Free removes node i's ballast, if any.
func (c *Cluster) Free(i int) error {
	n := c.Nodes[i]
	if n.Mount == "" {
		return nil
	}
	if err := os.Remove(filepath.Join(n.Mount, ballastName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// FreeAll removes every node's ballast.
func (c *Cluster) FreeAll() error {
	var errs []error
	for i := range c.Nodes {
		errs = append(errs, c.Free(i))
	}
	return errors.Join(errs...)
}

// SaveDisks copies every node's data dir off its filesystem, to
// <Dir>/nK-data, so a kept run keeps its data dirs after the unmount.
func (c *Cluster) SaveDisks() error {
	var errs []error
	for _, n := range c.Nodes {
		if n.Mount == "" {
			continue
		}
		dst := filepath.Join(c.cfg.Dir, n.ID+"-data")
		if out, err := exec.Command("cp", "-a", n.DataDir, dst).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("save %s's data dir to %s: %w: %s", n.ID, dst, err, out))
		}
	}
	return errors.Join(errs...)
}
