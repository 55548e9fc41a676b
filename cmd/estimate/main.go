// Command estimate is one stage of the pramkit toolchain; see pkg/cmd/estimate.
package main

import (
	"os"

	"github.com/pramkit/pramkit/pkg/cmd/estimate"
)

func main() { os.Exit(estimate.Main()) }
