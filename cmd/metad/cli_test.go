package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
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
