// Package encrypt is the `encrypt` command (not built yet).
package encrypt

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
)

// NewCmd builds the command.
func NewCmd() *cobra.Command {
	return cli.Root(&cobra.Command{
		Use:     "encrypt [<file>] [flags]",
		Short:   "Encrypt sampled columns with a one-time pad (not implemented yet)",
		Example: "  $ sample --secret s.key -m 4000 alice.csv | encrypt --key-out alice.key -o alice.enc.parquet",
		RunE:    cli.NotImplemented,
	})
}

// Main runs the command and returns the exit code.
func Main() int { return cli.Run(NewCmd(), os.Args[1:], cli.StdStreams()) }
