package client

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// readMetrics are Read's counters. They exist whether or not
// Config.Metrics registers them, so Read counts unconditionally.
type readMetrics struct {
	unchecked prometheus.Counter
	corrupt   prometheus.Counter
}

func newReadMetrics(reg prometheus.Registerer) readMetrics {
	m := readMetrics{
		unchecked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_client_reads_unchecked_total",
			Help: "Reads that returned bytes without a data checksum to check them against: their records predate data checksums (feature level 3).",
		}),
		corrupt: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_client_reads_corrupt_total",
			Help: "Candidates a read refused as CORRUPT (bytes failing the identity's digest or the record's data checksum) and reported.",
		}),
	}
	if reg != nil {
		m.unchecked = register(reg, m.unchecked)
		m.corrupt = register(reg, m.corrupt)
	}
	return m
}

// register registers c, or returns the counter already registered under
// its name: several clients of one process share one registry.
func register(reg prometheus.Registerer, c prometheus.Counter) prometheus.Counter {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(prometheus.Counter); ok {
			return existing
		}
	}
	return c
}
