package history

import (
	"bytes"
	"reflect"
	"testing"
)

func TestJSONLRoundTrip(t *testing.T) {
	r := NewRecorder()
	r.AddFault(Fault{Kind: "kill", Shape: "one", Targets: []string{"n1"}, Start: 5, End: 9, OpsBefore: 30})
	obj := Object{Key: "k", Identity: "sha256:00"}
	r.Add(Op{Kind: KindAppend, Stream: 1, Call: 3, Return: 4, Status: Info, Reason: "COMMIT_TIMEOUT",
		In: Input{RequestID: "r", ExpectedStart: 2, End: 4, Object: &obj, Bytes: &Bytes{Offset: 1, Length: 6}}})
	r.Add(Op{Kind: KindResolve, Stream: 1, Call: 1, Return: 2, Status: OK, In: Input{View: "COMMITTED", Offset: 3},
		Out: &Output{Outcome: "TARGET", Target: &Target{View: "COMMITTED", Resolved: Range{3, 4}, PinStamp: 7}, Data: "x"}})
	h := r.History()
	if h.Ops[0].Kind != KindResolve {
		t.Fatal("history not sorted by call time")
	}
	var buf bytes.Buffer
	if err := h.WriteJSONL(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(h, back) {
		t.Fatalf("round trip changed the history:\n%+v\n%+v", h, back)
	}
	if n := r.CountOK(0, 10); n != 1 {
		t.Fatalf("CountOK = %d, want 1", n)
	}
}
