// Package anonymize is the `anonymize` command (not built yet).
package anonymize

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
)

// NewCmd builds the command.
func NewCmd() *cobra.Command {
	return cli.Root(&cobra.Command{
		Use:     "anonymize [<file>] [flags]",
		Short:   "Publish a table with l-diverted sensitive values (not implemented yet)",
		Example: "  $ anonymize --sensitive occupation --l 5 adult.csv -o adult.l5.parquet",
		RunE:    cli.NotImplemented,
	})
}

// Main runs the command and returns the exit code.
func Main() int { return cli.Run(NewCmd(), os.Args[1:], cli.StdStreams()) }
