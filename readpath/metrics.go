package readpath

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/metad/metad/fsm"
)

// newCacheEvents declares the resolve cache's metric (countingCache).
func newCacheEvents() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "metad_resolve_cache_total",
		Help: "Resolve cache lookups by result (hit, miss) and invalidations.",
	}, []string{"event"})
}

// pinCollector reports the pins held in this node's state and the age of
// the oldest, computed at scrape time from local (possibly lagging) state.
type pinCollector struct {
	read  func(func(*fsm.Machine) error) error
	held  *prometheus.Desc
	age   *prometheus.Desc
	limit int
}

func newPinCollector(read func(func(*fsm.Machine) error) error) *pinCollector {
	return &pinCollector{
		read:  read,
		held:  prometheus.NewDesc("metad_pins_held", "Pins in the replicated state (not yet released or pruned), as this node sees it.", nil, nil),
		age:   prometheus.NewDesc("metad_pins_oldest_age_seconds", "Age, in machine time, of the oldest pin held (among the first 10000 by id).", nil, nil),
		limit: 10000,
	}
}

func (c *pinCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.held; ch <- c.age }

func (c *pinCollector) Collect(ch chan<- prometheus.Metric) {
	var held int
	var oldest float64
	_ = c.read(func(m *fsm.Machine) error {
		held = m.Counts().Pins
		now := m.Clock()
		for _, p := range m.Pins(0, c.limit) {
			if age := float64(now-(p.Expiry-p.TTL)) / 1e9; age > oldest {
				oldest = age
			}
		}
		return nil
	})
	ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, float64(held))
	ch <- prometheus.MustNewConstMetric(c.age, prometheus.GaugeValue, oldest)
}
