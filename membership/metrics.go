package membership

import "github.com/prometheus/client_golang/prometheus"

// decisionMetrics counts the reconcile loop's decisions, one increment per
// logged decision line: an action when it is applied (or fails), a hold
// when it first comes into force. Labels: decision (add-nonvoter, promote,
// remove, update-address, hold) and reason (the hold class, "applied" or
// "failed" for actions).
type decisionMetrics struct {
	total *prometheus.CounterVec
}

func newDecisionMetrics() *decisionMetrics {
	return &decisionMetrics{total: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "metad_membership_decisions_total",
		Help: "Membership decisions of this node's reconcile loop while it led, by decision and reason (each is also one log line).",
	}, []string{"decision", "reason"})}
}

func (m *decisionMetrics) count(d decision, outcome string) {
	reason := outcome
	if d.Kind == actHold {
		reason = string(d.Hold)
	}
	m.total.WithLabelValues(d.Kind.String(), reason).Inc()
}

// RegisterMetrics registers the agent's metrics:
// metad_membership_decisions_total{decision,reason} and
// metad_membership_foreign_refusals_total{where}.
func (a *Agent) RegisterMetrics(reg prometheus.Registerer) error {
	if err := reg.Register(a.decisions.total); err != nil {
		return err
	}
	return reg.Register(a.foreign.total)
}
