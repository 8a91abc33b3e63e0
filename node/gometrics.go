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
// and gometrics_hashicorp.go, chosen by the same build tag as compat, name
// the library compat forwards to, and installGoMetricsSink makes a
// Prometheus sink its global sink.
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

// installGoMetricsSink declares the series of goMetricSummaries and
// goMetricCounters on a new Prometheus sink of the library compat
// forwards to (gometrics_armon.go or gometrics_hashicorp.go names it) and
// makes it that library's global sink, with hostname prefixes (they would
// rename series per host) and runtime metrics (the Go collector exports
// those already) off.
func installGoMetricsSink() (prometheus.Collector, error) {
	var summaries []gmSummary
	for _, m := range goMetricSummaries {
		summaries = append(summaries, gmSummary{Name: m.Name, Help: m.Help})
	}
	var counters []gmCounter
	for _, m := range goMetricCounters {
		counters = append(counters, gmCounter{Name: m.Name, Help: m.Help})
	}
	// The sink registers itself on its own registry; nodes register it on
	// theirs.
	sink, err := gmNewSink(gmSinkOpts{Expiration: goMetricsExpiry, Registerer: prometheus.NewRegistry(),
		Name: "metad_gometrics_bridge", SummaryDefinitions: summaries, CounterDefinitions: counters})
	if err != nil {
		return nil, fmt.Errorf("node: go-metrics sink: %w", err)
	}
	cfg := gmDefaultConfig("")
	cfg.EnableHostname, cfg.EnableRuntimeMetrics = false, false
	if _, err := gmNewGlobal(cfg, sink); err != nil {
		return nil, fmt.Errorf("node: go-metrics global: %w", err)
	}
	return sink, nil
}
