// Command pramkit holds every pramkit tool in one binary; see pkg/cmd/pramkit.
package main

import (
	"os"

	"github.com/pramkit/pramkit/pkg/cmd/pramkit"
)

func main() { os.Exit(pramkit.Main()) }
