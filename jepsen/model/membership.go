package model

import (
	"fmt"
	"slices"
	"time"

	"github.com/metad/metad/jepsen/history"
)

// CheckMembership checks membership for the membership nemeses, from what
// they saw of the Raft configuration (history.Fault.Config):
//
//   - long-partition: a node cut off far longer than any ordinary fault,
//     with the default removal policy, is never removed and rejoins
//     without a configuration change: no configuration seen during the
//     hold, and none after it, differs from the one before;
//   - amnesia: no node that was cut off (lagging) led while the old leader
//     was down: every other voter holds the entries it lacks, so only the
//     wiped voter's vote, cast before it caught up, can elect one; and the
//     wiped voter is kept under its id (its vote guard makes that safe), so
//     once it caught up the configuration is the one before.
func CheckMembership(h history.History) []Anomaly {
	var out []Anomaly
	for _, f := range h.Faults {
		c := f.Config
		if c == nil || c.Before == nil {
			continue
		}
		bad := func(format string, args ...any) {
			out = append(out, Anomaly{Check: "membership", Op: -1, Detail: fmt.Sprintf("%s:%s %v: ", f.Kind, f.Shape, f.Targets) + fmt.Sprintf(format, args...)})
		}
		if c.During != nil && !slices.Equal(c.During, c.Before) {
			bad("the configuration changed %.1fs into the fault: %v, was %v", float64(c.At-f.Start)/float64(time.Second), c.During, c.Before)
		}
		for _, l := range c.LeadersWhileDown {
			if slices.Contains(c.Lagging, l) {
				bad("%s, which had been cut off and lacked committed entries, led while the old leader was down: the wiped voter voted before it caught up", l)
			}
		}
		if c.After != nil && !slices.Equal(c.After, c.Before) {
			bad("the configuration after the fault is %v, was %v", c.After, c.Before)
		}
	}
	return out
}
