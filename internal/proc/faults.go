package proc

import "testing"

var faultsBuild binaryBuild

// FaultsBinary builds cmd/metad with the fault hooks (-tags metad_faults)
// once per test binary and returns its path. Set it as a Node's Bin and
// name the planted bugs in the Node's Env (METAD_FAULTS=...; faults/doc.go).
func FaultsBinary(t testing.TB) string {
	t.Helper()
	return faultsBuild.path(t, "metad-faults-bin-", "metad_faults", "metad_invariants")
}
