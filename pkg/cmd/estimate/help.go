package estimate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/mechanism"
)

// kind is one kind of release of mechanism.Table (its Kind): the flags it
// adds, its estimator, and its sections of the help. --help prints the
// overview and then every kind's section, `estimate help KIND` one section
// with its examples and only the flags that apply to it, so that a
// researcher holding a bitflip release need not read about count queries.
// The mechanisms a kind covers are mechanism.OfKind(name). Each kind's
// file defines its kind (pramKind in pram.go…).
type kind struct {
	name     string // mechanism.Table's Kind, the argument of `estimate help`
	addFlags func(*cobra.Command, *Options)
	run      runner // the estimator of its releases
	title    string // the section's heading
	text     string // the section
	example  string
}

// kinds are estimate's steps, one line per kind of mechanism.Table
// (help_test.go checks both tables agree), in the order of the pipeline's
// stages.
var kinds = []kind{
	pramKind,
	countsKind,
	bitflipKind,
	ddpsKind,
}

const helpOverview = `Estimate reads a table released by a pramkit mechanism and estimates what
the mechanism hid. The kind of release and its parameters come from the
file's metadata; each kind has its own estimators, flags and output:
`

// longHelp is --help's text: the overview, the list of kinds, then every
// kind's section under its heading.
func longHelp() string {
	var b strings.Builder
	b.WriteString(helpOverview)
	for _, k := range kinds {
		fmt.Fprintf(&b, "  %-8s %s\n", k.name, k.title)
	}
	b.WriteString("Each section below is also `estimate help KIND`, with that kind's flags.")
	for _, k := range kinds {
		fmt.Fprintf(&b, "\n\n%s\n\n%s", heading(k), strings.TrimSpace(k.text))
	}
	return b.String()
}

// heading underlines a kind's title, so that the sections stand out in a
// pager or a terminal without escape codes.
func heading(k kind) string {
	h := strings.ToUpper(k.name) + ": " + k.title
	return h + "\n" + strings.Repeat("─", len([]rune(h)))
}

// examples is --help's Examples: every kind's, in the kinds' order.
func examples() string {
	var parts []string
	for _, k := range kinds {
		parts = append(parts, strings.TrimRight(strings.TrimLeft(k.example, "\n"), "\n"))
	}
	return strings.Join(parts, "\n\n")
}

// kindFlags are the flags that apply to releases of kind k: those of its
// mechanisms (mechanism.Table's EstimateFlags) and those every kind shares.
func kindFlags(cmd *cobra.Command, k kind) *pflag.FlagSet {
	fs := pflag.NewFlagSet(k.name, pflag.ContinueOnError)
	owners := mechanism.Owners("", true)
	mine := mechanism.OfKind(k.name)
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		mechs, only := owners[f.Name]
		if f.Name == "help" || f.Name == "version" {
			return
		}
		if !only || slices.ContainsFunc(mechs, func(m string) bool { return slices.Contains(mine, m) }) {
			fs.AddFlag(f)
		}
	})
	return fs
}

// newHelpCmd builds `estimate help [KIND]`.
func newHelpCmd(root *cobra.Command) *cobra.Command {
	var names []string
	for _, k := range kinds {
		names = append(names, k.name)
	}
	return &cobra.Command{
		Use:       "help [" + strings.Join(names, "|") + "]",
		Short:     "Help on one kind of release: " + strings.Join(names, ", "),
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: names,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return root.Help()
			}
			i := slices.IndexFunc(kinds, func(k kind) bool { return k.name == args[0] })
			if i < 0 {
				return cli.Usagef("help %q: the kinds of release are %s", args[0], strings.Join(names, ", "))
			}
			k := kinds[i]
			w := c.OutOrStdout()
			fmt.Fprintf(w, "%s\n\n%s\n\nUsage:\n  %s\n\nExamples:\n%s\n\nFlags:\n%s",
				heading(k), strings.TrimSpace(k.text), root.UseLine(),
				strings.TrimRight(strings.TrimLeft(k.example, "\n"), "\n"),
				kindFlags(root, k).FlagUsages())
			return nil
		},
	}
}
