package main

import (
	"strings"
	"testing"
	"time"

	"github.com/metad/metad/jepsen/history"
	"github.com/metad/metad/jepsen/report"
)

// A run whose nemesis planned faults but injected none (the time limit left
// no room for the first) tested nothing: it is invalid, never passed.
func TestRunWithoutItsFaultsIsInvalid(t *testing.T) {
	cfg := RunConfig{Name: "t", CheckTimeout: time.Second}
	conv := report.Convergence{Converged: true}
	said := func(res report.Result) bool {
		for _, v := range res.Invalid {
			if strings.Contains(v, "injected none of its 1 planned faults") {
				return true
			}
		}
		return false
	}
	if res := check(cfg, history.History{}, conv, 0, 1); !said(res) || res.Passed {
		t.Errorf("no fault of 1 planned: invalid %q, passed %v", res.Invalid, res.Passed)
	}
	injected := history.History{Faults: []history.Fault{{Kind: "kill", Shape: "all-quiet"}}}
	if res := check(cfg, injected, conv, 0, 1); said(res) {
		t.Errorf("a run with its fault called invalid for lacking it: %q", res.Invalid)
	}
	if res := check(cfg, history.History{}, conv, 0, 0); said(res) {
		t.Errorf("a run with no nemesis called invalid for lacking faults: %q", res.Invalid)
	}
}
