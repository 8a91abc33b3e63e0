//go:build hashicorpmetrics

package node

import (
	"time"

	metrics "github.com/hashicorp/go-metrics"
	gmprom "github.com/hashicorp/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
)

// goMetricsLibrary names the library compat forwards to in this build.
const goMetricsLibrary = "github.com/hashicorp/go-metrics"

// installGoMetricsSink makes a Prometheus sink the global sink of
// hashicorp/go-metrics, where compat forwards in a build with
// -tags hashicorpmetrics: this file binds the library's types, installSink
// (gometrics.go) is the body.
func installGoMetricsSink() (prometheus.Collector, error) {
	return installSink(goMetricsLib[gmprom.SummaryDefinition, gmprom.CounterDefinition, *gmprom.PrometheusSink]{
		summary: func(name []string, help string) gmprom.SummaryDefinition {
			return gmprom.SummaryDefinition{Name: name, Help: help}
		},
		counter: func(name []string, help string) gmprom.CounterDefinition {
			return gmprom.CounterDefinition{Name: name, Help: help}
		},
		sink: func(expiry time.Duration, reg prometheus.Registerer, name string, s []gmprom.SummaryDefinition, c []gmprom.CounterDefinition) (*gmprom.PrometheusSink, error) {
			return gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{Expiration: expiry, Registerer: reg, Name: name, SummaryDefinitions: s, CounterDefinitions: c})
		},
		global: func(k *gmprom.PrometheusSink) error {
			cfg := metrics.DefaultConfig("")
			cfg.EnableHostname, cfg.EnableRuntimeMetrics = false, false
			_, err := metrics.NewGlobal(cfg, k)
			return err
		},
	})
}
