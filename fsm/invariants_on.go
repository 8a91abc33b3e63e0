//go:build race || metad_invariants

package fsm

// builtInChecks: a -race build, or one tagged metad_invariants (the test
// processes and the Jepsen harness's servers), checks the invariants as it
// applies, sampled (Machine.sampledCheck), in every machine, whether or not
// a test asked (WithInvariantChecks), as Pebble compiles its invariants in
// under the same conditions.
const builtInChecks = true
