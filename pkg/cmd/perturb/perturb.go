// Package perturb is the `perturb` command: it applies a randomization
// mechanism to a table, one row at a time.
//
//	gamma-diagonal (default)  γ-diagonal PRAM on curators' encrypted tables,
//	                          at an untrusted server (gamma.go)
//	bitflip                   K-randomization of bit vectors (bitflip.go)
//	ddps                      DDPS two-round sampling reports (ddps.go)
package perturb

import (
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/mechanism"
	"github.com/pramkit/pramkit/pkg/table"
)

// Options are the parsed flags of one run. Flags shared by several
// mechanisms live here; each mechanism's own are in mech, under its name,
// read through its file's accessor (gammaOpts in gamma.go…).
type Options struct {
	Streams *cli.Streams
	Inputs  []string

	Mechanism string   // --mechanism
	Columns   []string // --columns
	Codebook  string   // --codebook
	Epsilon   float64  // --epsilon; check o.cmd.Flags().Changed("epsilon")

	mech mechanism.Options

	Order  cli.Order // --keep-order (bitflip, ddps)
	Output cli.Output
	Seed   cli.Seed
	cmd    *cobra.Command
}

// step is perturb's part of one mechanism of mechanism.Table: the flags
// it adds, its run function, and its sections of --help. Each mechanism's
// file defines its step (gammaStep in gamma.go…).
type step struct {
	name     string
	addFlags func(*cobra.Command, *Options)
	run      func(*Options) error
	help     string
	example  string
}

// mechanisms are perturb's steps, one line per mechanism of
// mechanism.Table made by perturb (mechanism_test.go checks both tables
// agree); --help lists them in this order.
var mechanisms = []step{
	gammaStep,
	bitflipStep,
	ddpsStep,
}

// NewCmd builds the command; runF replaces the run function in tests.
func NewCmd(s *cli.Streams, runF func(*Options) error) *cobra.Command {
	opts := &Options{Streams: s}
	cmd := &cobra.Command{
		Use:   "perturb [<file>...] [--mechanism " + strings.Join(mechanism.Names(mechanism.Perturb), "|") + "] [flags]",
		Short: "Randomize a table's rows with a privacy mechanism",
		Long: `Perturb randomizes every row of a table independently with a mechanism whose
privacy loss ε is recorded in the output's metadata.

The local mechanisms (bitflip, ddps) publish their reports in a uniformly
random order, whatever the input's order: reports published in the order of
a table sorted by a sensitive column would give each row's value away
through its neighbours' reports. The shuffle holds the reports up to 16 MiB,
then spills them to private temporary files (in $TMPDIR, removed at the
end). --keep-order keeps the input's order, which is safe only when it
carries no information about the values (an input already shuffled, or
ordered by a random id). The metadata records order: shuffled or input.
gamma-diagonal always keeps the order, which decrypt needs.

A flag of another mechanism than the one chosen is refused.` + helps(func(s step) string { return s.help }),
		Example: helps(func(s step) string { return s.example }),
		RunE: cli.RunE(opts, func(c *cobra.Command, args []string) {
			opts.cmd, opts.Inputs = c, cli.Inputs(args)
		}, runF, run),
	}
	f := cmd.Flags()
	f.StringVar(&opts.Mechanism, "mechanism", mechanisms[0].name, "`NAME` of the mechanism: "+mechanism.Choices(mechanism.Perturb))
	f.StringSliceVar(&opts.Columns, "columns", nil, "columns to randomize (bitflip)")
	f.StringVar(&opts.Codebook, "codebook", "", "codebook `FILE` for the columns' categories (bitflip, ddps)")
	f.Float64Var(&opts.Epsilon, "epsilon", 0, "privacy level `E` > 0 that the mechanism's parameter is chosen for")
	for _, m := range mechanisms {
		m.addFlags(cmd, opts)
	}
	cli.AddOrderFlag(cmd, &opts.Order)
	cli.AddOutputFlags(cmd, &opts.Output)
	cli.AddSeedFlag(cmd, &opts.Seed)
	cli.AddInsecureSeedFlag(cmd, &opts.Seed)
	return cli.Root(cmd)
}

// Main runs the command on the process's arguments and returns the exit code.
func Main() int { return cli.Run(NewCmd(cli.StdStreams(), nil), os.Args[1:], cli.StdStreams()) }

// helps joins one text of every mechanism, in the table's order.
func helps(text func(step) string) string {
	var b strings.Builder
	for _, m := range mechanisms {
		b.WriteString(text(m))
	}
	return b.String()
}

func run(o *Options) error {
	i := slices.IndexFunc(mechanisms, func(s step) bool { return s.name == o.Mechanism })
	if i < 0 {
		return cli.Usagef("%s", mechanism.Unknown(mechanism.Perturb, o.Mechanism))
	}
	if msg := mechanism.Refuse(mechanism.Perturb, o.Mechanism, o.cmd.Flags()); msg != "" {
		return cli.Usagef("%s", msg)
	}
	return mechanisms[i].run(o)
}

// markInsecureSeed marks the release's metadata when this run used
// --insecure-seed or an input was made with it (warning about each such
// input), so that decrypt and estimate warn in turn.
func (o *Options) markInsecureSeed(meta table.Meta, ins ...table.Reader) {
	for _, in := range ins {
		cli.CarryInsecureSeed(o.Streams, "perturb", in.Name(), in.Meta(), meta)
	}
	o.Seed.Mark(meta)
}
