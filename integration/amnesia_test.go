package integration

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/internal/proc"
)

// TestAmnesiacVoterCannotLoseACommittedWrite stages Raft's disk-loss
// hazard on real processes, at the worst moment: an acknowledged append
// is on the leader L and one voter X only (the third, Y, is down); X's
// data dir is wiped and X restarts under its old node id; L dies; Y comes
// back. Y lacks the append; X has an empty log and would vote for anyone.
//
// With the planted bug accept-old-incarnation (no vote guard) X votes Y
// in, Y's log wins, and the acknowledged append is gone once L returns:
// the check below catches it. With the vote guard X refuses to vote until
// it has caught up with a leader, no leader is elected without L, and
// once L is back the append is there.
func TestAmnesiacVoterCannotLoseACommittedWrite(t *testing.T) {
	for _, tc := range []struct {
		name string
		bug  bool
	}{
		{"planted bug accept-old-incarnation loses the write", true},
		{"vote guard keeps it", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := proc.New(t, 3)
			c.StartAll()
			formed(t, c, 3)
			l := c.WaitLeader(0)
			x, y := (l+1)%3, (l+2)%3
			incarnation := func(i int) string {
				st, err := c.Status(l)
				if err != nil {
					return ""
				}
				for _, n := range st.Nodes {
					if n.NodeId == c.Nodes[i].ID {
						return n.Incarnation
					}
				}
				return ""
			}
			oldInc := incarnation(x)
			if oldInc == "" {
				t.Fatalf("%s reports no incarnation", c.Nodes[x].ID)
			}
			w := proc.NewWriter(t, c.Client(l), "amnesia")
			w.MustAppend(t, 1)
			before := w.End
			// Y is killed, not paused: a paused process still receives
			// what the leader sends into its socket, and would have the
			// append after SIGCONT.
			c.Kill(y)
			w.MustAppend(t, 1) // committed on L and X only
			acked := w.End

			c.Kill(x)
			if err := os.RemoveAll(c.Nodes[x].DataDir); err != nil {
				t.Fatal(err)
			}
			c.Kill(l)
			if tc.bug {
				c.Nodes[x].Bin = proc.FaultsBinary(t)
				c.Nodes[x].Env = []string{"METAD_FAULTS=accept-old-incarnation"}
			}
			c.Start(y)
			c.Start(x)
			if tc.bug {
				// Y's or X's leadership (never a stale name of the dead L).
				c.WaitFor("Y elected with the amnesiac's vote", 30*time.Second, func() bool {
					st, err := c.Status(y)
					return err == nil && (st.LeaderId == c.Nodes[y].ID || st.LeaderId == c.Nodes[x].ID)
				})
			} else {
				c.WaitFor("the amnesiac refuses Y's vote", 30*time.Second, func() bool {
					return strings.Contains(c.Log(x), "vote refused")
				})
				if st, err := c.Status(y); err == nil && (st.LeaderId == c.Nodes[y].ID || st.LeaderId == c.Nodes[x].ID) {
					t.Fatalf("a leader (%s) was elected without the server that holds the append", st.LeaderId)
				}
			}
			c.Start(l)
			c.WaitFor("a leader with all three", 60*time.Second, func() bool {
				for _, i := range []int{l, x, y} {
					if st, err := c.Status(i); err != nil || st.LeaderId == "" {
						return false
					}
				}
				return true
			})
			var end uint64
			c.WaitFor("the stream readable", 30*time.Second, func() bool {
				s, err := c.Describe(l, w.Stream)
				if err == nil {
					end = s.CommittedEnd
				}
				return err == nil
			})
			lost := end < acked
			switch {
			case tc.bug && !lost:
				t.Fatalf("committed end %d, acknowledged %d: with the planted bug the check should have caught a lost write", end, acked)
			case !tc.bug && lost:
				t.Fatalf("committed end %d, acknowledged %d (before the partition %d): an acknowledged append was lost", end, acked, before)
			}
			t.Logf("committed end %d, acknowledged %d", end, acked)
			if tc.bug {
				return
			}
			// The wiped server is back as a new incarnation, caught up.
			c.WaitFor("the wiped server back as a new incarnation with the append", 30*time.Second, func() bool {
				inc := incarnation(x)
				s, err := c.Describe(x, w.Stream)
				return inc != "" && inc != oldInc && err == nil && s.CommittedEnd == acked
			})
		})
	}
}
