package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/clock"
)

// errUnhealthy is a cluster that cannot serve now (no leader, or no
// quorum): exit status 4, for scripts that wait for it to recover.
var errUnhealthy = errors.New("the cluster cannot serve")

func newEndpointCmd(o *clientOpts) *cobra.Command {
	cmd := &cobra.Command{Use: "endpoint", Short: "Check the cluster's members one by one"}
	health := &cobra.Command{
		Use:   "health",
		Short: "Check every member: reachable, leader known, caught up; exit 0 only with a quorum",
		Long: `Ask the member at --addr for the Raft configuration, then ask every member on
its own gRPC address whether it is ready to take traffic (the standard gRPC
health service, the same verdict as /readyz: a member of the configuration
that knows a leader and has applied nearly all of the leader's commit
index: within 1000 entries). Unready members show why, as the member at
--addr sees them.

Exit status 0 when the cluster has a leader and a quorum of healthy voters,
even if some member is unhealthy (it is listed); 4 when it has no leader or
no quorum, or the member at --addr cannot be reached.`,
		Example: `  metad endpoint health
  metad endpoint health --addr 127.0.0.1:7430 -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd, func(ctx context.Context, c *client.Client) error {
				st, err := client.Call(ctx, c, c.Cluster.Status, &metadpb.StatusRequest{})
				if err != nil {
					return err
				}
				fillUnreachableAddrs(ctx, c, st)
				rows := checkEndpoints(ctx, o, st)
				h := judgeCluster(st)
				if err := printEndpoints(cmd.OutOrStdout(), o.output, rows, h, st.LeaderId); err != nil {
					return err
				}
				return h.verdict(st.LeaderId)
			})
		},
	}
	cmd.AddCommand(health)
	return cmd
}

// endpointHealth is one member's answer.
type endpointHealth struct {
	Endpoint string `json:"endpoint"`
	NodeID   string `json:"node_id"`
	Voter    bool   `json:"voter"`
	Healthy  bool   `json:"healthy"`
	// Took is how long the member took to answer, a duration as every
	// -o json writes one ("0.001900s").
	Took  jsonDuration `json:"took"`
	Error string       `json:"error,omitempty"`
}

// checkEndpoints asks every member of st, at once, for its health.
func checkEndpoints(ctx context.Context, o *clientOpts, st *metadpb.StatusResponse) []endpointHealth {
	rows := make([]endpointHealth, len(st.Nodes))
	var wg sync.WaitGroup
	for i, n := range st.Nodes {
		rows[i] = endpointHealth{Endpoint: n.GrpcAddr, NodeID: n.NodeId, Voter: n.Voter}
		wg.Go(func() { checkEndpoint(ctx, o, n, st, &rows[i]) })
	}
	wg.Wait()
	return rows
}

func checkEndpoint(ctx context.Context, o *clientOpts, n *metadpb.NodeStatus, st *metadpb.StatusResponse, row *endpointHealth) {
	if n.GrpcAddr == "" {
		row.Error = "no gRPC address known"
		return
	}
	cfg := o.auth.Config(n.GrpcAddr)
	cfg.Timeout, cfg.SpreadCalls = o.timeout, true
	c, err := client.New(cfg)
	if err != nil {
		row.Error = err.Error()
		return
	}
	defer c.Close()
	start := clock.Real.Now()
	resp, err := c.Health.Check(ctx, &healthpb.HealthCheckRequest{})
	row.Took = jsonDuration(clock.Since(clock.Real, start))
	switch {
	case err != nil:
		row.Error = shortReason(err.Error())
	case resp.Status != healthpb.HealthCheckResponse_SERVING:
		row.Error = "not ready: " + whyNotReady(n, st)
	default:
		row.Healthy = true
	}
}

// whyNotReady says why a member is not ready, as the member that answered
// the status sees it.
func whyNotReady(n *metadpb.NodeStatus, st *metadpb.StatusResponse) string {
	var leaderCommit uint64
	for _, l := range st.Nodes {
		if l.NodeId == st.LeaderId {
			leaderCommit = l.CommitIndex
		}
	}
	switch {
	case n.Error != "":
		return n.Error
	case n.LeaderId == "" && n.State != "Leader":
		return "it knows no leader"
	case leaderCommit > n.AppliedIndex:
		return fmt.Sprintf("applied %d, the leader has committed %d", n.AppliedIndex, leaderCommit)
	}
	return "see its /readyz"
}

func printEndpoints(w io.Writer, output string, rows []endpointHealth, h clusterHealth, leader string) error {
	if output == "json" {
		return writeJSON(w, struct {
			Endpoints []endpointHealth `json:"endpoints"`
			Leader    string           `json:"leader_id"`
			Quorum    bool             `json:"quorum"`
			Summary   string           `json:"summary"`
		}{rows, leader, !h.NoLeader && !h.NoQuorum, h.summary(leader)})
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENDPOINT\tNODE\tVOTER\tHEALTH\tTOOK\tERROR")
	for _, r := range rows {
		health := "healthy"
		if !r.Healthy {
			health = "UNHEALTHY"
		}
		took := float64(time.Duration(r.Took).Microseconds()) / 1000
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%.1fms\t%s\n", r.Endpoint, r.NodeID, r.Voter, health, took, r.Error)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, h.summary(leader))
	return err
}
