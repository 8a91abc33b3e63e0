// Package longrun holds the real-process tests whose subject is time
// itself: a follower partitioned for five minutes, a removed server watched
// for two. They prove the membership policy over the spans the policy
// promises to ride out, not over a shortened stand-in, so each takes
// minutes; they run in parallel with each other and in their own package,
// so `go test ./...` runs them beside the other packages instead of after
// the integration package's own tests.
//
// TestRestartsAtSize is the same kind of test with size for its subject:
// a rolling restart and a wiped follower of a cluster holding 2M index
// records, whose restores and InstallSnapshot take seconds each.
//
// The faster membership tests (readiness, gossip before raft, amnesia) stay
// in package integration.
package longrun
