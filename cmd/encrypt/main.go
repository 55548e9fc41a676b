// Command encrypt is one stage of the pramkit toolchain; see pkg/cmd/encrypt.
package main

import (
	"os"

	"github.com/pramkit/pramkit/pkg/cmd/encrypt"
)

func main() { os.Exit(encrypt.Main()) }
