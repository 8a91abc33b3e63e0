package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/metad/metad/version"
)

// versionString is what `metad version` and `metad --version` print.
func versionString() string {
	return fmt.Sprintf("metad %s (commit %s)", version.Release, version.Commit())
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the release and the commit this binary was built from",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionString())
			return err
		},
	}
}
