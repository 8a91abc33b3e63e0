package nemesis

import (
	"reflect"
	"testing"
	"time"
)

func TestPlanReplaysFromSeed(t *testing.T) {
	kinds := []string{Partition, Kill, Pause, Clock}
	a := Plan(7, kinds, 5, time.Minute)
	if !reflect.DeepEqual(a, Plan(7, kinds, 5, time.Minute)) {
		t.Fatal("the same seed planned different schedules")
	}
	if reflect.DeepEqual(a, Plan(8, kinds, 5, time.Minute)) {
		t.Fatal("different seeds planned the same schedule")
	}
	var total time.Duration
	for i, s := range a {
		if s.Kind != kinds[i%len(kinds)] {
			t.Fatalf("step %d is %s, kinds are used in turn", i, s.Kind)
		}
		total += s.expectedHold() + s.Quiet
	}
	if total < time.Minute {
		t.Fatalf("schedule of %s does not fill the budget", total)
	}
}

func TestParseKindsWithShape(t *testing.T) {
	if _, err := ParseKinds("kill:all-quiet,partition"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"kill:sideways", "flood"} {
		if _, err := ParseKinds(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, s := range Plan(1, []string{"kill:all-quiet"}, 3, 30*time.Second) {
		if s.Shape != "all-quiet" || !s.Quiesce {
			t.Fatalf("fixed shape not kept: %v", s)
		}
		// Quiescing waits for operations in flight before the hold starts:
		// the runner must budget for it, or the hold runs into the limit.
		if s.expectedHold() != s.Hold+quiesceAllowance {
			t.Fatalf("quiescing step %v budgets %s", s, s.expectedHold())
		}
	}
}

// reach returns, per node, the nodes it may still dial (itself included).
func reach(n int, pairs []Pair) []map[int]bool {
	cut := map[Pair]bool{}
	for _, p := range pairs {
		cut[p] = true
	}
	out := make([]map[int]bool, n)
	for a := range n {
		out[a] = map[int]bool{a: true}
		for b := range n {
			if a != b && !cut[Pair{a, b}] {
				out[a][b] = true
			}
		}
	}
	return out
}

func TestPartitionShapes(t *testing.T) {
	for _, n := range []int{3, 5} {
		perm := []int{2, 0, 1, 4, 3}[:n]
		if n == 3 {
			perm = []int{2, 0, 1}
		}
		iso := reach(n, PartitionPairs("isolate-leader", n, perm, 1))
		if len(iso[1]) != 1 {
			t.Errorf("n=%d: isolated leader still reaches %v", n, iso[1])
		}
		mm := reach(n, PartitionPairs("majority-minority", n, perm, -1))
		if len(mm[perm[0]]) != n/2 || len(mm[perm[n-1]]) != n-n/2 {
			t.Errorf("n=%d: majority-minority sides %v", n, mm)
		}
		ring := reach(n, PartitionPairs("majorities-ring", n, perm, -1))
		for a := range n {
			// Every node keeps a majority (itself included), and no node
			// reaches everyone: each sees a different majority.
			if len(ring[a]) <= n/2 || len(ring[a]) == n {
				t.Errorf("n=%d: node %d reaches %v in the majorities ring", n, a, ring[a])
			}
		}
		br := reach(n, PartitionPairs("bridge", n, perm, -1))
		if len(br[perm[n/2]]) != n {
			t.Errorf("n=%d: bridge node %d does not reach everyone: %v", n, perm[n/2], br[perm[n/2]])
		}
		if br[perm[0]][perm[n-1]] {
			t.Errorf("n=%d: the two sides of the bridge still meet", n)
		}
	}
}

func TestPlanMembershipKinds(t *testing.T) {
	kinds, err := ParseKinds("amnesia,long-partition:leader")
	if err != nil {
		t.Fatal(err)
	}
	steps := PlanWith(3, kinds, 3, 90*time.Second, Options{LongHold: 45 * time.Second})
	if len(steps) < 2 || steps[0].Kind != Amnesia || steps[1].Kind != LongPartition {
		t.Fatalf("kinds not used in turn: %v", steps)
	}
	if steps[1].Hold != 45*time.Second || steps[1].Shape != "leader" {
		t.Fatalf("long partition %v: want the 45s hold and the leader shape", steps[1])
	}
	// The schedule must budget the staging and the recovery, or the fault
	// runs into the time limit and the run is invalid.
	if steps[0].expectedHold() <= steps[0].Hold+amnesiaStaging {
		t.Fatalf("amnesia budgets %s for a hold of %s", steps[0].expectedHold(), steps[0].Hold)
	}
	if steps[1].expectedHold() != steps[1].Hold+longPartitionRejoin {
		t.Fatalf("long partition budgets %s for a hold of %s", steps[1].expectedHold(), steps[1].Hold)
	}
	if d := Plan(3, []string{LongPartition}, 3, time.Minute)[0].Hold; d != 30*time.Second {
		t.Fatalf("default long hold %s, want 30s", d)
	}
}

// A corrupt fault parses with its shapes and is budgeted the wait for a
// target read intact on top of its hold, so it never runs into the limit.
func TestPlanCorrupt(t *testing.T) {
	kinds, err := ParseKinds("corrupt,corrupt:several")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseKinds("corrupt:all"); err == nil {
		t.Fatal("unknown corrupt shape accepted")
	}
	steps := Plan(3, kinds, 3, 30*time.Second)
	if len(steps) < 2 || steps[1].Shape != "several" {
		t.Fatalf("plan %v", steps)
	}
	for _, s := range steps {
		if s.Kind != Corrupt || s.expectedHold() != s.Hold+corruptTargetWait {
			t.Fatalf("step %v budgets %s", s, s.expectedHold())
		}
	}
}

// The first disk-full fault of a schedule fills the leader's disk (a
// follower's full disk refuses nothing, and a run must see refusals); the
// later ones draw their shape, and a shape the run names is kept.
func TestFirstDiskFullFillsTheLeader(t *testing.T) {
	drawn := map[string]bool{}
	for seed := range int64(20) {
		steps := Plan(seed, []string{DiskFull, Kill}, 3, 2*time.Minute)
		first := true
		for _, s := range steps {
			if s.Kind != DiskFull {
				continue
			}
			if first && s.Shape != "leader" {
				t.Fatalf("seed %d: first disk-full step is %s, want leader", seed, s.Shape)
			}
			if !first {
				drawn[s.Shape] = true
			}
			first = false
		}
	}
	if len(drawn) != len(shapes[DiskFull]) {
		t.Errorf("later disk-full steps drew only %v", drawn)
	}
	for _, s := range Plan(3, []string{DiskFull + ":one"}, 3, time.Minute) {
		if s.Shape != "one" {
			t.Fatalf("disk-full:one planned %s", s.Shape)
		}
	}
	if !NeedsOwnDisks([]string{Kill, DiskFull + ":all"}) || NeedsOwnDisks([]string{Kill}) {
		t.Error("NeedsOwnDisks")
	}
}

// The disk-error and lose-unsynced faults never take a majority: their
// shapes are one, leader and minority, a minority of five is two nodes
// and of three one; disk-error fails writes in some faults and fsyncs in
// the others; both need the fault filesystems, no other kind does.
func TestPlanDiskErrorNeverAMajority(t *testing.T) {
	steps := Plan(11, []string{DiskError, LoseUnsynced}, 5, 10*time.Minute)
	writes, fsyncs := 0, 0
	for _, st := range steps {
		if st.Shape != "one" && st.Shape != "leader" && st.Shape != "minority" {
			t.Fatalf("%s: shape %q", st, st.Shape)
		}
		if st.Shape == "minority" {
			if got := minority(st); len(got) != 2 {
				t.Fatalf("%s: victims %v, want 2 of 5", st, got)
			}
		}
		if st.Kind == DiskError {
			if st.FailWrite {
				writes++
			} else {
				fsyncs++
			}
		}
	}
	if writes == 0 || fsyncs == 0 {
		t.Errorf("disk-error faults: %d fail writes, %d fail fsyncs; want some of each", writes, fsyncs)
	}
	if got := minority(Step{Shape: "minority", Perm: []int{2, 0, 1}}); len(got) != 1 || got[0] != 2 {
		t.Errorf("a minority of three: %v, want [2]", got)
	}
	if !NeedsFaultFS([]string{Kill, "lose-unsynced:one"}) || NeedsFaultFS([]string{DiskFull, Kill}) {
		t.Error("NeedsFaultFS: want true with lose-unsynced, false with disk-full and kill")
	}
}
