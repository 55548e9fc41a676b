package estimate

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/table"
)

// pramOptions are the flags of the pram estimators.
type pramOptions struct{}

const (
	pramHelp    = ""
	pramExample = ""
)

func addPRAMFlags(cmd *cobra.Command, o *pramOptions) {}

func runPRAM(o *Options, in table.Reader) error {
	return fmt.Errorf("%s: estimation for mechanism %q is not implemented yet", in.Name(), in.Meta()["mechanism"])
}
