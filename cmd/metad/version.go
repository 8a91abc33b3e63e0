package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/metad/metad/version"
)

// versionString is what `metad version` and `metad --version` print.
func versionString() string {
	return fmt.Sprintf("metad %s (commit %s)", version.Release, version.Commit())
}

// versionInfo is `metad version -o json`.
type versionInfo struct {
	Release string `json:"release"`
	Commit  string `json:"commit"`
	Go      string `json:"go"`
}

func newVersionCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the release and the commit this binary was built from",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch output {
			case "json":
				return writeJSON(cmd.OutOrStdout(), versionInfo{Release: version.Release, Commit: version.Commit(), Go: runtime.Version()})
			case "table":
				_, err := fmt.Fprintln(cmd.OutOrStdout(), versionString())
				return err
			}
			return usageError{fmt.Errorf("--output %q: want table or json", output)}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "table", "output format: table or json")
	return cmd
}
