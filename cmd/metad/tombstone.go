package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
)

func newUntombstoneCmd(o *clientOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "untombstone ID",
		Short: "Lift the tombstone remove-peer left on a server (operator only)",
		Long: `Lift the tombstone that remove-peer left on node ID, through the leader. A
tombstone keeps the removed incarnation of a server out of the cluster whatever
gossip says; once it is lifted, the leader adds that server back as a non-voter
if it is alive (and promotes it once caught up). The usual way back for a
removed server is to wipe its data dir and start it again, which gives it a new
incarnation that no tombstone names; lift a tombstone only for a server
removed by mistake. An id without a tombstone is refused (exit 3).`,
		Example: `  metad raft untombstone node-3`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, func(ctx context.Context, c *client.Client) error {
				return callPrint(ctx, o, cmd, c, c.Cluster.Untombstone, &metadpb.UntombstoneRequest{NodeId: args[0]}, func(tw *tabwriter.Writer, resp *metadpb.UntombstoneResponse) {
					fmt.Fprintf(tw, "lifted the tombstone of %s at index %d\n", args[0], resp.Version)
				})
			})
		},
	}
}

// tombstoneTable lists the tombstones under a status or members table.
func tombstoneTable(tw *tabwriter.Writer, tombs []*metadpb.Tombstone) {
	if len(tombs) == 0 {
		return
	}
	fmt.Fprintln(tw, "\nTOMBSTONED\tINCARNATION\tINDEX\tREMOVED AT")
	for _, t := range tombs {
		inc := t.Incarnation
		if inc == "" {
			inc = "(every)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", t.NodeId, inc, t.Version, t.RemovedAt.AsTime().UTC().Format("2006-01-02T15:04:05Z"))
	}
}
