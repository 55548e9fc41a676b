// Command perturb is one stage of the pramkit toolchain; see pkg/cmd/perturb.
package main

import (
	"os"

	"github.com/pramkit/pramkit/pkg/cmd/perturb"
)

func main() { os.Exit(perturb.Main()) }
