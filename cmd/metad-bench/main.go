// Command metad-bench drives a running metad cluster with one workload and
// prints what it measured: throughput, latency percentiles and errors by
// reason (PERFORMANCE.md has figures; bench/compare.sh runs it next to
// etcd). It was `metad bench`; it is its own binary so that the load
// generator and its runner (bench/load) do not ship inside the server.
//
//	metad-bench --workload commit-append -c 16 --duration 30s
//	metad-bench --workload read --object-store s3://bucket/metad --s3-endpoint http://127.0.0.1:8333 --s3-path-style
//
// Its client flags are metad's own (--addr, -o, --timeout, the TLS and
// token flags, the object-store flags), parsed by the same code
// (cmd/internal/cliflags). It exits 0 on success, 2 on bad usage, 4 when
// the cluster could not be reached, 1 on any other failure.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/metad/metad/client"
	"github.com/metad/metad/cmd/internal/cliflags"
)

func main() {
	cmd := newBenchCmd()
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "metad-bench:", strings.TrimPrefix(err.Error(), "metad-bench: "))
		os.Exit(exitCode(err))
	}
}

// Exit statuses: a subset of metad's (README "Exit status").
const (
	exitFailure   = 1
	exitUsage     = 2
	exitRetryable = 4
)

func exitCode(err error) int {
	switch {
	case errors.Is(err, cliflags.ErrUsage), errors.Is(err, client.ErrInvalidArgument):
		return exitUsage
	case errors.Is(err, client.ErrRetryable), errors.Is(err, client.ErrUnavailable),
		errors.Is(err, context.DeadlineExceeded):
		return exitRetryable
	}
	return exitFailure
}

// usageError marks a mistake in how the command was called.
func usageError(err error) error { return cliflags.Usage(err) }

// clientOpts are metad's client flags, as every metad client command has
// them; --timeout here is the deadline of each call, not of the run.
type clientOpts struct {
	addr    string
	output  string
	timeout time.Duration
	auth    cliflags.Auth
}

func (o *clientOpts) register(cmd *cobra.Command) {
	addr := os.Getenv("METAD_ADDR")
	if addr == "" {
		addr = "127.0.0.1:7420"
	}
	fs := cmd.Flags()
	fs.StringVar(&o.addr, "addr", addr, "gRPC address of any member, comma-separated for several (env METAD_ADDR)")
	fs.StringVarP(&o.output, "output", "o", "table", "output format: table or json")
	fs.DurationVar(&o.timeout, "timeout", 10*time.Second, "deadline of each call (not of the whole run)")
	o.auth.Register(fs)
}

func (o *clientOpts) validate() error {
	if o.output != "table" && o.output != "json" {
		return usageError(fmt.Errorf("--output %q: want table or json", o.output))
	}
	if err := cliflags.CheckAddrs("--addr", o.addr); err != nil {
		return err
	}
	if o.timeout <= 0 {
		return usageError(fmt.Errorf("--timeout %v: want a positive duration", o.timeout))
	}
	return nil
}

// printJSON writes v as JSON, or calls table to write a table.
func (o *clientOpts) printJSON(w io.Writer, v any, table func(tw *tabwriter.Writer)) error {
	if o.output == "json" {
		b, err := json.MarshalIndent(v, "", "  ")
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
