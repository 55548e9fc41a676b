// Command anonymize is one stage of the pramkit toolchain; see pkg/cmd/anonymize.
package main

import (
	"os"

	"github.com/pramkit/pramkit/pkg/cmd/anonymize"
)

func main() { os.Exit(anonymize.Main()) }
