package estimate

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/table"
)

// ddpsOptions are the flags of the ddps estimators.
type ddpsOptions struct{}

const (
	ddpsHelp    = ""
	ddpsExample = ""
)

func addDDPSFlags(cmd *cobra.Command, o *ddpsOptions) {}

func runDDPS(o *Options, in table.Reader) error {
	return fmt.Errorf("%s: estimation for mechanism %q is not implemented yet", in.Name(), in.Meta()["mechanism"])
}
