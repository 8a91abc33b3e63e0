// Command metad is the metad server and its command-line client.
//
//	metad server                     run a server (see metad server --help)
//	metad version                    the release and commit (also --version)
//	metad status                     the cluster, one line per server
//	metad endpoint health            every member's readiness; exit 0 with a quorum
//	metad members                    the gossip view of one node
//	metad stream create|describe|list|trim|seal|delete
//	metad append STREAM ...          write bytes and commit them
//	metad read STREAM VIEW OFFSET    the broker read path: resolve, read, fall back
//	metad index publish|list|retire  index generations
//	metad resolve STREAM VIEW OFFSET resolve one read
//	metad object describe|register|commit|pin|release|report
//	metad object commit STREAM=FILE ...  one object, one append per stream, all or none
//	metad evidence list STREAM       a stream's append evidence
//	metad raft list-peers|remove-peer|untombstone|transfer-leader
//	metad snapshot save|inspect|diff|restore  backups of a live cluster
//	metad tls ca create|cert create  certificates for a development cluster
//	metad data inspect|recover       a stopped server's data dir; quorum-loss recovery
//
// Client commands find the cluster with --addr or METAD_ADDR (default
// 127.0.0.1:7420; any member will do) and print tables, or JSON with -o json.
// Every command exits 0 on success, 1 on failure, 2 on bad usage, 3 when
// the thing asked for does not exist and 4 on a retryable failure
// (exitcode.go).
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

func main() {
	root := newRootCmd()
	if err := root.ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, errorLine(err))
		os.Exit(exitCode(err))
	}
}

// errorLine is how a command's failure is printed: one "metad:" prefix,
// however many layers of the message carry one ("metad: stream 9: metad:
// STREAM_NOT_FOUND ..." reads "metad: stream 9: STREAM_NOT_FOUND ...").
func errorLine(err error) string {
	return "metad: " + strings.ReplaceAll(strings.TrimPrefix(err.Error(), "metad: "), ": metad: ", ": ")
}

// negativeArgument explains a flag error that is really a negative number
// given as an argument ("resolve 1 COMMITTED -1" reads -1 as a flag):
// offsets, ids and counts are never negative.
func negativeArgument(err error) error {
	rest, ok := strings.CutPrefix(err.Error(), "unknown shorthand flag: ")
	_, arg, found := strings.Cut(rest, " in ")
	if !ok || !found {
		return err
	}
	if _, convErr := strconv.ParseInt(arg, 10, 64); convErr != nil {
		return err
	}
	return fmt.Errorf("%s is not a valid argument: offsets, ids and counts are never negative", arg)
}

// newRootCmd builds the whole command tree.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "metad",
		Short: "metad: the consensus-backed metadata service of a streaming storage system",
		Long: `metad is the source of truth for reading streams back: per stream it holds the
committed end, trim point, append evidence and generation-numbered index
records, replicated by Raft on a 3- or 5-node cluster, and it resolves every
read (stream, view, offset) to one pinned physical target.`,
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{negativeArgument(err)} })
	root.AddCommand(newServerCmd(), newVersionCmd())
	addClientCommands(root)
	root.AddCommand(newSnapshotCmd(), newDataCmd())
	root.AddCommand(newTLSCmd())
	refuseUnknownSubcommands(root)
	return root
}

// refuseUnknownSubcommands makes every command that only groups others
// (metad, metad stream, ...) fail with bad usage on a name it does not
// know, instead of printing help and succeeding. With no argument it
// prints its help.
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, sub := range cmd.Commands() {
		refuseUnknownSubcommands(sub)
	}
	if !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		return usageError{fmt.Errorf("unknown command %q for %q; see %s --help", args[0], cmd.CommandPath(), cmd.CommandPath())}
	}
}
