// Package perturb is the `perturb` command (not built yet).
package perturb

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
)

// NewCmd builds the command.
func NewCmd() *cobra.Command {
	return cli.Root(&cobra.Command{
		Use:     "perturb [<file>] [flags]",
		Short:   "Perturb encrypted rows with gamma-diagonal PRAM (not implemented yet)",
		Example: "  $ perturb --epsilon 1 alice.enc.parquet bob.enc.parquet -o release.parquet",
		RunE:    cli.NotImplemented,
	})
}

// Main runs the command and returns the exit code.
func Main() int { return cli.Run(NewCmd(), os.Args[1:], cli.StdStreams()) }
