// Package fsmpb holds the generated Go code for metad's replicated log format:
// the Command envelope every Raft entry carries, the Result every Apply
// returns, and the records a snapshot is made of. The schema, with a comment
// per field, is fsm.proto beside this file; package fsm gives it meaning.
package fsmpb
