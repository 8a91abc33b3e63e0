package gc

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	deletions   prometheus.Counter
	marks       *prometheus.CounterVec
	refusals    *prometheus.CounterVec
	deleting    prometheus.Gauge
	passSeconds prometheus.Histogram
}

// newMetrics declares the package's metrics and registers them with reg
// (nil: unregistered, for tests).
func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		deletions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_gc_deletions_total", Help: "Objects physically deleted by GC.",
		}),
		marks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_gc_transitions_total", Help: "Objects GC moved to DELETING or DELETED, by transition.",
		}, []string{"transition"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_gc_refusals_total", Help: "GC commands refused by the state machine (races with new references or pins), by code.",
		}, []string{"code"}),
		deleting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "metad_gc_deleting_objects", Help: "DELETING objects seen by the last GC pass.",
		}),
		passSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "metad_gc_pass_duration_seconds", Help: "Duration of GC passes.",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 8),
		}),
	}
	if reg != nil {
		reg.MustRegister(m.deletions, m.marks, m.refusals, m.deleting, m.passSeconds)
	}
	return m
}
