package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/metad/metad/api/metadpb"
	"github.com/metad/metad/client"
)

func newStreamWatchCmd(o *clientOpts) *cobra.Command {
	var from uint64
	var duration time.Duration
	cmd := &cobra.Command{
		Use:   "watch STREAM",
		Short: "Follow a stream's changes, one line per event, until interrupted",
		Long: `Follow a stream's changes (appends, trims, seals, generations published or
retired, deletion) in commit order, one line per event, resuming at another
member after a failure without missing or repeating one. The first line,
STARTED, is the stream's state where the watch begins (with --from, it
follows the changes the member still held after V). --from V starts after
version V instead of now. The watch runs until interrupted, until --for
has passed, or until the stream is deleted; --timeout does not bound it.`,
		Example: `  metad stream watch 1
  metad stream watch 1 --from 1200 -o json`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkStreamArg(args[0]); err != nil {
				return err
			}
			if duration < 0 {
				return usageError{fmt.Errorf("--for %s: must not be negative", duration)}
			}
			if err := o.validate(); err != nil {
				return err
			}
			var id uint64
			if err := o.run(cmd, func(ctx context.Context, c *client.Client) (err error) {
				id, err = resolveStream(ctx, c, args[0])
				return err
			}); err != nil {
				return err
			}
			return o.watch(cmd.Context(), cmd.OutOrStdout(), id, from, duration)
		},
	}
	cmd.Flags().Uint64Var(&from, "from", 0, "deliver changes after this version (0: from now)")
	cmd.Flags().DurationVar(&duration, "for", 0, "stop after this long (0: until interrupted)")
	return cmd
}

// watch prints every event until interrupted, --for ends, or the stream is
// deleted.
func (o *clientOpts) watch(ctx context.Context, w io.Writer, id, from uint64, duration time.Duration) error {
	// The members' TLS and token settings, as every client command; not
	// SpreadCalls: Watch balances over the members by itself.
	cfg := o.auth.Config(o.addr)
	cfg.Timeout, cfg.Holder = o.timeout, "metad-cli"
	c, err := client.New(cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, duration)
		defer cancel()
	}
	started := false
	for ev, err := range c.Watch(ctx, id, from) {
		if err != nil {
			if started && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
				return nil // interrupted or --for elapsed: a normal end
			}
			return err // (a watch that never started says why)
		}
		started = true
		if err := o.printEvent(w, ev); err != nil {
			return err
		}
	}
	return nil
}

func (o *clientOpts) printEvent(w io.Writer, ev *metadpb.WatchEvent) error {
	if o.output == "json" {
		return writeProtoJSONLine(w, ev)
	}
	_, err := fmt.Fprintln(w, eventLine(ev))
	return err
}

// eventLine is one event as text: version, kind, then what changed.
func eventLine(ev *metadpb.WatchEvent) string {
	kind := strings.TrimPrefix(ev.Kind.String(), "WATCH_")
	state := fmt.Sprintf("end=%d trim=%d epoch=%d %s", ev.CommittedEnd, ev.Trim, ev.WriterEpoch, ev.Status)
	switch ev.Kind {
	case metadpb.WatchEventKind_WATCH_APPENDED:
		return fmt.Sprintf("%d %s [%d,%d) %s@%s bytes=%d+%d %s", ev.Version, kind, ev.Range.GetStart(), ev.Range.GetEnd(),
			ev.Object.GetKey(), ev.Object.GetIdentity(), ev.Bytes.GetOffset(), ev.Bytes.GetLength(), state)
	case metadpb.WatchEventKind_WATCH_GENERATION_PUBLISHED, metadpb.WatchEventKind_WATCH_GENERATION_RETIRED:
		return fmt.Sprintf("%d %s %s/%d %s", ev.Version, kind, ev.View, ev.Generation, state)
	case metadpb.WatchEventKind_WATCH_DELETED:
		return fmt.Sprintf("%d %s", ev.Version, kind)
	}
	return fmt.Sprintf("%d %s %s", ev.Version, kind, state)
}
