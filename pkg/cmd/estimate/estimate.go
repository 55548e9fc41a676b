// Package estimate is the `estimate` command: the researcher's end of every
// pramkit mechanism. It reads a released table, finds in its metadata which
// mechanism produced it, and runs that mechanism's estimators:
//
//	gamma-diagonal         joint and marginal distributions (pram.go)
//	diverted, anatomy,     count queries (counts.go)
//	global
//	bitflip                per-bit frequencies, anonymity (bitflip.go)
//	ddps                   per-value counts (ddps.go)
package estimate

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/mechanism"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// Options are the parsed flags of one run. Flags shared by several
// kinds of release live here; each kind's own are in mech, under its
// name, read through its file's accessor (pramOpts in pram.go…).
type Options struct {
	Streams *cli.Streams
	Input   string
	// Inputs are all the files given (Input is the first): for
	// γ-diagonal releases, parts of one release — row files and count
	// tables — estimated as one (pram_parts.go).
	Inputs []string

	JSON     bool     // --json: a JSON summary instead of a table
	Truth    []string // --truth: the original table(s), for error measures
	Columns  []string // --columns: restrict to these columns
	Codebook string   // --codebook: labels when the metadata lacks them
	// Tabulate (--tabulate): write the release's counts, a count table,
	// instead of estimates (γ-diagonal: pram_parts.go; bitflip, ddps:
	// local_parts.go; anonymize releases: counts_parts.go).
	Tabulate bool

	mech mechanism.Options

	Output cli.Output
	Seed   cli.Seed
	cmd    *cobra.Command
	// insecure: the release was made with --insecure-seed; the output
	// says so too (markInsecureSeed).
	insecure bool
}

// markInsecureSeed marks an output table's metadata when the release was
// made with --insecure-seed.
func (o *Options) markInsecureSeed(meta table.Meta) {
	if o.insecure {
		meta[cli.InsecureSeedKey] = "true"
	}
}

// runner estimates from one mechanism's release.
type runner func(o *Options, in table.Reader) error

// NewCmd builds the command; runF replaces the run function in tests.
func NewCmd(s *cli.Streams, runF func(*Options) error) *cobra.Command {
	opts := &Options{Streams: s}
	cmd := &cobra.Command{
		Use:     "estimate [<file>...] [flags]",
		Short:   "Estimate distributions and counts from a pramkit release",
		Long:    longHelp(),
		Example: examples(),
		Args:    cobra.ArbitraryArgs,
		RunE: cli.RunE(opts, func(c *cobra.Command, args []string) {
			opts.cmd, opts.Input, opts.Inputs = c, cli.FirstArg(args), args
		}, runF, run),
	}
	f := cmd.Flags()
	f.BoolVar(&opts.JSON, "json", false, "print a JSON summary")
	f.StringArrayVar(&opts.Truth, "truth", nil, "original table `FILE` (repeat for each curator's), to report the estimation error")
	f.StringSliceVar(&opts.Columns, "columns", nil, "estimate over these columns only (anonymize releases, with --tabulate: the columns the count table keeps)")
	f.StringVar(&opts.Codebook, "codebook", "", "codebook `FILE` for labels the metadata does not carry")
	f.BoolVar(&opts.Tabulate, "tabulate", false, "write the release's counts (a count table) instead of estimates (anonymize releases: by the values of --columns)")
	for _, k := range kinds {
		k.addFlags(cmd, opts)
	}
	cli.AddOutputFlags(cmd, &opts.Output)
	cli.AddSeedFlag(cmd, &opts.Seed)
	help := newHelpCmd(cmd)
	cmd.SetHelpCommand(help)
	cmd.AddCommand(help)
	return cli.Root(cmd)
}

// Main runs the command on the process's arguments and returns the exit code.
func Main() int { return cli.Run(NewCmd(cli.StdStreams(), nil), os.Args[1:], cli.StdStreams()) }

func run(o *Options) error {
	in, err := o.Streams.Open(o.Input)
	if err != nil {
		return err
	}
	defer in.Close()
	o.insecure = cli.CarryInsecureSeed(o.Streams, "estimate", in.Name(), in.Meta(), nil)
	mech, ok := in.Meta()[release.KeyMechanism]
	if !ok {
		return fmt.Errorf("%s is not a pramkit release: its metadata names no mechanism; estimate reads the output of perturb, decrypt or anonymize", in.Name())
	}
	d, ok := mechanism.Lookup(mech)
	if !ok {
		known := mechanism.Names("")
		sort.Strings(known)
		return fmt.Errorf("%s: mechanism %q is not one estimate knows (%s); is pramkit older than the file?", in.Name(), mech, strings.Join(known, ", "))
	}
	if msg := mechanism.RefuseEstimate(in.Name(), mech, o.cmd.Flags()); msg != "" {
		return cli.Usagef("%s", msg)
	}
	k := slices.IndexFunc(kinds, func(k kind) bool { return k.name == d.Kind })
	return kinds[k].run(o, in)
}
