// Package load drives a closed-loop load test and summarises it: a fixed
// number of workers each issue one operation at a time, back to back, for a
// fixed time, and every operation's latency is kept.
//
// It is shared by metad-bench (cmd/metad-bench) and the etcd yardstick
// (bench/etcdload, its own module) so that both sides of the side-by-side
// comparison are measured by the same code: the same warm-up rule, the same
// clock reads around each call, the same percentile definition. A
// difference in the numbers is then a difference in the servers, not in
// the rulers.
//
// Why closed loop: the question the comparison asks is "how many
// operations per second does the store sustain, and how long does each
// take, with N callers waiting on it", which is what a broker's request
// handlers do. An open-loop (fixed arrival rate) test answers a different
// question and hides the saturation point behind queueing.
//
// Why every latency is kept rather than bucketed: a run of a few minutes
// at tens of thousands of operations per second is a few million
// durations, tens of MiB; sorting them gives exact percentiles with no
// bucket-width error to explain. Percentiles use the nearest-rank
// definition: pN is the smallest latency at least N% of the operations
// did not exceed.
//
// Only successful operations enter throughput and the latency summary;
// failures are counted by the reason the caller's Classify gives them, so
// a run that "got faster" by failing is visible at once.
//
// The package reads the clock and starts goroutines (it is an adapter, not
// part of the pure core); Run owns every goroutine it starts and joins
// them before returning.
package load
