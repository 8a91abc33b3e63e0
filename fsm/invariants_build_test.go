package fsm

import (
	"strings"
	"testing"
)

// TestBuiltInChecksRunUnasked: in a -race build or one tagged
// metad_invariants, a machine nobody asked to check (no
// WithInvariantChecks) still panics at the first apply after its state
// broke; the production build does not pay for the check.
func TestBuiltInChecksRunUnasked(t *testing.T) {
	m := New()
	m.Apply(1, cmdCreate("a"))
	m.byName["ghost"] = 99 // a name index entry for no stream
	var got any
	func() {
		defer func() { got = recover() }()
		m.Apply(2, cmdCreate("b"))
	}()
	switch {
	case builtInChecks && got == nil:
		t.Fatal("a build with invariants built in applied over a broken state without a word")
	case builtInChecks && !strings.Contains(got.(string), "byName"):
		t.Fatalf("panicked, but not naming the broken invariant: %v", got)
	case !builtInChecks && got != nil:
		t.Fatalf("the production build checked invariants unasked: %v", got)
	}
}
