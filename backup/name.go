package backup

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A backup's name is metad-<cluster id>-<UTC time>-<index>.snap, e.g.
//
//	metad-3f9c...e1-20261202T031500.000Z-00000000000000004711.snap
//
// The time is the leader's wall clock when the checkpoint was taken, to
// the millisecond, in a layout whose text order is time order; the index,
// zero-padded to 20 digits, breaks ties. So a listing sorted by name is
// sorted by time within a cluster. The cluster id may itself contain '-',
// so a name is parsed from the right.
const (
	namePrefix = "metad-"
	nameSuffix = ".snap"
	timeLayout = "20060102T150405.000Z"
)

// Entry is a parsed backup name.
type Entry struct {
	Name      string    `json:"name"`
	ClusterID string    `json:"cluster_id"`
	Time      time.Time `json:"taken_at"`
	Index     uint64    `json:"index"`
}

// Name names the backup of cluster clusterID's state at index, taken at t.
func Name(clusterID string, t time.Time, index uint64) string {
	return fmt.Sprintf("%s%s-%s-%020d%s", namePrefix, clusterID, t.UTC().Format(timeLayout), index, nameSuffix)
}

// Parse reads a backup name; ok is false for any other name (a temporary
// file, an operator's own file), which backups never touch.
func Parse(name string) (e Entry, ok bool) {
	rest, ok1 := strings.CutPrefix(name, namePrefix)
	rest, ok2 := strings.CutSuffix(rest, nameSuffix)
	if !ok1 || !ok2 {
		return Entry{}, false
	}
	i := strings.LastIndexByte(rest, '-')
	if i < 0 {
		return Entry{}, false
	}
	index, err := strconv.ParseUint(rest[i+1:], 10, 64)
	if err != nil || len(rest[i+1:]) != 20 {
		return Entry{}, false
	}
	rest = rest[:i]
	j := strings.LastIndexByte(rest, '-')
	if j <= 0 {
		return Entry{}, false
	}
	t, err := time.Parse(timeLayout, rest[j+1:])
	if err != nil || Name(rest[:j], t, index) != name {
		return Entry{}, false
	}
	return Entry{Name: name, ClusterID: rest[:j], Time: t, Index: index}, true
}

// Newest returns clusterID's backups among names, newest first (by time,
// then index). Other names are left out.
func Newest(names []string, clusterID string) []Entry {
	var out []Entry
	for _, n := range names {
		if e, ok := Parse(n); ok && e.ClusterID == clusterID {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b Entry) int {
		if c := b.Time.Compare(a.Time); c != 0 {
			return c
		}
		return cmp.Compare(b.Index, a.Index)
	})
	return out
}

// Prune chooses what to delete: clusterID's backups beyond the retain
// newest, oldest last. Names that are not this cluster's backups are never
// chosen. retain below 1 is taken as 1: pruning never deletes the backup
// just taken.
func Prune(names []string, clusterID string, retain int) []string {
	retain = max(retain, 1)
	mine := Newest(names, clusterID)
	var out []string
	for i := retain; i < len(mine); i++ {
		out = append(out, mine[i].Name)
	}
	return out
}

// Due is when the next backup is due: one interval after the newest one
// (the schedule a previous leader kept), or after start (when this node's
// leadership began) if the cluster has none yet; never before now.
func Due(newest *Entry, start, now time.Time, interval time.Duration) time.Time {
	due := start.Add(interval)
	if newest != nil {
		due = newest.Time.Add(interval)
	}
	if due.Before(now) {
		return now
	}
	return due
}
