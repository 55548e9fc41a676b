// Package tools is the one table of pramkit's commands: each tool's name
// and how to build its cobra command. The multi-call binary (cmd/pramkit),
// the end-to-end tests (internal/e2e) and the man-page generator all read
// it, so a new tool is added in one place — the model is miller's single
// table of verbs.
package tools

import (
	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/cmd/anonymize"
	"github.com/pramkit/pramkit/pkg/cmd/decrypt"
	"github.com/pramkit/pramkit/pkg/cmd/encrypt"
	"github.com/pramkit/pramkit/pkg/cmd/estimate"
	"github.com/pramkit/pramkit/pkg/cmd/perturb"
	"github.com/pramkit/pramkit/pkg/cmd/report"
	"github.com/pramkit/pramkit/pkg/cmd/sample"
)

// Tool is one pramkit command.
type Tool struct {
	Name string
	// New builds the command, reading and writing s. Each call returns a
	// fresh command: cobra commands hold their parsed flags.
	New func(s *cli.Streams) *cobra.Command
	// Main runs the tool on the process's arguments and streams, as
	// cmd/<name> does; it returns the exit code.
	Main func() int
}

// All lists the tools in pipeline order (sample, encrypt, perturb, decrypt,
// estimate), then anonymize, then report.
var All = []Tool{
	{"sample", func(s *cli.Streams) *cobra.Command { return sample.NewCmd(s, nil) }, sample.Main},
	{"encrypt", func(s *cli.Streams) *cobra.Command { return encrypt.NewCmd(s, nil) }, encrypt.Main},
	{"perturb", func(s *cli.Streams) *cobra.Command { return perturb.NewCmd(s, nil) }, perturb.Main},
	{"decrypt", func(s *cli.Streams) *cobra.Command { return decrypt.NewCmd(s, nil) }, decrypt.Main},
	{"estimate", func(s *cli.Streams) *cobra.Command { return estimate.NewCmd(s, nil) }, estimate.Main},
	{"anonymize", func(s *cli.Streams) *cobra.Command { return anonymize.NewCmd(s, nil) }, anonymize.Main},
	{"report", func(s *cli.Streams) *cobra.Command { return report.NewCmd(s, nil) }, report.Main},
}

// Lookup returns the tool called name.
func Lookup(name string) (Tool, bool) {
	for _, t := range All {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// Names returns the tools' names in the order of All.
func Names() []string {
	names := make([]string, len(All))
	for i, t := range All {
		names[i] = t.Name
	}
	return names
}
