package api

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/metad/metad/resolver"
)

// resolveMetrics are the read path's metrics.
type resolveMetrics struct {
	outcomes      *prometheus.CounterVec
	attempts      prometheus.Histogram
	fallbackDepth prometheus.Histogram
	recheckAborts prometheus.Counter
	reports       *prometheus.CounterVec
	unchecked     prometheus.Counter
}

func newResolveMetrics(reg prometheus.Registerer) *resolveMetrics {
	m := &resolveMetrics{
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_resolve_outcomes_total",
			Help: "Resolve answers by outcome: TARGET, EOF, OFFSET_TRIMMED, VIEW_END, NOT_FOUND, UNAVAILABLE (retryable), INVALID (bad request).",
		}, []string{"outcome"}),
		attempts: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "metad_resolve_attempts",
			Help:    "Plans per resolve call (1 unless the recheck, a repair or a transient failure forced another).",
			Buckets: []float64{1, 2, 3, 4, 6, 8},
		}),
		fallbackDepth: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "metad_resolve_fallback_depth",
			Help:    "Candidates refused before a resolve's answer (0: the newest candidate was used).",
			Buckets: []float64{0, 1, 2, 3, 5, 8, 13},
		}),
		recheckAborts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_resolve_recheck_aborts_total",
			Help: "Pinned candidates abandoned because the linearizable recheck found the state changed.",
		}),
		reports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_failure_reports_total",
			Help: "Readers' candidate-failure reports by outcome: confirmed by the object store (recorded), or unconfirmed (nothing changed).",
		}, []string{"outcome"}),
		unchecked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_resolve_targets_unchecked_total",
			Help: "Targets returned whose record carries no data checksum (committed before feature level 3): readers read their bytes unchecked.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.outcomes, m.attempts, m.fallbackDepth, m.recheckAborts, m.reports, m.unchecked)
	}
	return m
}

// observe accounts for one resolve call.
func (m *resolveMetrics) observe(outcome string, res resolver.Result, tried []resolver.Refusal) {
	m.outcomes.WithLabelValues(outcome).Inc()
	if res.Attempts > 0 {
		m.attempts.Observe(float64(res.Attempts))
	}
	depth := 0
	for _, r := range tried {
		if r.Candidate.Version != 0 {
			depth++
		}
		if r.Reason == resolver.ReasonRecheckChanged {
			m.recheckAborts.Inc()
		}
	}
	if outcome == "TARGET" {
		m.fallbackDepth.Observe(float64(depth))
		if !res.Target.Data.Set {
			m.unchecked.Inc()
		}
	}
}
