// Command metad is the metad server and its command-line client.
//
//	metad server                     run a server (see metad server --help)
//	metad status                     the cluster, one line per server
//	metad members                    the gossip view of one node
//	metad stream create|describe|trim|seal|list
//	metad append STREAM ...          write bytes and commit them
//	metad index publish|list         index generations
//	metad resolve STREAM VIEW OFFSET resolve one read
//	metad raft list-peers|remove-peer|transfer-leader
//	metad snapshot save|inspect|restore  backups of a live cluster
//	metad tls ca create|cert create  certificates for a development cluster
//	metad data inspect|recover       a stopped server's data dir; quorum-loss recovery
//
// Client commands find the cluster with --addr or METAD_ADDR (default
// 127.0.0.1:7420; any member will do) and print tables, or JSON with -o json.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{
		Use:   "metad",
		Short: "metad: the consensus-backed metadata service of a streaming storage system",
		Long: `metad is the source of truth for reading streams back: per stream it holds the
committed end, trim point, append evidence and generation-numbered index
records, replicated by Raft on a 3- or 5-node cluster, and it resolves every
read (stream, view, offset) to one pinned physical target.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newServerCmd())
	addClientCommands(root)
	root.AddCommand(newSnapshotCmd(), newDataCmd())
	root.AddCommand(newTLSCmd())
	if err := root.ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "metad:", strings.TrimPrefix(err.Error(), "metad: "))
		os.Exit(exitCode(err))
	}
}
