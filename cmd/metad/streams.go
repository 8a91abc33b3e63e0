package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
)

func newStreamCmd(o *clientOpts) *cobra.Command {
	cmd := &cobra.Command{Use: "stream", Short: "Create, describe, list, trim, seal and delete streams"}
	cmd.AddCommand(&cobra.Command{
		Use:     "create NAME",
		Short:   "Create a stream (idempotent by name)",
		Example: `  metad stream create orders`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := strconv.ParseUint(args[0], 10, 64); err == nil {
				return usageError{fmt.Errorf("stream name %q: a name of digits only would be read as a stream id by the other commands; add a letter", args[0])}
			}
			return o.run(cmd, func(ctx context.Context, c *client.Client) error {
				return callPrint(ctx, o, cmd, c, c.Metad.CreateStream, &metadpb.CreateStreamRequest{Name: args[0], RequestId: client.NewRequestID()}, func(tw *tabwriter.Writer, resp *metadpb.CreateStreamResponse) {
					fmt.Fprintf(tw, "stream %d %q (version %d)\n", resp.StreamId, args[0], resp.Version)
				})
			})
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:     "describe STREAM",
		Short:   "Show a stream: ends, epoch, status and live generations (linearizable)",
		Example: `  metad stream describe orders`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, func(ctx context.Context, c *client.Client) error {
				return callPrint(ctx, o, cmd, c, c.Metad.DescribeStream, streamRequest(args[0]), func(tw *tabwriter.Writer, resp *metadpb.DescribeStreamResponse) { describeTable(tw, resp) })
			})
		},
	})
	cmd.AddCommand(newStreamListCmd(o), newTrimCmd(o), newSealCmd(o), newStreamDeleteCmd(o), newStreamWatchCmd(o))
	return cmd
}

func describeTable(tw *tabwriter.Writer, resp *metadpb.DescribeStreamResponse) {
	s := resp.Stream
	fmt.Fprintf(tw, "stream\t%d\nname\t%s\nstatus\t%s\nwriter epoch\t%d\ntrim\t%d\ncommitted end\t%d\nversion\t%d\nread at index\t%d\n",
		s.Id, s.Name, s.Status, s.WriterEpoch, s.Trim, s.CommittedEnd, s.Version, resp.AppliedIndex)
	if len(resp.Generations) > 0 {
		fmt.Fprintln(tw, "\nVIEW\tGENERATION\tSTATUS\tRECORDS\tCOVERAGE\tVERSION")
		for _, g := range resp.Generations {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t[%d,%d)\t%d\n", g.View, g.Number, g.Status, g.Records,
				g.Coverage.GetStart(), g.Coverage.GetEnd(), g.Version)
		}
	}
}

func newStreamListCmd(o *clientOpts) *cobra.Command {
	var after uint64
	var limit uint32
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List streams",
		Example: `  metad stream list --limit 20`,
		Args:    exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd, func(ctx context.Context, c *client.Client) error {
				if limit == 0 {
					return usageError{errors.New("--limit 0: want at least 1")}
				}
				// One more than asked tells whether more follow.
				resp, err := client.Call(ctx, c, c.Metad.ListStreams, &metadpb.ListStreamsRequest{AfterId: after, Limit: limit + 1})
				if err != nil {
					return err
				}
				more := len(resp.Streams) > int(limit)
				if more {
					resp.Streams = resp.Streams[:limit]
				}
				err = o.print(cmd.OutOrStdout(), resp, func(tw *tabwriter.Writer) {
					fmt.Fprintln(tw, "ID\tNAME\tSTATUS\tEPOCH\tTRIM\tCOMMITTED END")
					for _, s := range resp.Streams {
						fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%d\n", s.Id, s.Name, s.Status, s.WriterEpoch, s.Trim, s.CommittedEnd)
					}
				})
				if err == nil && more {
					last := resp.Streams[len(resp.Streams)-1].Id
					fmt.Fprintf(cmd.ErrOrStderr(), "more streams follow: metad stream list --after %d\n", last)
				}
				return err
			})
		},
	}
	cmd.Flags().Uint64Var(&after, "after", 0, "list streams with ids above this")
	cmd.Flags().Uint32Var(&limit, "limit", 100, "at most this many (a line on stderr says when more follow)")
	return cmd
}

func newTrimCmd(o *clientOpts) *cobra.Command {
	return &cobra.Command{
		Use:     "trim STREAM OFFSET",
		Short:   "Advance a stream's trim point (never backwards, never past the committed end)",
		Example: `  metad stream trim 1 1000`,
		Args:    exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkStreamArg(args[0]); err != nil {
				return err
			}
			off, err := parseUint("offset", args[1])
			if err != nil {
				return err
			}
			return o.runStream(cmd, args[0], func(ctx context.Context, c *client.Client, id uint64) error {
				return callPrint(ctx, o, cmd, c, c.Metad.Trim, &metadpb.TrimRequest{StreamId: id, Offset: off, RequestId: client.NewRequestID()}, func(tw *tabwriter.Writer, resp *metadpb.TrimResponse) {
					fmt.Fprintf(tw, "trim %d, committed end %d (version %d)\n", resp.Trim, resp.CommittedEnd, resp.Version)
				})
			})
		},
	}
}

func newSealCmd(o *clientOpts) *cobra.Command {
	return &cobra.Command{
		Use:     "seal STREAM",
		Short:   "Seal a stream: no more appends",
		Example: `  metad stream seal 1`,
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkStreamArg(args[0]); err != nil {
				return err
			}
			return o.runStream(cmd, args[0], func(ctx context.Context, c *client.Client, id uint64) error {
				return callPrint(ctx, o, cmd, c, c.Metad.Seal, &metadpb.SealRequest{StreamId: id, RequestId: client.NewRequestID()}, func(tw *tabwriter.Writer, resp *metadpb.SealResponse) {
					fmt.Fprintf(tw, "sealed at committed end %d (version %d)\n", resp.CommittedEnd, resp.Version)
				})
			})
		},
	}
}

func parseUint(what, s string) (uint64, error) {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, usageError{fmt.Errorf("%s %q: not a non-negative integer", what, s)}
	}
	return v, nil
}
