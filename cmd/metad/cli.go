package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/metad/metad/client"
	"github.com/metad/metad/cmd/internal/cliflags"
)

// clientOpts are the flags every client command shares.
type clientOpts struct {
	addr    string
	output  string
	timeout time.Duration
	auth    cliflags.Auth
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
	cmd.PersistentFlags().DurationVar(&o.timeout, "timeout", timeout, "deadline for the whole command")
	o.auth.Register(cmd.PersistentFlags())
}

func (o *clientOpts) validate() error {
	if o.output != "table" && o.output != "json" {
		return usageError{fmt.Errorf("--output %q: want table or json", o.output)}
	}
	if err := cliflags.CheckAddrs("--addr", o.addr); err != nil {
		return err
	}
	if o.timeout <= 0 {
		return usageError{fmt.Errorf("--timeout %v: want a positive duration", o.timeout)}
	}
	return o.auth.Check()
}

// run dials the cluster and runs fn under the command's deadline.
func (o *clientOpts) run(cmd *cobra.Command, fn func(ctx context.Context, c *client.Client) error) error {
	return o.runWith(cmd, nil, fn)
}

// runWith is run with the client's configuration adjusted by adjust (nil:
// none), e.g. to give it an object store to read from.
func (o *clientOpts) runWith(cmd *cobra.Command, adjust func(*client.Config), fn func(ctx context.Context, c *client.Client) error) error {
	if err := o.validate(); err != nil {
		return err
	}
	// SpreadCalls: a command talks to the member it names (`metad members`
	// shows that member's view), not to whoever leads.
	cfg := o.auth.Config(o.addr)
	cfg.Timeout, cfg.Holder, cfg.SpreadCalls = o.timeout, "metad-cli", true
	if adjust != nil {
		adjust(&cfg)
	}
	c, err := client.New(cfg)
	if err != nil {
		// New does no I/O but reading the TLS files: what fails here is a
		// setting (a certificate without --tls-ca-file, a file that does
		// not load), bad usage.
		return usageError{err}
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
	defer cancel()
	err = fn(ctx, c)
	if client.Reason(err) == client.ReasonUnavailable {
		if tlsErr := diagnoseTLS(cmd.Context(), cfg, o.timeout); tlsErr != nil {
			return tlsErr
		}
	}
	return err
}

// diagnoseTLS tells a TLS mismatch from an unreachable cluster after a
// connection failure: gRPC reports both as UNAVAILABLE (exit 4, try
// again), but no retry mends a certificate from a foreign CA, an expired
// one, or one side speaking TLS and the other not. The first member whose
// handshake fails for such a reason is reported (exit 1).
func diagnoseTLS(ctx context.Context, cfg client.Config, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, min(timeout, 5*time.Second))
	defer cancel()
	for _, addr := range cfg.Addrs {
		if err := client.DiagnoseTLS(ctx, strings.TrimSpace(addr), cfg.TLS); err != nil {
			return err
		}
	}
	return nil
}

// print writes msg as JSON, or calls table to write a table.
func (o *clientOpts) print(w io.Writer, msg proto.Message, table func(tw *tabwriter.Writer)) error {
	if o.output == "json" {
		return writeProtoJSON(w, msg)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	table(tw)
	return tw.Flush()
}

// callPrint makes one call of rpc with req and prints its answer as o's
// output asks: JSON, or the table table writes. It is the shape of most
// client commands.
func callPrint[Req any, Resp proto.Message](ctx context.Context, o *clientOpts, cmd *cobra.Command, c *client.Client,
	rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req, table func(*tabwriter.Writer, Resp)) error {
	resp, err := client.Call(ctx, c, rpc, req)
	if err != nil {
		return err
	}
	return o.print(cmd.OutOrStdout(), resp, func(tw *tabwriter.Writer) { table(tw, resp) })
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

func addClientCommands(root *cobra.Command) {
	o := &clientOpts{}
	for _, cmd := range []*cobra.Command{
		newStatusCmd(o), newMembersCmd(o), newStreamCmd(o), newAppendCmd(o),
		newIndexCmd(o), newResolveCmd(o), newReadCmd(o), newObjectCmd(o), newEvidenceCmd(o),
		newQuarantineCmd(o), newRaftCmd(o), newEndpointCmd(o),
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
