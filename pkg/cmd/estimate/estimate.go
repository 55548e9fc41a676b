// Package estimate is the `estimate` command (not built yet).
package estimate

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
)

// NewCmd builds the command.
func NewCmd() *cobra.Command {
	return cli.Root(&cobra.Command{
		Use:     "estimate [<file>] [flags]",
		Short:   "Estimate distributions and counts from a release (not implemented yet)",
		Example: "  $ estimate --method mle release.csv",
		RunE:    cli.NotImplemented,
	})
}

// Main runs the command and returns the exit code.
func Main() int { return cli.Run(NewCmd(), os.Args[1:], cli.StdStreams()) }
