package perturb

import "github.com/spf13/cobra"

// bitflipOptions are the flags of --mechanism bitflip.
type bitflipOptions struct{}

const (
	bitflipHelp    = ""
	bitflipExample = ""
)

func addBitflipFlags(cmd *cobra.Command, o *bitflipOptions) {}

func runBitflip(o *Options) error { return notImplemented("bitflip") }
