package perturb

import "github.com/spf13/cobra"

// gammaOptions are the flags of --mechanism gamma-diagonal.
type gammaOptions struct{}

const (
	gammaHelp    = ""
	gammaExample = ""
)

func addGammaFlags(cmd *cobra.Command, o *gammaOptions) {}

func runGamma(o *Options) error { return notImplemented("gamma-diagonal") }
