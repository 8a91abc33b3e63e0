// Package readpath holds the plumbing of metad's read path on one node:
// the resolve cache (cache.go), a positive-only hint the resolver pins and
// rechecks before it trusts it (DESIGN.md §8). api's handlers call into it.
//
// It sits between api and the packages it serves: api and node import it;
// it imports resolver, fsm and raftstore, never api or node
// (architecture_test.go).
package readpath
