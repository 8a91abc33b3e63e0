package nemesis

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/metad/metad/clock"
	"github.com/metad/metad/jepsen/history"
)

// DiskFull fills chosen nodes' data dir filesystems (each node's own
// tmpfs, cluster.Config.DiskSize) with a ballast file until their free
// space is below the servers' --disk-reserve, and frees them at the heal.
// A leader below its reserve refuses growth (appends, new objects, new
// streams, generations) with DISK_FULL, definite and retryable; a
// follower's disk does not refuse anything (it only replicates) and keeps
// room for the log. Shapes: one (a random node), leader, majority, all.
const DiskFull = "disk-full"

// Disk sizes the disk-full nemesis and the harness share.
const (
	// DiskSize is each node's own filesystem.
	DiskSize = 512 << 20
	// DiskReserve is the servers' --disk-reserve: half the filesystem.
	DiskReserve = 256 << 20
	// DiskLeave is the free space a filled filesystem keeps: below the
	// reserve, so growth is refused, but not zero, so raft-wal still finds
	// room for a new segment (64 MiB, preallocated) and the small entries
	// a full node still writes (pins, trims, Raft's own entries).
	DiskLeave = DiskReserve / 2
)

// ReasonDiskFull is the reason of a write refused on a full disk.
const ReasonDiskFull = "DISK_FULL"

func init() {
	shapes[DiskFull] = []string{"one", "leader", "majority", "all"}
}

// NeedsOwnDisks reports whether the kinds need each node's data dir on its
// own filesystem.
func NeedsOwnDisks(kinds []string) bool {
	return slices.ContainsFunc(kinds, func(k string) bool {
		kind, _, _ := strings.Cut(k, ":")
		return kind == DiskFull
	})
}

// diskFull fills the victims' filesystems. The fault records whether the
// node leading when it began was among them (LeaderFilled): then writes
// must be refused DISK_FULL while it holds (report.DiskFullValidity).
func (r *Runner) diskFull(ctx context.Context, st Step, f history.Fault) injected {
	n := len(r.Cluster.Nodes)
	leader := r.Cluster.Leader(ctx)
	var victims []int
	switch st.Shape {
	case "one":
		victims = st.Perm[:1]
	case "leader":
		victims = []int{r.leaderOr(ctx, st, &f)}
		leader = victims[0]
	case "majority":
		victims = st.Perm[:n/2+1]
	default: // all
		victims = slices.Clone(st.Perm)
	}
	f.Targets = r.ids(victims)
	f.LeaderFilled = leader >= 0 && slices.Contains(victims, leader)
	if leader >= 0 {
		f.Detail += fmt.Sprintf("leader %s; ", r.Cluster.Nodes[leader].ID)
	}
	heal := func(context.Context) {
		for _, v := range victims {
			if err := r.Cluster.Free(v); err != nil {
				r.Log.Error("nemesis: freeing a disk failed", "node", r.Cluster.Nodes[v].ID, "err", err)
			}
		}
	}
	var done []string
	for _, v := range victims {
		size, after, err := r.Cluster.Fill(v, DiskLeave)
		if err != nil {
			f.Error = err.Error()
			heal(ctx)
			return injected{fault: f}
		}
		done = append(done, fmt.Sprintf("%s ballast %d MiB, %d of %d MiB free", r.Cluster.Nodes[v].ID, size>>20, after.Free>>20, after.Total>>20))
	}
	f.Start = clock.Real.Now().UnixNano()
	f.Detail += "filled " + strings.Join(done, "; ") + fmt.Sprintf(" (reserve %d MiB)", DiskReserve>>20)
	return injected{fault: f, heal: heal}
}
