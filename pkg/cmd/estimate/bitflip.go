package estimate

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/table"
)

// bitflipOptions are the flags of the bitflip estimators.
type bitflipOptions struct{}

const (
	bitflipHelp    = ""
	bitflipExample = ""
)

func addBitflipFlags(cmd *cobra.Command, o *bitflipOptions) {}

func runBitflip(o *Options, in table.Reader) error {
	return fmt.Errorf("%s: estimation for mechanism %q is not implemented yet", in.Name(), in.Meta()["mechanism"])
}
