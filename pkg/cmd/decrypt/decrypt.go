// Package decrypt is the `decrypt` command (not built yet).
package decrypt

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
)

// NewCmd builds the command.
func NewCmd() *cobra.Command {
	return cli.Root(&cobra.Command{
		Use:     "decrypt [<file>] [flags]",
		Short:   "Decrypt a perturbed release with the curators' keys (not implemented yet)",
		Example: "  $ decrypt --key alice.key --key bob.key release.parquet | estimate",
		RunE:    cli.NotImplemented,
	})
}

// Main runs the command and returns the exit code.
func Main() int { return cli.Run(NewCmd(), os.Args[1:], cli.StdStreams()) }
