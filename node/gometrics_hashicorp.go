//go:build hashicorpmetrics

package node

import (
	metrics "github.com/hashicorp/go-metrics"
	gmprom "github.com/hashicorp/go-metrics/prometheus"
)

// goMetricsLibrary names the library compat forwards to in a build with
// -tags hashicorpmetrics.
const goMetricsLibrary = "github.com/hashicorp/go-metrics"

// The names of that library the bridge (gometrics.go) uses: the two
// libraries have one API under two import paths, so this file binds only
// names and the bridge has one body.
type (
	gmSummary  = gmprom.SummaryDefinition
	gmCounter  = gmprom.CounterDefinition
	gmSinkOpts = gmprom.PrometheusOpts
)

var (
	gmNewSink       = gmprom.NewPrometheusSinkFrom
	gmDefaultConfig = metrics.DefaultConfig
	gmNewGlobal     = metrics.NewGlobal
)
