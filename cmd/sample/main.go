// Command sample is one stage of the pramkit toolchain; see pkg/cmd/sample.
package main

import (
	"os"

	"github.com/pramkit/pramkit/pkg/cmd/sample"
)

func main() { os.Exit(sample.Main()) }
