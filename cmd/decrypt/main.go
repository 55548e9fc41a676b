// Command decrypt is one stage of the pramkit toolchain; see pkg/cmd/decrypt.
package main

import (
	"os"

	"github.com/pramkit/pramkit/pkg/cmd/decrypt"
)

func main() { os.Exit(decrypt.Main()) }
