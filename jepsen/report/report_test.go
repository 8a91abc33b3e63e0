package report

import (
	"maps"
	"strings"
	"testing"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/jepsen/history"
)

func TestConverged(t *testing.T) {
	st := &metadpb.StatusResponse{Nodes: []*metadpb.NodeStatus{
		{NodeId: "n1", AppliedIndex: 9, StateHash: []byte{1}},
		{NodeId: "n2", AppliedIndex: 9, StateHash: []byte{1}},
	}}
	if c, why := Converged(st); !c.Converged || why != "" {
		t.Fatalf("equal replicas not converged: %s", why)
	}
	if Diverged(st) {
		t.Fatal("equal replicas diverged")
	}
	st.Nodes[1].StateHash = []byte{2}
	if c, why := Converged(st); c.Converged || !strings.Contains(why, "n2") {
		t.Fatalf("different hashes converged: %s", why)
	}
	if !Diverged(st) {
		t.Fatal("different hashes at one applied index did not diverge")
	}
	st.Nodes[1].AppliedIndex = 10
	if Diverged(st) {
		t.Fatal("a node still applying diverged")
	}
	st.Nodes[1] = &metadpb.NodeStatus{NodeId: "n2", State: "UNREACHABLE"}
	if c, _ := Converged(st); c.Converged {
		t.Fatal("an unreachable node converged")
	}
}

func TestValidity(t *testing.T) {
	h := history.History{
		Faults: []history.Fault{{Kind: "kill", Shape: "one", OpsBefore: 5}},
		Ops:    []history.Op{{Kind: history.KindAppend, Status: history.OK, Call: 100}},
	}
	if v := Validity(h, 20, 50); len(v) != 1 || !strings.Contains(v[0], "only 5") {
		t.Fatalf("too little work before a fault not reported: %v", v)
	}
	if v := Validity(h, 5, 200); len(v) != 1 || !strings.Contains(v[0], "after the final heal") {
		t.Fatalf("no write after the heal not reported: %v", v)
	}
	if v := Validity(h, 5, 50); len(v) != 0 {
		t.Fatalf("valid run reported invalid: %v", v)
	}
	if !strings.Contains(Plot(h), "<svg") {
		t.Fatal("plot is not SVG")
	}
}

// TestDiskFullMustBite: a disk-full fault that filled the leader's disk
// with no write refused DISK_FULL while it held makes the run invalid, and
// so does a run whose disk-full faults never had a write refused; a
// refusal within the fault's window counts for it, one outside for none.
func TestDiskFullMustBite(t *testing.T) {
	leader := history.Fault{Kind: "disk-full", Shape: "leader", Targets: []string{"n2"}, Start: 100, End: 200, LeaderFilled: true}
	follower := history.Fault{Kind: "disk-full", Shape: "one", Targets: []string{"n3"}, Start: 300, End: 400}
	refusal := func(call, ret int64) history.Op {
		return history.Op{Kind: history.KindRegister, Status: history.Fail, Reason: "DISK_FULL", Call: call, Return: ret}
	}
	ok := history.Op{Kind: history.KindAppend, Status: history.OK, Call: 150, Return: 160}
	for _, c := range []struct {
		name    string
		h       history.History
		invalid string // "" valid, else a word the reason holds
		counts  map[int]int
	}{
		{"the leader's disk refused a write", history.History{Faults: []history.Fault{leader, follower}, Ops: []history.Op{ok, refusal(150, 199)}}, "", map[int]int{0: 1}},
		{"a refusal returned as the fault began", history.History{Faults: []history.Fault{leader}, Ops: []history.Op{refusal(50, 100)}}, "", map[int]int{0: 1}},
		{"the leader's disk refused nothing", history.History{Faults: []history.Fault{leader, follower}, Ops: []history.Op{ok, refusal(310, 320)}}, "filled the leader's disk", map[int]int{1: 1}},
		{"a refusal outside every fault", history.History{Faults: []history.Fault{follower}, Ops: []history.Op{refusal(10, 20)}}, "never bit", map[int]int{}},
		{"only followers filled, nothing refused", history.History{Faults: []history.Fault{follower}, Ops: []history.Op{ok}}, "never bit", map[int]int{}},
		{"a fault that failed proves nothing either way", history.History{Faults: []history.Fault{{Kind: "disk-full", Shape: "all", Error: "fallocate: ENOSPC", LeaderFilled: true}}}, "", map[int]int{}},
		{"no disk-full fault", history.History{Faults: []history.Fault{{Kind: "kill", Shape: "one"}}, Ops: []history.Op{ok}}, "", map[int]int{}},
	} {
		v := DiskFullValidity(c.h)
		switch {
		case c.invalid == "" && len(v) != 0:
			t.Errorf("%s: invalid: %v", c.name, v)
		case c.invalid != "" && (len(v) != 1 || !strings.Contains(v[0], c.invalid)):
			t.Errorf("%s: %v, want one reason saying %q", c.name, v, c.invalid)
		}
		if got, _ := DiskFullRefusals(c.h); !maps.Equal(got, c.counts) {
			t.Errorf("%s: refusals by fault %v, want %v", c.name, got, c.counts)
		}
	}
}

// TestDiskErrorChecks: a disk-error target that kept running after its
// raft log's fsync failed is a G17 anomaly naming it; a run whose
// disk-error faults never failed an operation on a node that then exited
// is invalid; a fault that bit makes the run valid.
func TestDiskErrorChecks(t *testing.T) {
	bit := history.Fault{Kind: "disk-error", Shape: "one", Targets: []string{"n2"},
		Disk: &history.DiskSeen{Op: "fsync", Injected: 1, Exited: []string{"n2 (exit 1)"}}}
	kept := history.Fault{Kind: "disk-error", Shape: "leader", Targets: []string{"n1"},
		Disk: &history.DiskSeen{Op: "fsync", Injected: 40, KeptRunning: []string{"n1 (40 fsyncs failed)"}}}
	missed := history.Fault{Kind: "disk-error", Shape: "one", Targets: []string{"n3"}, Disk: &history.DiskSeen{Op: "write"}}
	for _, c := range []struct {
		name      string
		faults    []history.Fault
		anomalies int
		invalid   bool
	}{
		{"the node stopped", []history.Fault{bit}, 0, false},
		{"the node kept running", []history.Fault{kept}, 1, false},
		{"no operation failed", []history.Fault{missed}, 0, true},
		{"one of two bit", []history.Fault{missed, bit}, 0, false},
		{"no disk-error fault", []history.Fault{{Kind: "kill", Shape: "one"}}, 0, false},
	} {
		a, inv := DiskChecks(history.History{Faults: c.faults})
		if len(a) != c.anomalies || (len(inv) > 0) != c.invalid {
			t.Errorf("%s: anomalies %v, invalid %v", c.name, a, inv)
		}
		for _, x := range a {
			if x.Check != "G17" || !strings.Contains(x.Detail, "the node kept running after a failed fsync") || !strings.Contains(x.Detail, "n1") {
				t.Errorf("%s: anomaly %+v, want G17 naming n1", c.name, x)
			}
		}
		if c.invalid && !strings.Contains(inv[0], "never bit") {
			t.Errorf("%s: invalid %v, want \"never bit\"", c.name, inv)
		}
	}
}
