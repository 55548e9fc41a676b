// Command report writes an HTML report about pramkit outputs; see pkg/cmd/report.
package main

import (
	"os"

	"github.com/pramkit/pramkit/pkg/cmd/report"
)

func main() { os.Exit(report.Main()) }
