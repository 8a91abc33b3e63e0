package membership

import (
	"testing"
	"time"
)

// policyInput is a planning round under the shipped defaults (72h for a
// failure, 1h for a graceful leave), with the given bootstrap-expect.
func policyInput(expect int, servers []Server, members ...Member) planInput {
	in := baseInput(servers, members...)
	in.Now = t0.Add(1000 * time.Hour)
	in.DeadServerTimeout = DefaultDeadServerTimeout
	in.LeftServerTimeout = DefaultLeftServerTimeout
	in.BootstrapExpect = expect
	return in
}

// since returns member id in status st for d before the policy's now.
func since(id string, st Status, d time.Duration) Member {
	m := mem(id, st, 0, true)
	m.Since = t0.Add(1000*time.Hour - d)
	return m
}

// TestRemovalPolicy is the removal policy an operator reasons about, as a
// table under the default timeouts: what the leader removes by itself,
// when, and what it never removes.
func TestRemovalPolicy(t *testing.T) {
	V := voter
	D, L, A := StatusDead, StatusLeft, StatusAlive
	five := []Server{V("a"), V("b"), V("c"), V("d"), V("e")}
	three := []Server{V("a"), V("b"), V("c")}
	// tombstoned: a tombstone on incarnation inc of id, and the member
	// answering with incarnation "now".
	tombstoned := func(id, inc string) func(Member) (string, bool) {
		return func(m Member) (string, bool) {
			return "tombstone", (Tombstone{NodeID: id, Incarnation: inc}).Covers(m.ID, "now")
		}
	}
	cases := []struct {
		name        string
		in          planInput
		acts, holds string
	}{
		{"partitioned 5 minutes: kept (was removed after 30s)",
			policyInput(3, five, since("a", A, time.Hour), since("b", A, time.Hour), since("c", A, time.Hour), since("d", A, time.Hour), since("e", D, 5*time.Minute)),
			"", "hold:e(dead-waiting)"},
		{"unreachable 71h: kept",
			policyInput(3, five, since("a", A, time.Hour), since("b", A, time.Hour), since("c", A, time.Hour), since("d", A, time.Hour), since("e", D, 71*time.Hour)),
			"", "hold:e(dead-waiting)"},
		{"unreachable 73h: removed (5 voters, expect 3)",
			policyInput(3, five, since("a", A, time.Hour), since("b", A, time.Hour), since("c", A, time.Hour), since("d", A, time.Hour), since("e", D, 73*time.Hour)),
			"remove:e", ""},
		{"restarting (alive, restoring a large snapshot) for 200h: never removed",
			policyInput(3, five, since("a", A, time.Hour), since("b", A, time.Hour), since("c", A, time.Hour), since("d", A, time.Hour), since("e", A, 200*time.Hour)),
			"", ""},
		{"left 30 minutes ago (a restart, an upgrade step): kept",
			policyInput(3, five, since("a", A, time.Hour), since("b", A, time.Hour), since("c", A, time.Hour), since("d", A, time.Hour), since("e", L, 30*time.Minute)),
			"", "hold:e(dead-waiting)"},
		{"left and away 2h: removed",
			policyInput(3, five, since("a", A, time.Hour), since("b", A, time.Hour), since("c", A, time.Hour), since("d", A, time.Hour), since("e", L, 2*time.Hour)),
			"remove:e", ""},
		{"3 voters, expect 3, one dead 100h: never below bootstrap-expect",
			policyInput(3, three, since("a", A, time.Hour), since("b", A, time.Hour), since("c", D, 100*time.Hour)),
			"", "hold:c(min-quorum)"},
		{"3 voters, expect 1, one dead 100h: removed (quorum kept)",
			policyInput(1, three, since("a", A, time.Hour), since("b", A, time.Hour), since("c", D, 100*time.Hour)),
			"remove:c", ""},
		{"5 voters, 3 dead 100h: never below quorum",
			policyInput(1, five, since("a", A, time.Hour), since("b", A, time.Hour), since("c", D, 100*time.Hour), since("d", D, 100*time.Hour), since("e", D, 100*time.Hour)),
			"", "hold:c(quorum-guard) hold:d(quorum-guard) hold:e(quorum-guard)"},
		{"5 voters, expect 4, two dead 100h: one removed, the floor keeps the other",
			policyInput(4, five, since("a", A, time.Hour), since("b", A, time.Hour), since("c", A, time.Hour), since("d", D, 100*time.Hour), since("e", D, 100*time.Hour)),
			"remove:d", "hold:e(min-quorum)"},
		{"removed by an operator, alive in gossip: not re-added",
			func() planInput {
				in := policyInput(3, three, since("a", A, time.Hour), since("b", A, time.Hour), since("c", A, time.Hour), since("d", A, time.Minute))
				in.Removed = tombstoned("d", "now")
				return in
			}(), "", "hold:d(tombstoned)"},
		{"tombstone of an unknown incarnation covers every incarnation",
			func() planInput {
				in := policyInput(3, three, since("a", A, time.Hour), since("b", A, time.Hour), since("c", A, time.Hour), since("d", A, time.Minute))
				in.Removed = tombstoned("d", "")
				return in
			}(), "", "hold:d(tombstoned)"},
		{"a new incarnation of a removed id (wiped data dir) is added",
			func() planInput {
				in := policyInput(3, three, since("a", A, time.Hour), since("b", A, time.Hour), since("c", A, time.Hour), since("d", A, time.Minute))
				in.Removed = tombstoned("d", "old-incarnation")
				return in
			}(), "add-nonvoter:d", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			acts, holds := plan(tc.in)
			if got := describe(acts); got != tc.acts {
				t.Errorf("acts %q, want %q", got, tc.acts)
			}
			if got := describe(holds); got != tc.holds {
				t.Errorf("holds %q, want %q", got, tc.holds)
			}
		})
	}
}
