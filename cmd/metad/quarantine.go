package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
)

// newQuarantineCmd is `metad quarantine list|lift`: the records a
// confirmed failure report took out of service, and lifting one once its
// bytes verify (the repair job lifts them by itself too).
func newQuarantineCmd(o *clientOpts) *cobra.Command {
	cmd := &cobra.Command{Use: "quarantine", Short: "List quarantined index records, lift one whose bytes verify"}
	cmd.AddCommand(newQuarantineListCmd(o), newQuarantineLiftCmd(o))
	return cmd
}

func newQuarantineListCmd(o *clientOpts) *cobra.Command {
	var limit uint32
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List quarantined index records of every stream, view and generation",
		Example: `  metad quarantine list`,
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, func(ctx context.Context, c *client.Client) error {
				resp := &metadpb.ListQuarantinedResponse{}
				var after *metadpb.IndexKey
				for {
					page, err := client.Call(ctx, c, c.Metad.ListQuarantined, &metadpb.ListQuarantinedRequest{After: after, Limit: limit})
					if err != nil {
						return err
					}
					resp.Records = append(resp.Records, page.Records...)
					if page.Next == nil || len(resp.Records) >= int(limit) {
						break
					}
					after = page.Next
				}
				return o.print(cmd.OutOrStdout(), resp, func(tw *tabwriter.Writer) {
					fmt.Fprintln(tw, "STREAM\tVIEW\tGENERATION\tSTART\tEND\tVERSION\tOBJECT")
					for _, r := range resp.Records {
						fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%d\t%s\n", r.Key.StreamId, r.Key.View, r.Key.Generation,
							r.Record.Range.Start, r.Record.Range.End, r.Version, r.Record.Object.Key)
					}
				})
			})
		},
	}
	cmd.Flags().Uint32Var(&limit, "limit", 1000, "at most this many")
	return cmd
}

func newQuarantineLiftCmd(o *clientOpts) *cobra.Command {
	return &cobra.Command{
		Use:   "lift STREAM VIEW GENERATION START VERSION",
		Short: "Verify a quarantined record's bytes in the object store and make it valid again",
		Long: `Lift the quarantine of one index record, as listed by 'metad quarantine list'.
The server first reads the record's object from its object store and checks
the bytes against their identity; if they do not verify the record stays
quarantined (exit 1, QUARANTINE_NOT_VERIFIED). VERSION is the record's
version as listed: the lift takes effect only if it is still that one.`,
		Example: `  metad quarantine lift 1 COMMITTED 0 100 42`,
		Args:    exactArgs(5),
		RunE: func(cmd *cobra.Command, args []string) error {
			key, version, err := parseLiftArgs(args)
			if err != nil {
				return err
			}
			return o.runStream(cmd, args[0], func(ctx context.Context, c *client.Client, id uint64) error {
				key.StreamId = id
				return callPrint(ctx, o, cmd, c, c.Metad.LiftQuarantine, &metadpb.LiftQuarantineRequest{Key: key, Version: version, RequestId: client.NewRequestID()}, func(tw *tabwriter.Writer, resp *metadpb.LiftQuarantineResponse) {
					fmt.Fprintf(tw, "lifted: record valid again at version %d\n", resp.Version)
				})
			})
		},
	}
}

func parseLiftArgs(args []string) (*metadpb.IndexKey, uint64, error) {
	view, err := parseView(args[1])
	if err != nil {
		return nil, 0, err
	}
	var nums [3]uint64
	for i, arg := range args[2:5] {
		n, err := parseUint([]string{"generation", "start", "version"}[i], arg)
		if err != nil {
			return nil, 0, err
		}
		nums[i] = n
	}
	// The stream (args[0], an id or a name) is filled in once known.
	return &metadpb.IndexKey{View: view, Generation: nums[0], Start: nums[1]}, nums[2], nil
}
