package main

import (
	"bytes"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"strings"

	"github.com/metad/metad/client"
)

// The fill's shape is decided here, without a cluster, so that it can be
// tested: how the records of each size are spread over the streams, which
// index records a stream holds, and how many of them a trim leaves.

// maxSize is the largest state --sizes accepts: 100M index records, the
// state a disk-backed state machine is meant to hold.
const maxSize = 100_000_000

// parseSizes reads "10k,100k,1M": counts of index records, strictly
// ascending, each 1..maxSize, with an optional k or M suffix.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := parseCount(f)
		if err != nil {
			return nil, fmt.Errorf("--sizes %q: %w", f, err)
		}
		if n < 1 || n > maxSize {
			return nil, fmt.Errorf("--sizes %q: want 1..%d records", f, maxSize)
		}
		if len(out) > 0 && n <= out[len(out)-1] {
			return nil, fmt.Errorf("--sizes %q: sizes must grow (after %d)", f, out[len(out)-1])
		}
		out = append(out, n)
	}
	return out, nil
}

// parseCount reads an integer with an optional k (thousand) or M
// (million) suffix.
func parseCount(s string) (int, error) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "k"), strings.HasSuffix(s, "K"):
		mult, s = 1000, s[:len(s)-1]
	case strings.HasSuffix(s, "M"), strings.HasSuffix(s, "m"):
		mult, s = 1_000_000, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("not a count (want e.g. 10k, 1M, 2500)")
	}
	return n * mult, nil
}

// distribute spreads the records that take the state from prev to next
// records over the streams: up to maxStreams streams hold records (never
// more streams than records, since a stream holds at least one), a stream
// that appears at this step gets one record first, and the rest are spread
// evenly over all active streams, the first ones taking the remainder.
// add[i] is what stream i gets; its length is the active stream count.
func distribute(prev, next, maxStreams int) []int {
	before, active := min(prev, maxStreams), min(next, maxStreams)
	add := make([]int, active)
	for i := before; i < active; i++ {
		add[i] = 1
	}
	rest := next - prev - (active - before)
	for i := range add {
		add[i] += rest / active
		if i < rest%active {
			add[i]++
		}
	}
	return add
}

// segment is what one stream received at one step: the offsets
// [start, start+n), one offset per index record. The commit-append of the
// segment's evidence carries a generation-0 record covering all of it;
// the step's published generation holds one record per remaining offset,
// start+1 .. start+n-1. A segment is thus exactly n index records.
type segment struct {
	start, n uint64
}

func (s segment) end() uint64 { return s.start + s.n }

// liveRecords counts the index records of a stream's segments that a trim
// at offset trim leaves: a record is dropped when it lies wholly below the
// trim point (fsm's rule).
func liveRecords(segs []segment, trim uint64) uint64 {
	var live uint64
	for _, s := range segs {
		if s.end() > trim {
			live++ // generation 0: [start, end)
		}
		// Published: [o, o+1) for o in start+1 .. end-1, live when o+1 > trim.
		first := max(s.start+1, trim)
		if s.end() > first {
			live += s.end() - first
		}
	}
	return live
}

// trimPoint is where a stream of end offsets is trimmed in --trim mode:
// its oldest fraction of offsets (and so of records) is dropped. It never
// moves back as end grows.
func trimPoint(end uint64, fraction float64) uint64 {
	return uint64(math.Floor(fraction * float64(end)))
}

// The disk a run needs, per node, is modelled from its parts, each bytes
// per index record times the records it holds. The figures are measured,
// not guessed: see doc.go, "Disk".
const (
	// stateDiskBytesPerRecord is the state store's share (54 B a record
	// by its metrics at 10M, 57 B as du counts its files).
	stateDiskBytesPerRecord = 64
	// raftLogBytesPerRecord is one record's share of a PublishGeneration
	// entry in the raft log: 155 bytes of encoded request per record in
	// parts of client.MaxRecordsPerPart, plus framing.
	raftLogBytesPerRecord = 160
	// snapshotBytesPerRecord is a whole snapshot's size per record (179 B
	// at 100k records, 171 B at 10M, measured): what servers before the
	// state store write at every raft snapshot, and what a node that
	// installs a leader's snapshot receives and keeps in snapshots/ until
	// two later snapshots reap it.
	snapshotBytesPerRecord = 180
	// snapshotCopies is how many whole snapshots a node before the state
	// store can hold at once: raft keeps two (SnapshotRetain) and writes
	// a third before it reaps the oldest.
	snapshotCopies = 3
	// compactionLagRecords is what the fill writes between two raft
	// snapshots, which is what the log holds beyond its trailing entries:
	// up to two 2-minute check intervals at 130k records/s.
	compactionLagRecords = 32_000_000
	// fixedDiskBytes is a node's cost with no state: a preallocated
	// 64 MiB raft-wal segment and the next one, and raft.db.
	fixedDiskBytes = 2 * 64 << 20
	// defaultTrailingLogs is the servers' --raft-trailing-logs default.
	defaultTrailingLogs = 10240
)

// diskModel is what the servers' state costs on disk.
type diskModel int

const (
	// stateStore: the state machine's state in its store on disk, raft
	// snapshots points in it (metad from 0.2.0).
	stateStore diskModel = iota
	// wholeSnapshots: the state in memory, every raft snapshot a whole
	// copy of it (metad before 0.2.0).
	wholeSnapshots
)

func (m diskModel) String() string {
	if m == stateStore {
		return "state is in a state store"
	}
	return "raft snapshots are whole copies of the state"
}

// diskModelOf tells the two apart by the binary's flags: only servers
// with a state store have --state-cache.
func diskModelOf(bin string) diskModel {
	out, _ := exec.Command(bin, "server", "--help").CombinedOutput()
	if bytes.Contains(out, []byte("--state-cache")) {
		return stateStore
	}
	return wholeSnapshots
}

// diskEstimate is the disk nodes servers need to hold records index
// records: the raft log (every record until the log holds more than
// trailingLogs full entries plus what the fill writes between snapshots)
// and, by model, the state store on every node and one whole snapshot on
// the wiped follower, or snapshotCopies whole snapshots on every node.
func diskEstimate(model diskModel, records, nodes int, trailingLogs uint64) int64 {
	r := int64(records)
	logRecords := min(r, int64(trailingLogs)*client.MaxRecordsPerPart+compactionLagRecords)
	perNode := logRecords*raftLogBytesPerRecord + fixedDiskBytes
	if model == wholeSnapshots {
		return int64(nodes) * (perNode + r*snapshotBytesPerRecord*snapshotCopies)
	}
	return int64(nodes)*(perNode+r*stateDiskBytesPerRecord) + r*snapshotBytesPerRecord
}

// trailingLogs reads --raft-trailing-logs from the servers' extra flags
// (either "--raft-trailing-logs N" or "--raft-trailing-logs=N", one or two
// dashes), or returns the servers' default.
func trailingLogs(serverFlags []string) uint64 {
	n := uint64(defaultTrailingLogs)
	for i, f := range serverFlags {
		name, value, hasValue := strings.Cut(strings.TrimLeft(f, "-"), "=")
		if name != "raft-trailing-logs" || !strings.HasPrefix(f, "-") {
			continue
		}
		if !hasValue && i+1 < len(serverFlags) {
			value = serverFlags[i+1]
		}
		if v, err := strconv.ParseUint(value, 10, 64); err == nil {
			n = v
		}
	}
	return n
}
