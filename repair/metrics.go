package repair

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	results *prometheus.CounterVec
	backlog prometheus.Gauge
	found   prometheus.Gauge
	scans   prometheus.Counter
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
	}
	if reg != nil {
		reg.MustRegister(m.results, m.backlog, m.found, m.scans)
	}
	return m
}
