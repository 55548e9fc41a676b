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
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// Options are the parsed flags of one run. Flags shared by several
// mechanisms live here; each mechanism file adds its own.
type Options struct {
	Streams *cli.Streams
	Input   string

	JSON     bool     // --json: a JSON summary instead of a table
	Truth    []string // --truth: the original table(s), for error measures
	Columns  []string // --columns: restrict to these columns
	Codebook string   // --codebook: labels when the metadata lacks them

	PRAM    pramOptions
	Counts  countOptions
	Bitflip bitflipOptions
	DDPS    ddpsOptions

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

// runners maps the metadata's "mechanism" to its estimator.
var runners = map[string]runner{
	"gamma-diagonal": runPRAM,
	"diverted":       runCounts,
	"anatomy":        runCounts,
	"global":         runCounts,
	"bitflip":        runBitflip,
	"ddps":           runDDPS,
}

// mechanismFlags maps each flag that applies to one mechanism's releases
// only to that mechanism (or a comma-separated list of them), so that such
// a flag given for another kind of release is an error instead of being
// ignored.
var mechanismFlags = map[string]string{
	"anonymity":          "bitflip",
	"anonymity-samples":  "bitflip",
	"anonymity-max-bits": "bitflip",
	"round-two":          "ddps",
	"marginal":           "gamma-diagonal",
	"gamma":              "gamma-diagonal",
	"rows":               "gamma-diagonal",
	"sample-size":        "gamma-diagonal",
	"ci":                 "gamma-diagonal",
	"replicates":         "gamma-diagonal",
	"max-iter":           "gamma-diagonal",
	"tol":                "gamma-diagonal",
	"truth-id":           "gamma-diagonal",
	"query":              "diverted,anatomy,global",
	"queries":            "diverted,anatomy,global",
	"decoy":              "diverted",
	"ibu-tol":            "diverted",
	"ibu-max-iter":       "diverted",
	"groups":             "anatomy",
}

// NewCmd builds the command; runF replaces the run function in tests.
func NewCmd(s *cli.Streams, runF func(*Options) error) *cobra.Command {
	opts := &Options{Streams: s}
	cmd := &cobra.Command{
		Use:     "estimate [<file>] [flags]",
		Short:   "Estimate distributions and counts from a pramkit release",
		Long:    longHelp(),
		Example: examples(),
		Args:    cobra.MaximumNArgs(1),
		RunE: cli.RunE(opts, func(c *cobra.Command, args []string) {
			opts.cmd, opts.Input = c, cli.FirstArg(args)
		}, runF, run),
	}
	f := cmd.Flags()
	f.BoolVar(&opts.JSON, "json", false, "print a JSON summary")
	f.StringArrayVar(&opts.Truth, "truth", nil, "original table `FILE` (repeat for each curator's), to report the estimation error")
	f.StringSliceVar(&opts.Columns, "columns", nil, "estimate over these columns only")
	f.StringVar(&opts.Codebook, "codebook", "", "codebook `FILE` for labels the metadata does not carry")
	addPRAMFlags(cmd, &opts.PRAM)
	addCountFlags(cmd, &opts.Counts)
	addBitflipFlags(cmd, &opts.Bitflip)
	addDDPSFlags(cmd, &opts.DDPS)
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
	r, ok := runners[mech]
	if !ok {
		known := make([]string, 0, len(runners))
		for k := range runners {
			known = append(known, k)
		}
		sort.Strings(known)
		return fmt.Errorf("%s: mechanism %q is not one estimate knows (%s); is pramkit older than the file?", in.Name(), mech, strings.Join(known, ", "))
	}
	flags := make([]string, 0, len(mechanismFlags))
	for f := range mechanismFlags {
		flags = append(flags, f)
	}
	sort.Strings(flags)
	for _, f := range flags {
		if want := mechanismFlags[f]; !slices.Contains(strings.Split(want, ","), mech) && o.cmd.Flags().Changed(f) {
			return cli.Usagef("--%s applies to %s releases only, but %s is a %s release", f, strings.ReplaceAll(want, ",", ", "), in.Name(), mech)
		}
	}
	return r(o, in)
}
