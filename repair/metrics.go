package repair

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	results *prometheus.CounterVec
	backlog prometheus.Gauge
	found   prometheus.Gauge
	scans   prometheus.Counter
	// timeouts and checkBacklog watch the bounds that keep a slow check
	// of an object's bytes from holding up other repairs.
	timeouts     *prometheus.CounterVec
	checkBacklog prometheus.Gauge
}

// newMetrics declares the package's metrics and registers them with reg
// (nil: unregistered, for tests).
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		results: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_repair_results_total",
			Help: "Repair outcomes by result: REBUILT, HEALTHY, PROVEN_TRIMMED, PROVEN_EOF, EVIDENCE_MISSING, OBJECT_UNUSABLE, REJECTED_<code>, PROPOSE_FAILED.",
		}, []string{"result"}),
		backlog: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "metad_repair_backlog_requests",
			Help: "Repair requests waiting in the leader's queue.",
		}),
		found: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "metad_repair_scan_unhealthy_records",
			Help: "Unhealthy generation-0 records found by the last scan pass.",
		}),
		scans: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_repair_scan_passes_total",
			Help: "Periodic repair scan passes completed.",
		}),
		timeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_repair_timeouts_total",
			Help: "Repairs that ran out of their bound, by work: request (a repair a resolve asked for, past RequestTimeout) or check (a periodic re-verification of an object's bytes, past TimePerPass).",
		}, []string{"work"}),
		checkBacklog: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "metad_repair_check_backlog_requests",
			Help: "Requested repairs waiting for the verify lane (they check an object's bytes first).",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.results, m.backlog, m.found, m.scans, m.timeouts, m.checkBacklog)
	}
	return m
}
