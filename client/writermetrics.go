package client

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// writerMetrics are a Writer's metrics. They exist whether or not
// Config.Metrics registers them; Writers of one process registering on one
// registry share them (the buffered-bytes gauge is then their sum).
type writerMetrics struct {
	flushes      prometheus.Counter
	objects      prometheus.Counter
	appends      prometheus.Counter
	uploaded     prometheus.Counter
	retries      prometheus.Counter
	flushSeconds prometheus.Histogram
	refusals     *prometheus.CounterVec
	buffered     prometheus.Gauge
}

func newWriterMetrics(reg prometheus.Registerer) *writerMetrics {
	m := &writerMetrics{
		flushes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_client_writer_flushes_total",
			Help: "Flushes a Writer started: each takes everything buffered and commits it as one or more stream-set objects.",
		}),
		objects: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_client_writer_objects_committed_total",
			Help: "Stream-set objects a Writer committed (CommitObject answered with a version).",
		}),
		appends: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_client_writer_stream_appends_committed_total",
			Help: "Per-stream appends a Writer committed, one per stream per object.",
		}),
		uploaded: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_client_writer_uploaded_bytes_total",
			Help: "Bytes of objects a Writer uploaded to the object store.",
		}),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "metad_client_writer_retries_total",
			Help: "Retries of a Writer's indeterminate opens, commits (under the same request id) and failed uploads.",
		}),
		flushSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "metad_client_writer_flush_duration_seconds",
			Help:    "How long a Writer's flush took, from taking the buffer to answering its last Append.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "metad_client_writer_refusals_total",
			Help: "Per-stream appends of a Writer's objects the servers refused, by reason (STALE_EPOCH: fenced; APPEND_NOT_AT_END: compare-and-set lost).",
		}, []string{"reason"}),
		buffered: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "metad_client_writer_buffered_bytes",
			Help: "Bytes of Appends made and not yet answered: buffered, or in the flush under way (bounded by MaxBufferedBytes).",
		}),
	}
	if reg != nil {
		m.flushes = registerShared(reg, m.flushes)
		m.objects = registerShared(reg, m.objects)
		m.appends = registerShared(reg, m.appends)
		m.uploaded = registerShared(reg, m.uploaded)
		m.retries = registerShared(reg, m.retries)
		m.flushSeconds = registerShared(reg, m.flushSeconds)
		m.refusals = registerShared(reg, m.refusals)
		m.buffered = registerShared(reg, m.buffered)
	}
	return m
}

// registerShared registers c, or returns the collector already registered
// under its name (several Writers of one process share one registry).
func registerShared[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	return c
}
