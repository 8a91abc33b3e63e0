package node

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Raft, raft-boltdb and memberlist report their metrics through
// github.com/hashicorp/go-metrics/compat, which forwards to the global sink
// of github.com/armon/go-metrics unless the binary is built with
// -tags hashicorpmetrics, and then to that of hashicorp/go-metrics. Both
// globals discard everything until given a sink, so without a bridge raft's
// own metrics (raft_commitTime, raft_fsm_apply, raft_leader_lastContact,
// raft_snapshot_*, raft_state_*) never reach /metrics. gometrics_armon.go
// and gometrics_hashicorp.go, chosen by the same build tag as compat,
// install a Prometheus sink as the global sink of the library compat
// forwards to.
//
// The global is per process, so one sink is installed once and every node
// started in the process (tests start several) registers that same
// collector on its own registry: in a process with several nodes the raft
// series are their sum, which only tests do.

// goMetricsExpiry is how long a raft series not updated stays exported
// (per-peer series of a removed server, say). Series declared below never
// expire.
const goMetricsExpiry = 5 * time.Minute

// goMetric is a raft series declared up front: exported from the start
// (at zero) with help text. Name is go-metrics' key; the Prometheus name
// joins it with '_' (raft.commitTime is raft_commitTime).
type goMetric struct {
	Name []string
	Help string
}

// Timings are Prometheus summaries in milliseconds (go-metrics' unit).
var (
	goMetricSummaries = []goMetric{
		{[]string{"raft", "commitTime"}, "Raft: milliseconds from the leader dispatching an entry to its commit."},
		{[]string{"raft", "fsm", "apply"}, "Raft: milliseconds the state machine took to apply one entry."},
		{[]string{"raft", "fsm", "applyBatch"}, "Raft: milliseconds the state machine took to apply one batch."},
		{[]string{"raft", "leader", "lastContact"}, "Raft (leader): milliseconds since a follower was last heard from, sampled per follower."},
		{[]string{"raft", "leader", "dispatchLog"}, "Raft (leader): milliseconds to write a batch of entries to the leader's log."},
		{[]string{"raft", "snapshot", "create"}, "Raft: milliseconds to create a snapshot (state machine clone and store setup)."},
		{[]string{"raft", "snapshot", "persist"}, "Raft: milliseconds to write a snapshot to disk."},
		{[]string{"raft", "fsm", "snapshot"}, "Raft: milliseconds the state machine took to clone itself for a snapshot."},
		{[]string{"raft", "fsm", "restore"}, "Raft: milliseconds the state machine took to restore a snapshot."},
		{[]string{"raft", "rpc", "appendEntries"}, "Raft (follower): milliseconds to handle an AppendEntries RPC."},
	}
	goMetricCounters = []goMetric{
		{[]string{"raft", "apply"}, "Raft (leader): entries proposed."},
		{[]string{"raft", "state", "leader"}, "Raft: times this node became leader."},
		{[]string{"raft", "state", "follower"}, "Raft: times this node became follower."},
		{[]string{"raft", "state", "candidate"}, "Raft: times this node became candidate (started an election)."},
		{[]string{"raft", "transition", "heartbeat_timeout"}, "Raft: elections started because the leader was not heard from."},
		{[]string{"raft", "transition", "leader_lease_timeout"}, "Raft: times the leader stepped down for lack of contact with a quorum."},
	}
)

var (
	goMetricsOnce      sync.Once
	goMetricsCollector prometheus.Collector
	goMetricsErr       error
)

// goMetricsBridge installs the process's go-metrics sink on first use and
// returns it as a Prometheus collector.
func goMetricsBridge() (prometheus.Collector, error) {
	goMetricsOnce.Do(func() {
		goMetricsCollector, goMetricsErr = installGoMetricsSink()
	})
	return goMetricsCollector, goMetricsErr
}

// goMetricsLib is one go-metrics library as the bridge uses it: armon's
// and hashicorp's have the same API under different import paths, so
// their types differ and each build-tagged file (gometrics_armon.go,
// gometrics_hashicorp.go) binds only these constructors; installSink is
// the one body both run. S and C are the library's summary and counter
// definitions, K its Prometheus sink.
type goMetricsLib[S, C any, K prometheus.Collector] struct {
	summary func(name []string, help string) S
	counter func(name []string, help string) C
	// sink makes the Prometheus sink (registering itself on reg) that
	// exports the declared series.
	sink func(expiry time.Duration, reg prometheus.Registerer, name string, summaries []S, counters []C) (K, error)
	// global makes k the library's global sink, with hostname prefixes
	// (they would rename series per host) and runtime metrics (the Go
	// collector exports those already) off.
	global func(k K) error
}

// installSink declares the series of goMetricSummaries and
// goMetricCounters on a new Prometheus sink of lib and makes it lib's
// global sink.
func installSink[S, C any, K prometheus.Collector](lib goMetricsLib[S, C, K]) (prometheus.Collector, error) {
	var summaries []S
	for _, m := range goMetricSummaries {
		summaries = append(summaries, lib.summary(m.Name, m.Help))
	}
	var counters []C
	for _, m := range goMetricCounters {
		counters = append(counters, lib.counter(m.Name, m.Help))
	}
	// The sink registers itself on its own registry; nodes register it on
	// theirs.
	sink, err := lib.sink(goMetricsExpiry, prometheus.NewRegistry(), "metad_gometrics_bridge", summaries, counters)
	if err != nil {
		return nil, fmt.Errorf("node: go-metrics sink: %w", err)
	}
	if err := lib.global(sink); err != nil {
		return nil, fmt.Errorf("node: go-metrics global: %w", err)
	}
	return sink, nil
}
