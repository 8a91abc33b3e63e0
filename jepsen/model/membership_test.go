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
	demoted := []string{"n1:voter", "n2:nonvoter", "n3:voter"}
	if a := CheckMembership(fault(nil, demoted)); len(a) != 1 || !strings.Contains(a[0].Detail, "after the fault") {
		t.Fatalf("a configuration changed by the rejoin: %v", a)
	}
}
