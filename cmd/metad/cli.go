package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/client"
)

// clientOpts are the flags every client command shares.
type clientOpts struct {
	addr    string
	output  string
	timeout time.Duration
}

func (o *clientOpts) register(cmd *cobra.Command) { o.registerWithTimeout(cmd, 10*time.Second) }

// registerWithTimeout registers the flags with another default --timeout,
// for commands that move a lot of data.
func (o *clientOpts) registerWithTimeout(cmd *cobra.Command, timeout time.Duration) {
	addr := os.Getenv("METAD_ADDR")
	if addr == "" {
		addr = "127.0.0.1:7420"
	}
	cmd.PersistentFlags().StringVar(&o.addr, "addr", addr, "gRPC address of any member, comma-separated for several (env METAD_ADDR)")
	cmd.PersistentFlags().StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	cmd.PersistentFlags().DurationVar(&o.timeout, "timeout", timeout, "deadline for the whole command (metad bench: for each call)")
}

func (o *clientOpts) validate() error {
	if o.output != "table" && o.output != "json" {
		return usageError{fmt.Errorf("--output %q: want table or json", o.output)}
	}
	return nil
}

// run dials the cluster and runs fn under the command's deadline.
func (o *clientOpts) run(cmd *cobra.Command, fn func(ctx context.Context, c *client.Client) error) error {
	if err := o.validate(); err != nil {
		return err
	}
	// SpreadCalls: a command talks to the member it names (`metad members`
	// shows that member's view), not to whoever leads.
	c, err := client.New(client.Config{Addrs: strings.Split(o.addr, ","), Timeout: o.timeout, Holder: "metad-cli", SpreadCalls: true})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	defer cancel()
	return fn(ctx, c)
}

// print writes msg as JSON, or calls table to write a table.
func (o *clientOpts) print(w io.Writer, msg proto.Message, table func(tw *tabwriter.Writer)) error {
	if o.output == "json" {
		b, err := protojson.MarshalOptions{Multiline: true, EmitUnpopulated: true}.Marshal(msg)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

// printJSON writes v (not a protobuf message) as JSON, or calls table.
func (o *clientOpts) printJSON(w io.Writer, v any, table func(tw *tabwriter.Writer)) error {
	if o.output == "json" {
		return writeJSON(w, v)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

// usageError marks mistakes in how a command was called.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// notFoundError marks a thing the command looked for and did not find.
type notFoundError struct{ error }

func (e notFoundError) Unwrap() error { return e.error }

// exitCode: 2 for usage errors, 3 when the cluster said the thing does not
// exist, 4 for retryable failures (try again), 1 otherwise.
func exitCode(err error) int {
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	var nf notFoundError
	if errors.As(err, &nf) {
		return 3
	}
	if e, ok := client.AsError(err); ok {
		switch {
		case e.Code.String() == "NotFound":
			return 3
		case e.Retryable():
			return 4
		}
	}
	return 1
}

func addClientCommands(root *cobra.Command) {
	o := &clientOpts{}
	for _, cmd := range []*cobra.Command{
		newStatusCmd(o), newMembersCmd(o), newStreamCmd(o), newAppendCmd(o),
		newIndexCmd(o), newResolveCmd(o), newReadCmd(o), newRaftCmd(o), newBenchCmd(o),
	} {
		o.register(cmd)
		root.AddCommand(cmd)
	}
}

// exactArgs is cobra.ExactArgs with the mistake marked as bad usage.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageError{fmt.Errorf("%s accepts %d arg(s), received %d", cmd.CommandPath(), n, len(args))}
		}
		return nil
	}
}
