package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/objectstore"
)

func newReadCmd(o *clientOpts) *cobra.Command {
	var objects clientObjectStore
	cmd := &cobra.Command{
		Use:   "read STREAM VIEW OFFSET",
		Short: "Read the bytes at an offset as a broker does: resolve, read, fall back",
		Long: `Read the bytes that hold (stream, view, offset) exactly as a broker's read path
does (the client library's Read): resolve to a pinned target, read its byte range
from the object store (--object-store, the servers' URL, or --object-dir) under
the target's identity, check them against the record's data checksum, and if
that fails report the candidate, exclude it and resolve again in the same view,
until --timeout.

The bytes go to stdout as they are; -o json prints the outcome, the target, the
bytes (base64), "unchecked": true when the record predates data checksums, and
every candidate that failed on the way. EOF, OFFSET_TRIMMED
and VIEW_END are answers (stderr, exit 0); a stream that does not exist exits
with status 3; a read that found no readable candidate in time exits with 4.`,
		Example: `  metad read 1 COMMITTED 0 --object-dir ./metad-data/objects
  metad read 1 TOPIC_COMPACTED 42 -o json
  metad read 1 COMMITTED 0 --object-store s3://bucket/metad --s3-endpoint http://127.0.0.1:8333 --s3-path-style`,
		Args: exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkStreamArg(args[0]); err != nil {
				return err
			}
			view, err := parseView(args[1])
			if err != nil {
				return err
			}
			off, err := parseUint("offset", args[2])
			if err != nil {
				return err
			}
			if err := o.validate(); err != nil {
				return err
			}
			// The store first (the cluster says where it is), then the
			// client that reads from it.
			var store objectstore.Store
			var id uint64
			if err := o.run(cmd, func(ctx context.Context, c *client.Client) (err error) {
				if id, err = resolveStream(ctx, c, args[0]); err != nil {
					return err
				}
				store, err = objects.open(ctx, cmd.Flags(), c)
				return err
			}); err != nil {
				return err
			}
			withStore := func(cfg *client.Config) { cfg.Objects = store }
			return o.runWith(cmd, withStore, func(ctx context.Context, c *client.Client) error {
				res, err := c.Read(ctx, id, view, off)
				if err != nil {
					printReadFailures(cmd, err)
					return err
				}
				return printRead(cmd, o, res)
			})
		},
	}
	objects.register(cmd.Flags())
	return cmd
}

// readJSON is `metad read -o json`'s shape.
type readJSON struct {
	Outcome      string         `json:"outcome"`
	Target       any            `json:"target,omitempty"`
	Data         []byte         `json:"data,omitempty"`
	Unchecked    bool           `json:"unchecked,omitempty"`
	Trim         uint64         `json:"trim,omitempty"`
	CommittedEnd uint64         `json:"committed_end,omitempty"`
	ViewEnd      uint64         `json:"view_end,omitempty"`
	Fallbacks    []fallbackJSON `json:"fallbacks,omitempty"`
}

type fallbackJSON struct {
	Candidate string `json:"candidate"`
	Version   uint64 `json:"version"`
	Kind      string `json:"kind"`
	Error     string `json:"error"`
}

func printRead(cmd *cobra.Command, o *clientOpts, res *client.ReadResult) error {
	if o.output == "json" {
		out := readJSON{Outcome: res.Outcome.String(), Data: res.Data, Unchecked: res.Unchecked, Trim: res.Trim,
			CommittedEnd: res.CommittedEnd, ViewEnd: res.ViewEnd}
		if res.Target != nil {
			t, err := protoJSONValue(res.Target)
			if err != nil {
				return err
			}
			out.Target = t
		}
		for _, f := range res.Fallbacks {
			out.Fallbacks = append(out.Fallbacks, fallbackJSON{candidateName(f.Candidate), f.Candidate.GetVersion(), f.Kind.String(), f.Err.Error()})
		}
		if err := writeJSON(cmd.OutOrStdout(), out); err != nil {
			return err
		}
	} else {
		if len(res.Fallbacks) > 0 {
			printFallbacks(cmd, res.Fallbacks)
		}
		if res.Outcome == metadpb.Outcome_TARGET {
			if _, err := cmd.OutOrStdout().Write(res.Data); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(cmd.ErrOrStderr(), outcomeLine(res))
		}
	}
	if res.Outcome == metadpb.Outcome_NOT_FOUND {
		return client.OutcomeError(res.Outcome)
	}
	return nil
}

func outcomeLine(res *client.ReadResult) string {
	switch res.Outcome {
	case metadpb.Outcome_EOF:
		return fmt.Sprintf("EOF: the offset is at or past the committed end %d", res.CommittedEnd)
	case metadpb.Outcome_OFFSET_TRIMMED:
		return fmt.Sprintf("OFFSET_TRIMMED: the stream is trimmed to %d", res.Trim)
	case metadpb.Outcome_VIEW_END:
		return fmt.Sprintf("VIEW_END: nothing survives in the view before %d", res.ViewEnd)
	}
	return res.Outcome.String()
}

// printReadFailures lists the candidates a failed read tried, and the
// resolve's own diagnostic when it ended on one.
func printReadFailures(cmd *cobra.Command, err error) {
	var re *client.ReadError
	if errors.As(err, &re) && len(re.Tried) > 0 {
		printFallbacks(cmd, re.Tried)
	}
	printDiagnostic(cmd, err)
}

func printFallbacks(cmd *cobra.Command, tried []client.CandidateFailure) {
	tw := tabwriter.NewWriter(cmd.ErrOrStderr(), 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FAILED CANDIDATE\tVERSION\tKIND\tERROR")
	for _, f := range tried {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%v\n", candidateName(f.Candidate), f.Candidate.GetVersion(), f.Kind, f.Err)
	}
	_ = tw.Flush()
}
