// Command genman writes man pages for pramkit and its tools (make man).
// It lives apart from the tools so that cobra/doc and its Markdown-to-roff
// converter are not linked into the installed binary.
package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra/doc"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/cmd/pramkit"
	"github.com/pramkit/pramkit/pkg/version"
)

func main() {
	if len(os.Args) != 2 || strings.HasPrefix(os.Args[1], "-") {
		fmt.Fprintln(os.Stderr, "usage: genman DIR (writes pramkit.1 and pramkit-<tool>.1 there)")
		os.Exit(2)
	}
	if err := write(os.Args[1]); err != nil {
		fmt.Fprintf(os.Stderr, "genman: %v\n", err)
		os.Exit(1)
	}
}

func write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	root := pramkit.Command(&cli.Streams{In: os.Stdin, Out: io.Discard, Err: io.Discard})
	root.DisableAutoGenTag = true // no build date: the pages are reproducible
	for _, c := range root.Commands() {
		c.DisableAutoGenTag = true
	}
	header := &doc.GenManHeader{Title: "PRAMKIT", Section: "1", Source: "pramkit " + version.String(), Manual: "pramkit manual"}
	return doc.GenManTree(root, header, dir)
}
