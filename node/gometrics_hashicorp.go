//go:build hashicorpmetrics

package node

import (
	"fmt"

	metrics "github.com/hashicorp/go-metrics"
	gmprom "github.com/hashicorp/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// goMetricsLibrary names the library compat forwards to in this build.
const goMetricsLibrary = "github.com/hashicorp/go-metrics"

// installGoMetricsSink makes a Prometheus sink the global sink of
// hashicorp/go-metrics, where compat forwards in a build with
// -tags hashicorpmetrics.
func installGoMetricsSink() (prometheus.Collector, error) {
	opts := gmprom.PrometheusOpts{
		Expiration: goMetricsExpiry,
		// The sink registers itself here; nodes register it on their own.
		Registerer: prometheus.NewRegistry(),
		Name:       "metad_gometrics_bridge",
	}
	for _, m := range goMetricSummaries {
		opts.SummaryDefinitions = append(opts.SummaryDefinitions, gmprom.SummaryDefinition{Name: m.Name, Help: m.Help})
	}
	for _, m := range goMetricCounters {
		opts.CounterDefinitions = append(opts.CounterDefinitions, gmprom.CounterDefinition{Name: m.Name, Help: m.Help})
	}
	sink, err := gmprom.NewPrometheusSinkFrom(opts)
	if err != nil {
		return nil, fmt.Errorf("node: go-metrics sink: %w", err)
	}
	cfg := metrics.DefaultConfig("")
	cfg.EnableHostname = false       // a hostname prefix on gauges would rename series per host
	cfg.EnableRuntimeMetrics = false // the Go collector already exports runtime metrics
	if _, err := metrics.NewGlobal(cfg, sink); err != nil {
		return nil, fmt.Errorf("node: go-metrics global: %w", err)
	}
	return sink, nil
}
