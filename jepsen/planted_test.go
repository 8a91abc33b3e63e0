package main

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/jepsen/cluster"
	"github.com/metad/metad/jepsen/nemesis"
	"github.com/metad/metad/jepsen/workload"
)

var (
	seedFlag = flag.Int64("seed", 0, "seed of the planted-bug runs (0: from the clock)")
	keepFlag = flag.Bool("keep-runs", false, "keep the planted-bug run reports (in the test's temp dir, logged)")
)

// TestPlantedBugs runs short real clusters: one clean, then one per
// planted bug of package faults, each with the fault and workload that
// expose it. The clean run must pass (valid, no anomaly); every planted
// run must be reported with an anomaly of the guarantee the bug breaks.
func TestPlantedBugs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real clusters")
	}
	seed := *seedFlag
	if seed == 0 {
		seed = time.Now().UnixNano() % 1_000_000
	}
	t.Logf("seed %d (replay: go test ./jepsen -run TestPlantedBugs -seed %d)", seed, seed)
	dir := t.TempDir()
	bin, err := cluster.Build(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, bugs, nemesis, profile string
		limit                        time.Duration
		// unchecked plants the harness's own bug: readers skip the data
		// checksum, so the corrupt nemesis's bytes are returned.
		unchecked bool
		// want: checks (G1, G2, ...) of which at least one must report.
		want []string
		// detail: what one anomaly of a wanted check must say.
		detail []string
	}{
		{"clean", "", "partition", workload.ProfileStream, 25 * time.Second, false, nil, nil},
		{"stale-read", "stale-read", "partition", workload.ProfileStream, 15 * time.Second, false, []string{"G1", "G3"}, nil},
		{"skip-recheck", "skip-recheck", "none", workload.ProfileResolve, 15 * time.Second, false, []string{"G1"}, nil},
		// The bug answers from the other view when a resolve fails. From
		// feature level 3 a re-uploaded key no longer fails resolves of
		// its old version, so the corrupt nemesis makes them fail: a
		// rewritten slice is reported, quarantined and stays so.
		{"cross-view", "cross-view", "corrupt", workload.ProfileReplace, 20 * time.Second, false, []string{"G1", "G5", "G6"}, nil},
		// 20 s: a kill all-quiet needs room for quiescing (5 s) and a hold
		// of up to 7 s after the 3 s warm-up.
		{"lose-append", "lose-append", "kill:all-quiet", workload.ProfileAppend, 20 * time.Second, false, []string{"G1", "G2", "G3"}, nil},
		// n1 renames the streams it creates: the run must not converge,
		// and the report must say that n1's live state left its log, where,
		// and that the logs agree.
		// A wiped voter restarted under its id votes at once: the lagging
		// follower wins with its vote while the old leader is down, and
		// the entries only the leader and the wiped voter held are lost.
		// 40 s: the amnesia fault's staging, hold and recovery take ~25 s.
		{"accept-old-incarnation", "accept-old-incarnation", "amnesia", workload.ProfileStream, 40 * time.Second, false,
			[]string{"membership", "G1", "G2", "G3", "G14"}, nil},
		{"diverge", "diverge-n1", "none", workload.ProfileStream, 15 * time.Second, false, []string{"converge"},
			[]string{"n1's live state left its log", "first ~ stream 1", "the logs agree on every index"}},
		// Readers that return bytes without checking them against the data
		// checksum: the corrupt nemesis's flipped bytes reach the history,
		// and the checker must find them failing the checksum their
		// writer committed. 20 s: room for two corrupt faults.
		{"unchecked-read", "", "corrupt:several", workload.ProfileReupload, 20 * time.Second, true, []string{"G8"},
			[]string{"the writer committed crc32c:"}},
		// The leader proposes a stream-set object with only the first
		// half of its appends and acknowledges all of them: the other
		// streams' final evidence, describes at the object's version and
		// watchers must show the object in part (G16).
		{"half-object", "half-object", "none", workload.ProfileStreamSet, 15 * time.Second, false, []string{"G16"},
			[]string{"a stream-set object applied in part"}},
		// A failed fsync of the raft log handed back to raft, which steps
		// down and writes on over what the failure dropped: the node must
		// stop instead (G17), and the disk-error nemesis reports one that
		// is still running 15 s after its first failed fsync or write.
		// 30 s: the first fault's wait for the exit takes ~16 s. Runs on a
		// fault filesystem per node: root and /dev/fuse (CI has both).
		{"retry-fsync", "retry-fsync", "disk-error", workload.ProfileStream, 30 * time.Second, false, []string{"G17"},
			[]string{"the node kept running after a failed"}},
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			kinds, err := nemesis.ParseKinds(c.nemesis)
			if err != nil {
				t.Fatal(err)
			}
			if nemesis.NeedsFaultFS(kinds) {
				if err := cluster.CheckFUSE(os.Geteuid()); err != nil {
					t.Skipf("%v (CI runs as root with /dev/fuse)", err)
				}
			}
			runDir := filepath.Join(dir, c.name)
			cfg := RunConfig{Name: c.name, Dir: runDir, Binary: bin, Nodes: 3, Nemesis: kinds, Profile: c.profile,
				TimeLimit: c.limit, Seed: seed + int64(i), Bugs: c.bugs, Streams: 4, Readers: 4, Watchers: 2, MinOps: 20,
				CheckTimeout: 30 * time.Second, Log: log, UncheckedReads: c.unchecked, NoSettle: true}
			res, err := Run(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			summary, _ := os.ReadFile(filepath.Join(runDir, "summary.txt"))
			if *keepFlag {
				t.Logf("report in %s", runDir)
			}
			if len(res.Invalid) > 0 {
				t.Fatalf("run invalid: %v\n%s", res.Invalid, summary)
			}
			if c.want == nil {
				if !res.Passed {
					t.Fatalf("clean run reported anomalies:\n%s", summary)
				}
				return
			}
			found := map[string]int{}
			detailed := c.detail == nil
			for _, a := range res.Anomalies {
				found[a.Check]++
				if slices.Contains(c.want, a.Check) && containsAll(a.Detail, c.detail) {
					detailed = true
				}
			}
			hit := false
			for _, w := range c.want {
				hit = hit || found[w] > 0
			}
			if hit && !detailed {
				t.Fatalf("planted %s reported, but no anomaly says all of %q:\n%s", c.bugs, c.detail, summary)
			}
			if !hit {
				t.Fatalf("planted %s not reported as %s (found %v):\n%s", c.bugs, strings.Join(c.want, "/"), found, summary)
			}
			t.Logf("planted %s reported: %v", c.bugs, found)
		})
	}
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
