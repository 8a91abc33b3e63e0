package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
	"github.com/metad/metad/clock"
)

func newResolveCmd(o *clientOpts) *cobra.Command {
	var excludes []string
	cmd := &cobra.Command{
		Use:   "resolve STREAM VIEW OFFSET",
		Short: "Resolve one read to a pinned physical target, or show why it cannot be",
		Long: `Resolve (stream, view, offset) exactly as a broker would. The answer is a
target (index record, object, identity, byte range, pin), EOF, OFFSET_TRIMMED,
VIEW_END or NOT_FOUND. A retryable failure prints every candidate tried and why
it was refused, and exits with status 4.`,
		Example: `  metad resolve 1 COMMITTED 42
  metad resolve 1 TOPIC_COMPACTED 0 --exclude 1/120@57 -o json`,
		Args: exactArgs(3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkStreamArg(args[0]); err != nil {
				return err
			}
			v, ok := metadpb.View_value[strings.ToUpper(args[1])]
			if !ok || v == 0 {
				return usageError{fmt.Errorf("view %q: want COMMITTED or TOPIC_COMPACTED", args[1])}
			}
			off, err := parseUint("offset", args[2])
			if err != nil {
				return err
			}
			var ex []*metadpb.CandidateRef
			for _, e := range excludes {
				ref, err := parseCandidate(0, metadpb.View(v), e) // the stream's id once known
				if err != nil {
					return usageError{err}
				}
				ex = append(ex, ref)
			}
			return o.runStream(cmd, args[0], func(ctx context.Context, c *client.Client, id uint64) error {
				for _, ref := range ex {
					ref.Key.StreamId = id
				}
				req := &metadpb.ResolveRequest{StreamId: id, View: metadpb.View(v), Offset: off, Exclude: ex, Holder: "metad-cli"}
				resp, err := resolveKeepingDiagnostic(ctx, c, req)
				if err != nil {
					printDiagnostic(cmd, err)
					return err
				}
				if err := o.print(cmd.OutOrStdout(), resp, func(tw *tabwriter.Writer) { resolveTable(tw, resp) }); err != nil {
					return err
				}
				if resp.Outcome == metadpb.Outcome_NOT_FOUND {
					return fmt.Errorf("stream %d: %w", id, client.OutcomeError(resp.Outcome))
				}
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&excludes, "exclude", nil, "GENERATION/START@VERSION of a candidate to skip (repeatable)")
	return cmd
}

// resolveKeepingDiagnostic retries a retryable resolve failure until the
// deadline, like client.Call, but keeps the last failure that carried a
// per-candidate diagnostic: when the deadline ends the loop, the operator
// still learns why every candidate was refused, not a bare
// DEADLINE_EXCEEDED.
func resolveKeepingDiagnostic(ctx context.Context, c *client.Client, req *metadpb.ResolveRequest) (*metadpb.ResolveResponse, error) {
	var diagnosed *client.Error
	for {
		resp, err := c.Metad.Resolve(ctx, req)
		if err == nil {
			return resp, nil
		}
		e, ok := client.AsError(client.FromStatus(err))
		if !ok {
			return nil, err
		}
		if e.Diagnostic != nil {
			diagnosed = e
		}
		if !e.Retryable() || ctx.Err() != nil {
			return nil, lastDiagnosed(e, diagnosed)
		}
		select {
		case <-ctx.Done():
			return nil, lastDiagnosed(e, diagnosed)
		case <-clock.After(clock.Real, e.RetryDelay):
		}
	}
}

// lastDiagnosed returns last, or when it carries no diagnostic (a deadline
// that expired in flight) the last one that did, wrapped as retryable.
func lastDiagnosed(last, diagnosed *client.Error) error {
	if last.Diagnostic != nil || diagnosed == nil {
		return last
	}
	return fmt.Errorf("%s; the last attempt's diagnostic: %w", last.Message, diagnosed)
}

func parseCandidate(stream uint64, view metadpb.View, s string) (*metadpb.CandidateRef, error) {
	var gen, start, version uint64
	if _, err := fmt.Sscanf(s, "%d/%d@%d", &gen, &start, &version); err != nil {
		return nil, fmt.Errorf("--exclude %q: want GENERATION/START@VERSION", s)
	}
	return &metadpb.CandidateRef{Key: &metadpb.IndexKey{StreamId: stream, View: view, Generation: gen, Start: start}, Version: version}, nil
}

func resolveTable(tw *tabwriter.Writer, r *metadpb.ResolveResponse) {
	fmt.Fprintf(tw, "outcome\t%s\n", r.Outcome)
	switch r.Outcome {
	case metadpb.Outcome_TARGET:
		t := r.Target
		fmt.Fprintf(tw, "generation\t%d (%s)\nrecord\t[%d,%d) version %d checksum %08x\nresolved\t[%d,%d)\nobject\t%s\nidentity\t%s\nbytes\t%d+%d\npin\t%d until %s\n",
			t.Key.Generation, t.Key.View, t.RecordRange.Start, t.RecordRange.End, t.Version, t.Checksum,
			t.Resolved.Start, t.Resolved.End, t.Object.Key, t.Object.Identity, t.Bytes.Offset, t.Bytes.Length,
			t.PinId, t.PinExpiry.AsTime().Format("15:04:05.000"))
	case metadpb.Outcome_OFFSET_TRIMMED:
		fmt.Fprintf(tw, "trim\t%d\n", r.Trim)
	case metadpb.Outcome_EOF:
		fmt.Fprintf(tw, "committed end\t%d\n", r.CommittedEnd)
	case metadpb.Outcome_VIEW_END:
		fmt.Fprintf(tw, "view end\t%d\n", r.ViewEnd)
	}
	fmt.Fprintf(tw, "attempts\t%d\n", r.Attempts)
	if len(r.Tried) > 0 {
		fmt.Fprintln(tw, "\nREFUSED CANDIDATE\tVERSION\tREASON\tDETAIL")
		for _, ref := range r.Tried {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", candidateName(ref.Candidate), ref.Candidate.GetVersion(), ref.Reason, ref.Detail)
		}
	}
}

func candidateName(c *metadpb.CandidateRef) string {
	if c.GetKey() == nil {
		return "-"
	}
	return fmt.Sprintf("g%d/%d", c.Key.Generation, c.Key.Start)
}

// printDiagnostic shows a failed resolve's per-candidate diagnostic.
func printDiagnostic(cmd *cobra.Command, err error) {
	e, ok := client.AsError(err)
	if !ok || e.Diagnostic == nil {
		return
	}
	d := e.Diagnostic
	tw := tabwriter.NewWriter(cmd.ErrOrStderr(), 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "resolve failed after %d attempts: %s\n", d.Attempts, d.Cause)
	if d.Deadline != nil {
		fmt.Fprintf(tw, "deadline %s\n", d.Deadline.AsTime().Format("15:04:05.000"))
	}
	fmt.Fprintln(tw, "CANDIDATE\tVERSION\tREASON\tDETAIL")
	for _, r := range d.Tried {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", candidateName(r.Candidate), r.Candidate.GetVersion(), r.Reason, r.Detail)
	}
	tw.Flush()
}
