package model

import (
	"strings"
	"testing"

	"github.com/metad/metad/jepsen/history"
)

func TestCheckMembershipFlagsAChangedConfiguration(t *testing.T) {
	before := []string{"n1:voter", "n2:voter", "n3:voter"}
	fault := func(during, after []string) history.History {
		return history.History{Faults: []history.Fault{{Kind: "long-partition", Shape: "one", Targets: []string{"n2"},
			Config: &history.ConfigSeen{Before: before, During: during, After: after}}}}
	}
	if a := CheckMembership(fault(nil, before)); len(a) != 0 {
		t.Fatalf("an unchanged configuration reported: %v", a)
	}
	removed := []string{"n1:voter", "n3:voter"}
	if a := CheckMembership(fault(removed, before)); len(a) != 1 || !strings.Contains(a[0].Detail, "changed") {
		t.Fatalf("a removal during the hold: %v", a)
	}
	amnesia := history.History{Faults: []history.Fault{{Kind: "amnesia", Shape: "wipe-follower", Targets: []string{"n3", "n1", "n2"},
		Config: &history.ConfigSeen{Before: before, After: before, Lagging: []string{"n2"}, LeadersWhileDown: []string{"n2"}}}}}
	if a := CheckMembership(amnesia); len(a) != 1 || !strings.Contains(a[0].Detail, "voted before it caught up") {
		t.Fatalf("a lagging node elected while the old leader was down: %v", a)
	}
	amnesia.Faults[0].Config.LeadersWhileDown = []string{"n4"} // five nodes: one that holds the entries
	if a := CheckMembership(amnesia); len(a) != 0 {
		t.Fatalf("an up-to-date node elected while the old leader was down reported: %v", a)
	}
	demoted := []string{"n1:voter", "n2:nonvoter", "n3:voter"}
	if a := CheckMembership(fault(nil, demoted)); len(a) != 1 || !strings.Contains(a[0].Detail, "after the fault") {
		t.Fatalf("a configuration changed by the rejoin: %v", a)
	}
}
