package report

import (
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
