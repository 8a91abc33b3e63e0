package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Only bench's --timeout is per call; every other command's bounds the
// whole command, and its help must not talk about bench.
func TestTimeoutHelpNamesBenchOnlyOnBench(t *testing.T) {
	var walk func(cmd *cobra.Command)
	seen := 0
	walk = func(cmd *cobra.Command) {
		f := cmd.PersistentFlags().Lookup("timeout")
		if f == nil {
			f = cmd.InheritedFlags().Lookup("timeout")
		}
		if f != nil {
			seen++
			isBench := strings.HasPrefix(cmd.CommandPath(), "metad bench")
			if mentions := strings.Contains(f.Usage, "call"); mentions != isBench {
				t.Errorf("%s --timeout: %q", cmd.CommandPath(), f.Usage)
			}
			if strings.Contains(f.Usage, "bench") {
				t.Errorf("%s --timeout help names bench: %q", cmd.CommandPath(), f.Usage)
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
