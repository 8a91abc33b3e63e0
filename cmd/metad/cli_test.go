package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"

	"github.com/metad/metad/client"
)

// Every command's --timeout bounds the whole command (only metad-bench's,
// cmd/metad-bench, is per call), and its help must say nothing else.
func TestTimeoutHelpBoundsTheWholeCommand(t *testing.T) {
	var walk func(cmd *cobra.Command)
	seen := 0
	walk = func(cmd *cobra.Command) {
		f := cmd.PersistentFlags().Lookup("timeout")
		if f == nil {
			f = cmd.InheritedFlags().Lookup("timeout")
		}
		if f != nil {
			seen++
			if strings.Contains(f.Usage, "call") || strings.Contains(f.Usage, "bench") {
				t.Errorf("%s --timeout: %q", cmd.CommandPath(), f.Usage)
			}
		}
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	if seen < 20 {
		t.Fatalf("only %d commands have --timeout", seen)
	}
}

// TestErrorLineHasOnePrefix: a failure wrapped around a client error is
// printed with one "metad:" prefix.
func TestErrorLineHasOnePrefix(t *testing.T) {
	err := fmt.Errorf("stream 99999: %w", &client.Error{Reason: "STREAM_NOT_FOUND", Code: codes.NotFound, Message: "stream 99999 does not exist"})
	got := errorLine(err)
	if want := "metad: stream 99999: STREAM_NOT_FOUND (NotFound): stream 99999 does not exist"; got != want {
		t.Fatalf("errorLine = %q, want %q", got, want)
	}
	if got := errorLine(errors.New("metad: plain")); got != "metad: plain" {
		t.Fatalf("errorLine = %q", got)
	}
}

// TestNegativeArgumentIsNamed: "resolve 1 COMMITTED -1" is told that -1 is
// not a valid argument, not that -1 is an unknown flag.
func TestNegativeArgumentIsNamed(t *testing.T) {
	root := newRootCmd()
	root.SetArgs([]string{"resolve", "1", "COMMITTED", "-1"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	err := root.Execute()
	if exitCode(err) != exitUsage || err == nil || !strings.Contains(err.Error(), "-1 is not a valid argument") {
		t.Fatalf("resolve 1 COMMITTED -1: %v (exit %d)", err, exitCode(err))
	}
	root = newRootCmd()
	root.SetArgs([]string{"stream", "describe", "-x"})
	root.SetOut(io.Discard)
	root.SetErr(io.Discard)
	if err := root.Execute(); exitCode(err) != exitUsage || !strings.Contains(err.Error(), "unknown shorthand flag") {
		t.Fatalf("an unknown flag: %v", err)
	}
}
