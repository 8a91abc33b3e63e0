package node

import (
	"errors"
	"fmt"
	"runtime"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/metad/metad/api"
	"github.com/metad/metad/version"
)

// registerMetrics registers what the node itself adds to reg: the
// go-metrics bridge (raft's, raft-boltdb's and memberlist's own series),
// the raft store's metad_raft_* series, the gRPC metrics and build info.
// The packages started later register their own (api, repair, gc).
func (n *Server) registerMetrics(reg prometheus.Registerer) error {
	bridge, err := goMetricsBridge()
	if err != nil {
		return err
	}
	n.rpc = api.NewRPCMetrics(reg, serverClock)
	// The release and commit metad version prints, so a dashboard and the
	// CLI name one binary alike.
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "metad_build_info",
		Help: "Always 1; the labels say which metad binary runs (release, commit) and which metrics library raft reports through.",
		ConstLabels: prometheus.Labels{
			"version": version.Release, "commit": version.Commit(), "goversion": runtime.Version(), "gometrics": goMetricsLibrary,
		},
	})
	build.Set(1)
	if err := errors.Join(reg.Register(bridge), reg.Register(build), n.store.RegisterMetrics(reg)); err != nil {
		return fmt.Errorf("node: metrics: %w", err)
	}
	return nil
}

// registerMembershipMetrics registers the membership agent's series
// (metad_membership_*); the agent starts after the other metrics.
func (n *Server) registerMembershipMetrics(reg prometheus.Registerer) error {
	if err := n.agent.RegisterMetrics(reg); err != nil {
		return fmt.Errorf("node: metrics: %w", err)
	}
	return nil
}
