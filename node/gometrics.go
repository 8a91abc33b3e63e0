package node

import (
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
