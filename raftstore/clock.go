package raftstore

import "github.com/metad/metad/clock"

// wall is the store's time source. hashicorp/raft keeps real time (its
// heartbeats, elections and Apply timeouts), and so do the store's waits
// on it, the network deadlines of its transport and the latencies its
// metrics measure: they all read this one clock.Real, never the time
// package.
var wall clock.Clock = clock.Real
