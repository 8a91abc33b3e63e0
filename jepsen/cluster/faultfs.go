package cluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/metad/metad/internal/faultfs"
)

// Fault filesystems (the disk-error and lose-unsynced nemeses): with
// Config.FaultFS set, each node's data dir lives on its own faultfs mount,
// a FUSE pass-through the harness process serves itself, over a backing
// dir <Dir>/backing-nK, mounted by New at <Dir>/disk-nK before any node
// starts; the data dir is its "data" subdirectory. The nemeses fail the
// raft log's fsyncs or writes on a mount, or roll back what a killed node
// never synced. Close unmounts every one, lazily if a file is still open.

// ErrNoFUSE: a fault filesystem needs root and /dev/fuse.
var ErrNoFUSE = errors.New("mounting a fault filesystem (FUSE) for each node's data dir needs root and /dev/fuse")

// CheckFUSE reports why fault filesystems cannot be mounted here, if so.
func CheckFUSE(euid int) error {
	if euid != 0 {
		return fmt.Errorf("%w (running as uid %d)", ErrNoFUSE, euid)
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		return fmt.Errorf("%w (%w)", ErrNoFUSE, err)
	}
	return nil
}

// mountFaultFS mounts a fault filesystem for every node and points its
// data dir into it.
func (c *Cluster) mountFaultFS() error {
	if err := CheckFUSE(os.Geteuid()); err != nil {
		return fmt.Errorf("cluster: %w", err)
	}
	for _, n := range c.Nodes {
		mnt, err := filepath.Abs(filepath.Join(c.cfg.Dir, "disk-"+n.ID))
		if err != nil {
			return err
		}
		backing := filepath.Join(c.cfg.Dir, "backing-"+n.ID)
		for _, d := range []string{mnt, backing} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
		f, err := faultfs.Mount(backing, mnt)
		if err != nil {
			return fmt.Errorf("cluster: a fault filesystem for %s's data dir: %w", n.ID, err)
		}
		n.faults, n.DataDir = f, filepath.Join(mnt, "data")
	}
	return nil
}

// unmountFaultFS unmounts every node's fault filesystem (the nodes must
// have stopped) and returns what could not be unmounted.
func (c *Cluster) unmountFaultFS() error {
	var errs []error
	for _, n := range c.Nodes {
		if n.faults == nil {
			continue
		}
		if err := n.faults.Unmount(); err != nil {
			errs = append(errs, err)
			continue
		}
		n.faults = nil
	}
	return errors.Join(errs...)
}

// FaultFS is node i's fault filesystem, or nil (Config.FaultFS unset).
func (c *Cluster) FaultFS(i int) *faultfs.FS { return c.Nodes[i].faults }

// BackingDir is where node i's data dir lives under its fault
// filesystem: what stays once the mount is gone.
func (c *Cluster) BackingDir(i int) string {
	return filepath.Join(c.cfg.Dir, "backing-"+c.Nodes[i].ID, "data")
}
