//go:build !race && !metad_invariants

package fsm

// builtInChecks: the production build checks invariants only where a test
// asks (WithInvariantChecks) and once per Restore (invariants_on.go).
const builtInChecks = false
