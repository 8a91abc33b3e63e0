package main

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
)

// The disk the servers use: what each node's data dir holds, by part, and
// the free space of the work directory's filesystem.

// dirBytes is the disk space the files under dir take (allocated blocks,
// as du counts them: raft-wal preallocates its segments, and a sparse or
// preallocated file takes what the filesystem gave it). Files that vanish
// while it walks (a snapshot reaped, a segment deleted) are skipped.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		} else {
			n += info.Size()
		}
		return nil
	})
	return n
}

// freeBytes is what an unprivileged writer may still write to dir's
// filesystem.
func freeBytes(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, fmt.Errorf("statfs %s: %w", dir, err)
	}
	return int64(st.Bavail) * st.Bsize, nil //nolint:gosec // block counts of a real filesystem fit an int64
}

// nodeDisk measures node i's data dir: all of it, its raft snapshots, its
// state store (raft/state, allocated bytes as du counts them; servers
// before the state store have none), its raft log (the rest of raft/),
// and the state store's own figure from metrics (metad_state_disk_bytes),
// 0 when the server does not report it.
func (c *cluster) nodeDisk(i int) NodeDisk {
	nd := c.nodes[i]
	raft := filepath.Join(nd.dataDir, "raft")
	d := NodeDisk{Node: nd.id, DataDirBytes: dirBytes(nd.dataDir), SnapshotBytes: dirBytes(filepath.Join(raft, "snapshots")),
		StateDirBytes: dirBytes(filepath.Join(raft, "state"))}
	d.RaftLogBytes = dirBytes(raft) - d.SnapshotBytes - d.StateDirBytes
	if m, err := c.metrics(i); err == nil {
		d.StateBytes = int64(m[stateDiskBytes])
	}
	return d
}

// The state store's metrics, which a server with a disk-backed state
// machine exports and today's does not.
const (
	stateDiskBytes   = "metad_state_disk_bytes"
	stateCacheHits   = "metad_state_cache_hits_total"
	stateCacheMisses = "metad_state_cache_misses_total"
)

// bytesIEC prints a byte count for people: 1.5 GiB, 300.0 MiB.
func bytesIEC(n int64) string {
	const unit = 1 << 10
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// checkDisk fails when the work directory's filesystem has less free
// space than the estimate for the largest size still needs beyond what the
// servers already hold (used).
func checkDisk(free, estimate, used int64, largest int) error {
	need := estimate - used
	if free >= need {
		return nil
	}
	return fmt.Errorf("not enough disk for %s records: the estimate is %s (%s more than the servers hold now), "+
		"the work directory's filesystem has %s free; give --work a larger filesystem, smaller --sizes, "+
		"or --disk-check=false to run anyway (the estimate is conservative: doc.go, Disk)",
		count(int64(largest)), bytesIEC(estimate), bytesIEC(need), bytesIEC(free))
}
