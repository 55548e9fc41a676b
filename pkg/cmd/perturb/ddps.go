package perturb

import "github.com/spf13/cobra"

// ddpsOptions are the flags of --mechanism ddps.
type ddpsOptions struct{}

const (
	ddpsHelp    = ""
	ddpsExample = ""
)

func addDDPSFlags(cmd *cobra.Command, o *ddpsOptions) {}

func runDDPS(o *Options) error { return notImplemented("ddps") }
