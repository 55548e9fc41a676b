package estimate

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/table"
)

// countOptions are the flags of the counts estimators.
type countOptions struct{}

const (
	countsHelp    = ""
	countsExample = ""
)

func addCountFlags(cmd *cobra.Command, o *countOptions) {}

func runCounts(o *Options, in table.Reader) error {
	return fmt.Errorf("%s: estimation for mechanism %q is not implemented yet", in.Name(), in.Meta()["mechanism"])
}
