package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/clock"
)

func newMembersCmd(o *clientOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "members",
		Short: "Show the gossip view of the node --addr points at",
		Long: `Show the gossip (memberlist) view of the node --addr points at: every server
it knows, its status (alive, suspect, dead, or left after a graceful shutdown)
and the addresses it advertises. Gossip finds servers and reports failures;
the Raft configuration (metad raft list-peers) decides who votes.`,
		Example: `  metad members`,
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd, func(ctx context.Context, c *client.Client) error {
				return callPrint(ctx, o, cmd, c, c.Cluster.Members, &metadpb.MembersRequest{}, func(tw *tabwriter.Writer, resp *metadpb.MembersResponse) {
					fmt.Fprintln(tw, "ID\tSTATUS\tGOSSIP\tRAFT\tGRPC\tINCARNATION")
					for _, m := range resp.Members {
						inc := m.Incarnation
						if inc == "" {
							inc = "-"
						}
						fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", m.NodeId, m.Status, m.GossipAddr, m.RaftAddr, m.GrpcAddr, inc)
					}
					if resp.ClusterId != "" {
						fmt.Fprintf(tw, "\ncluster id %s\n", resp.ClusterId)
					}
					tombstoneTable(tw, resp.Tombstones)
				})
			})
		},
	}
}

func newRaftCmd(o *clientOpts) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "raft",
		Short: "Inspect and change the Raft configuration",
		Long: `Inspect and change the Raft configuration through any member (changes are
forwarded to the leader). Servers are keyed by node id, never by address.`,
		Example: `  metad raft list-peers
  metad raft transfer-leader --to n2
  metad raft remove-peer n3`,
	}
	cmd.AddCommand(&cobra.Command{
		Use:     "list-peers",
		Short:   "List the servers of the Raft configuration",
		Example: `  metad raft list-peers`,
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd, func(ctx context.Context, c *client.Client) error {
				st, err := client.Call(ctx, c, c.Cluster.Status, &metadpb.StatusRequest{})
				if err != nil {
					return err
				}
				return o.print(cmd.OutOrStdout(), st, func(tw *tabwriter.Writer) {
					fmt.Fprintln(tw, "ID\tRAFT ADDRESS\tSTATE\tVOTER")
					for _, n := range st.Nodes {
						fmt.Fprintf(tw, "%s\t%s\t%s\t%v\n", n.NodeId, n.RaftAddr, n.State, n.Voter)
					}
				})
			})
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "remove-peer ID",
		Short: "Remove a server from the Raft configuration (on the leader)",
		Long: `Remove a server from the Raft configuration, through the leader. Use it for a
server that is gone for good (the leader also removes servers unreachable longer
than --dead-server-timeout on its own, never below quorum). The removal leaves
a tombstone on the server's incarnation: the leader never adds that incarnation
back, whatever gossip says, and the server, if it runs, stops with a message.
To bring it back, wipe its data dir and start it again (a new incarnation), or
lift the tombstone (metad raft untombstone). At feature level 1 (a 0.1.0 server
remains) only the leader remembers the removal, for 72h or until it steps down.
An id not in the configuration is refused (exit 3).`,
		Example: `  metad raft remove-peer node-3`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, func(ctx context.Context, c *client.Client) error {
				if err := requirePeer(ctx, c, args[0]); err != nil {
					return err
				}
				return callPrint(ctx, o, cmd, c, c.Cluster.RemovePeer, &metadpb.RemovePeerRequest{NodeId: args[0]}, func(tw *tabwriter.Writer, resp *metadpb.RemovePeerResponse) {
					fmt.Fprintf(tw, "removed %s at index %d\n", args[0], resp.Version)
					switch {
					case resp.Tombstoned && resp.Incarnation != "":
						fmt.Fprintf(tw, "tombstone on incarnation %s: it is never added back\n", resp.Incarnation)
					case resp.Tombstoned:
						fmt.Fprintf(tw, "tombstone on every incarnation of %s (its incarnation was unknown): lift it with metad raft untombstone %s\n", args[0], args[0])
					default:
						fmt.Fprintln(tw, "no tombstone (cluster feature level 1): the leader remembers the removal until it steps down")
					}
				})
			})
		},
	})
	var to string
	transfer := &cobra.Command{
		Use:   "transfer-leader",
		Short: "Hand leadership to another voter",
		Long: `Hand leadership to another voter (--to ID), or to the most up-to-date one.
The command waits until a new leader is known and prints it. Writes are refused
with a retryable NO_LEADER for the moment of the hand-off.`,
		Example: `  metad raft transfer-leader
  metad raft transfer-leader --to node-2`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd, func(ctx context.Context, c *client.Client) error {
				if to != "" {
					if err := requirePeer(ctx, c, to); err != nil {
						return err
					}
				}
				before, err := client.Call(ctx, c, c.Cluster.Status, &metadpb.StatusRequest{})
				if err != nil {
					return err
				}
				resp, err := client.Call(ctx, c, c.Cluster.TransferLeadership, &metadpb.TransferLeadershipRequest{ToNodeId: to})
				if err != nil {
					return err
				}
				if resp.LeaderId == "" || resp.LeaderId == before.LeaderId {
					resp.LeaderId = awaitNewLeader(ctx, c, before.LeaderId)
				}
				return o.print(cmd.OutOrStdout(), resp, func(tw *tabwriter.Writer) {
					fmt.Fprintf(tw, "leader is now %s (was %s)\n", resp.LeaderId, before.LeaderId)
				})
			})
		},
	}
	transfer.Flags().StringVar(&to, "to", "", "node id of the new leader (default: raft chooses)")
	cmd.AddCommand(transfer)
	cmd.AddCommand(newUntombstoneCmd(o))
	return cmd
}

// requirePeer refuses a server id that is not in the Raft configuration.
func requirePeer(ctx context.Context, c *client.Client, id string) error {
	st, err := client.Call(ctx, c, c.Cluster.Status, &metadpb.StatusRequest{})
	if err != nil {
		return err
	}
	var ids []string
	for _, n := range st.Nodes {
		if n.NodeId == id {
			return nil
		}
		ids = append(ids, n.NodeId)
	}
	return notFoundError{fmt.Errorf("%q is not in the Raft configuration (%s)", id, strings.Join(ids, ", "))}
}

// awaitNewLeader polls until a leader other than old is known (or ctx
// ends) and returns it; a transfer resolves when the old leader steps
// down, a moment before the others learn who won.
func awaitNewLeader(ctx context.Context, c *client.Client, old string) string {
	for {
		st, err := client.Call(ctx, c, c.Cluster.Status, &metadpb.StatusRequest{})
		if err == nil && st.LeaderId != "" && st.LeaderId != old {
			return st.LeaderId
		}
		select {
		case <-ctx.Done():
			if st != nil {
				return st.LeaderId
			}
			return ""
		case <-clock.After(clock.Real, 50*time.Millisecond):
		}
	}
}
