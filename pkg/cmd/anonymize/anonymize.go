// Package anonymize is the `anonymize` command: a data steward publishes a
// whole table so that large counts stay accurate while small counts and
// single people stay hidden (SPEC §4; Fu, Wang, Wang, Wong, "Small Count
// Privacy and Large Count Utility in Data Publishing", seed 003). The
// mechanisms are in package pkg/anonymize; this package reads the table,
// maps the sensitive columns through their codebook, publishes, and writes
// the metadata that `estimate` needs for count queries.
package anonymize

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/mechanism"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// Mechanisms.
const (
	diverted = release.MechanismDiverted // A′, ℓ′-diverted privacy (§4)
	anatomy  = release.MechanismAnatomy  // Anatomy's ℓ-diverse groups (§9.4 baseline)
	global   = release.MechanismGlobal   // mechanism A, global randomization (§3)
)

// Options are the parsed flags of one run.
type Options struct {
	Streams *cli.Streams
	Input   string

	Sensitive []string // --sensitive
	L         int      // --l, ℓ′ (ℓ for anatomy)
	Mechanism string   // --mechanism
	Grouping  string   // --grouping: how decoy groups' value sets are chosen
	P         float64  // --p, global: keep probability
	Groups    string   // --groups FILE, anatomy's sensitive table
	GroupCol  string   // --group-column, anatomy's group id column

	Report   bool    // --report
	Check    bool    // --check
	JSON     bool    // --json
	RelError float64 // --rel-error, ε of Lemma 4 and Definition 5
	TE       float64 // --te, T_E of Lemma 4

	Codebook cli.CodebookFlags
	Unknown  codebook.UnknownPolicy
	Missing  codebook.MissingPolicy

	Order  cli.Order // --keep-order
	Output cli.Output
	Seed   cli.Seed
	cmd    *cobra.Command
	// insecureIn: the input was made with --insecure-seed; o.meta marks
	// the publication too.
	insecureIn bool
	// codebookItem is the tables' codebook item (the sensitive columns'),
	// which o.meta and o.groupsMeta leave out: every table's writer makes
	// it when it writes its metadata (release.CodebookItem). Set by fill.
	codebookItem []table.Deferred
	// spooled is the temporary copy of standard input that a two-pass run
	// reads twice ("" when the input is a file).
	spooled string
	// dictCols are the columns the second pass reads as dictionaries
	// when the file has them so (Parquet): the nsaCoder columns.
	dictCols []string
	// readLabels are the columns a CSV input's passes read as codes
	// (ReadOptions.Labels): categorical sensitive columns, nsaCoder's.
	readLabels map[string]*table.Labels
	// batchSize is the rows per input batch, 0 for the default (tests vary
	// it: a seeded run must not depend on it).
	batchSize int
	// manyValues: the sensitive columns have more than manyValues values
	// in all (countPass), and the input batches are half as large.
	manyValues bool
	// spoolAbove, when not 0, replaces codeSpoolLabels (tests: -1
	// spools every run, math.MaxInt none; the output must not depend on
	// it).
	spoolAbove int
	// inputID is the input file as the first open found it: every pass
	// must read the same file (open, sameInput).
	inputID os.FileInfo
	// beforeOpen, when set (tests), runs before each open of the input.
	beforeOpen func()
}

// codeSpoolLabels is the sensitive labels past which pass 1 spools its
// value indexes for pass 2 (codeSpool).
func (o *Options) codeSpoolLabels() int {
	if o.spoolAbove != 0 {
		return o.spoolAbove
	}
	return codeSpoolLabels
}

// anonymizeIntro begins --help's text: then come the mechanisms' sections,
// the guarantees and the memory each needs.
const anonymizeIntro = `Anonymize publishes a whole table so that counts of many people stay
accurate while counts of a few people, and each person's sensitive value,
stay hidden (Fu, Wang, Wang, Wong, "Small Count Privacy and Large Count
Utility in Data Publishing"; SPEC §4). The --sensitive columns are
randomized; every other column is published unchanged, as text.

`

// divertedHelp, anatomyHelp and globalHelp are the mechanisms' sections
// of --help, in steps' order.
const divertedHelp = `--mechanism diverted (the default) is the paper's mechanism A′:
  1. every row gets a random id (from a CSPRNG), independent of its content;
  2. the (id, sensitive value) pairs are split into decoy groups of exactly
     ℓ′ rows with ℓ′ distinct values: one bucket of rows per value, then
     repeatedly one row (the smallest id) from each of ℓ′ buckets, chosen
     by --grouping: random (the default) draws them at random in
     proportion to their remaining sizes, always including a bucket that
     must be in every remaining group, so that the largest values do not
     always share groups; anatomy takes the ℓ′ currently largest buckets
     (Anatomy's group creation, the paper's; the default of --mechanism
     anatomy). Both give the same guarantees; random groups make count
     queries more accurate (estimate --help);
  3. each row publishes a value drawn uniformly from its group's ℓ′ values
     (p = q = 1/ℓ′, the only choice that gives ℓ′-diverted privacy,
     Theorems 1 and 2);
  4. the rows are shuffled and published with ℓ′; nothing about the groups
     or the ids is published.
The count of each value in the output is the unbiased maximum-likelihood
estimate of its true count (Theorem 3); its relative error is small for
large counts and large for small ones (§6). estimate answers count
queries on the output (see "estimate --help").

A table is eligible for ℓ′ when its most frequent sensitive value occurs at
most N/ℓ′ times; otherwise anonymize stops and names the value and the
largest feasible ℓ′ (--check tells in advance). N is made a multiple of ℓ′
by leaving out N mod ℓ′ < ℓ′ rows chosen at random; how many is reported on
stderr and in the metadata. Several sensitive columns are randomized
independently, each with its own decoy groups (§7.2).

`

const anatomyHelp = `--mechanism anatomy is the ℓ-diversity baseline the paper compares with
(Xiao and Tao's Anatomy, groups built as above with ℓ = --l): the rows go to
-o with a group id column (--group-column, "group") instead of the
sensitive column, and the sensitive table (group, value, count) goes to
--groups FILE. Values are true but only linked to a group. One sensitive
column.

`

const globalHelp = `--mechanism global is the paper's mechanism A: each row keeps its value with
probability --p, else gets a value drawn uniformly from the whole codebook.
p = 1 is refused (it publishes the column unchanged); p = 0 redraws every
value: private, but nothing can be estimated from it.
Without --p, --l N sets the paper's comparison point: the row retains its
value with probability 1/ℓ′, that is p = (V/ℓ′ − 1)/(V − 1) for V values.
Each row is randomized independently, so global streams; its rows are then
shuffled (below).

`

// anonymizeRest is --help after the mechanisms: order, codebook, report,
// memory.
const anonymizeRest = `A flag of another mechanism than the one chosen is refused.

Every mechanism publishes its rows in a uniformly random order, whatever
the input's order: a table sorted by the sensitive column and published in
that order would give each row's true value away through its neighbours'
published values. --keep-order publishes in the input's order instead,
which is safe only when that order carries no information about the
sensitive values (an input already shuffled, or ordered by a random id).
The metadata records order: shuffled or input.

The sensitive columns need a codebook (--codebook FILE, or --infer-codebook,
which reads the file twice and reveals the values present). A missing value
("?" in Adult) is a category of its own unless --missing drop removes its
rows (reported) or --missing fail stops. The codebook of the sensitive
columns, ℓ′, the mechanism, N, the dropped rows and the sensitive column
names go into the output's metadata (keys mechanism, l, p, N, dropped,
sensitive, codebook).

--report prints, per sensitive value, its frequency f_s, the Chebyshev bound
1/(ℓ′ε²f_s²) on P(relative error ≥ ε) (Inequality 3), whether f_s reaches
the utility threshold T_f = 1/√(ℓ′ε²T_E) (Lemma 4), and the privacy
guarantee T_P = P(relative error > ε) from f′_s ~ Binomial(ℓ′f_s, 1/ℓ′)
(Definition 5), for ε = --rel-error and T_E = --te; as a table, or JSON with
--json. With -o the table is also published (the report then uses the
published rows); without -o nothing is published. --check only says
whether the table is eligible for --l and the largest feasible ℓ′ (exit
status 1 when not eligible).

Memory does not grow with the rows. diverted and anatomy read the table
twice (a table on standard input or a pipe is first copied to a private
temporary file in $TMPDIR, removed at the end): the first pass counts each sensitive
value and the decoy groups' value sets are computed from the counts alone;
the second gives each row a random free place among its value's groups and
publishes it at once. They hold the counts and one entry per distinct
value set (at most C(V, ℓ′) of them for V values; with --grouping random
also at most 2^14 + V + ℓ′ + 1 whatever the rows, as above 2^14 groups one
random draw serves a run of consecutive groups). Memory does grow with
the sensitive column's distinct values, by about 35 to 40 bytes a value
(the codebook, ~16, and the set types and free places, 17 at 1M values,
24 with --grouping anatomy); on 4M rows, peak RSS 77 MB at 300k values
and 90 to 94 MB at 1M, either grouping (CSV output). Past 128k values the shuffle's budget below gives way to the
per-value state, down to 4 MiB. anatomy numbers the
groups of the rows after a first shuffle and shuffles them again; with
--keep-order it holds the table instead (about 30 bytes per row) and
builds Anatomy's groups only. The shuffle holds the published rows up to
16 MiB, then spills them to private temporary files (in $TMPDIR, removed
at the end) and reads them back, several at a time within the same 16 MiB.
A row takes its text plus about 10 bytes; the sensitive columns, and the
other columns that the --codebook file declares categorical (values it
lacks are still published as they are), travel as codes of a byte or two
instead of their text.
--check and a --report without -o read the table once in constant memory.`

const anonymizeExample = `  # is Adult eligible for ℓ′ = 5 with occupation sensitive? (largest feasible: 7)
  $ anonymize --check --sensitive occupation --l 5 --codebook codebook.json adult.csv

  # publish Adult with occupation ℓ′-diverted, then ask a count query
  $ anonymize --sensitive occupation --l 5 --codebook codebook.json adult.csv -o adult.l5.csv
  anonymize: adult.l5.csv: left out 1 row chosen at random so that N = 32560 is a multiple of ℓ′ = 5
  $ estimate --query 'sex=Female,occupation=Sales' adult.l5.csv

  # utility and privacy per value for ε = 0.3
  $ anonymize --report --rel-error 0.3 --sensitive occupation --l 5 --codebook codebook.json adult.csv

  # the baselines: Anatomy (rows + sensitive table) and global randomization
  $ anonymize --mechanism anatomy --sensitive occupation --l 5 --codebook codebook.json adult.csv \
      -o adult.anatomy.csv --groups adult.anatomy.groups.csv
  $ anonymize --mechanism global --sensitive occupation --l 5 --codebook codebook.json adult.csv -o adult.global.csv`

// step is anonymize's part of one mechanism of mechanism.Table: its
// publication and its section of --help.
type step struct {
	name    string
	publish func(o *Options, in table.Reader, cb *codebook.Codebook) error
	help    string
}

// steps are anonymize's mechanisms, one line per mechanism of
// mechanism.Table made by anonymize (mechanism_test.go checks both tables
// agree), the default first.
var steps = []step{
	{diverted, (*Options).runDiverted, divertedHelp},
	{anatomy, (*Options).runAnatomy, anatomyHelp},
	{global, (*Options).runGlobal, globalHelp},
}

// longHelp is --help's text: the introduction, every mechanism's section,
// then what they share.
func longHelp() string {
	var b strings.Builder
	b.WriteString(anonymizeIntro)
	for _, st := range steps {
		b.WriteString(st.help)
	}
	b.WriteString(anonymizeRest)
	return b.String()
}

// NewCmd builds the command; runF replaces the run function in tests.
func NewCmd(s *cli.Streams, runF func(*Options) error) *cobra.Command {
	opts := &Options{Streams: s}
	cmd := &cobra.Command{
		Use:     "anonymize [<file>] --sensitive COL[,COL…] --l N [flags]",
		Short:   "Publish a table with ℓ′-diverted sensitive values (mechanism A′)",
		Long:    longHelp(),
		Example: anonymizeExample,
		Args:    cobra.MaximumNArgs(1),
		RunE: cli.RunE(opts, func(c *cobra.Command, args []string) {
			opts.cmd, opts.Input = c, cli.FirstArg(args)
		}, runF, run),
	}
	f := cmd.Flags()
	f.StringSliceVar(&opts.Sensitive, "sensitive", nil, "sensitive `COL`umns to randomize (comma-separated or repeated)")
	f.IntVar(&opts.L, "l", 0, "ℓ′ `N` ≥ 2: decoy group size, the number of values each row may take (ℓ for anatomy)")
	f.StringVar(&opts.Mechanism, "mechanism", diverted, "`MECH`anism: diverted (A′), anatomy or global (mechanism A)")
	f.StringVar(&opts.Grouping, "grouping", string(anonymize.GroupingRandom), "diverted, anatomy: how decoy groups' values are chosen, `G` = random (in proportion to remaining counts) or anatomy (the ℓ′ largest remaining; the default of --mechanism anatomy)")
	f.Float64Var(&opts.P, "p", 0, "global: keep each value with probability `P` in [0, 1), else draw it uniformly (default: retention 1/ℓ′)")
	f.StringVar(&opts.Groups, "groups", "", "anatomy: write the sensitive table (group, value, count) to `FILE`")
	f.StringVar(&opts.GroupCol, "group-column", "group", "anatomy: `NAME` of the group id column")
	f.BoolVar(&opts.Report, "report", false, "print each sensitive value's utility and privacy guarantees (Lemma 4, Definition 5)")
	f.BoolVar(&opts.Check, "check", false, "only say whether the table is eligible for --l and the largest feasible ℓ′")
	f.BoolVar(&opts.JSON, "json", false, "print --report or --check as JSON")
	f.Float64Var(&opts.RelError, "rel-error", 0.2, "--report: relative error `E` (the paper's ε) of the guarantees")
	f.Float64Var(&opts.TE, "te", 0.02, "--report: probability `T` (the paper's T_E) of the utility guarantee")
	cli.AddCodebookFlags(cmd, &opts.Codebook)
	f.Var(&opts.Unknown, "unknown", "a sensitive value outside the codebook: fail, or treat it as missing")
	f.Var(&opts.Missing, "missing", "a missing sensitive value: keep it as its category, drop the row, or fail")
	cli.AddOrderFlag(cmd, &opts.Order)
	cli.AddOutputFlags(cmd, &opts.Output)
	cli.AddSeedFlag(cmd, &opts.Seed)
	cli.AddInsecureSeedFlag(cmd, &opts.Seed)
	return cli.Root(cmd)
}

// Main runs the command on the process's arguments and returns the exit code.
func Main() int { return cli.Run(NewCmd(cli.StdStreams(), nil), os.Args[1:], cli.StdStreams()) }

// validate checks the flags before any input is read.
func (o *Options) validate() error {
	f := o.cmd.Flags()
	if len(o.Sensitive) == 0 {
		return cli.Usagef("name the sensitive column(s): --sensitive COL[,COL…]")
	}
	for i, s := range o.Sensitive {
		if s == "" {
			return cli.Usagef("--sensitive has an empty column name")
		}
		if slices.Contains(o.Sensitive[:i], s) {
			return cli.Usagef("--sensitive names %q twice", s)
		}
	}
	if !slices.ContainsFunc(steps, func(st step) bool { return st.name == o.Mechanism }) {
		return cli.Usagef("%s", mechanism.Unknown(mechanism.Anonymize, o.Mechanism))
	}
	if msg := mechanism.Refuse(mechanism.Anonymize, o.Mechanism, f); msg != "" {
		return cli.Usagef("%s", msg)
	}
	if o.Mechanism == anatomy && !f.Changed("grouping") {
		// The Anatomy baseline keeps its own group creation.
		o.Grouping = string(anonymize.GroupingAnatomy)
	}
	if !slices.Contains(anonymize.Groupings, anonymize.Grouping(o.Grouping)) {
		return cli.Usagef("unknown --grouping %q: choose anatomy or random", o.Grouping)
	}
	lGiven := f.Changed("l")
	if lGiven && o.L < 2 {
		return cli.Usagef("--l must be at least 2 (a decoy group needs two values), got %d", o.L)
	}
	if o.Check {
		switch {
		case o.Report:
			return cli.Usagef("give either --check or --report, not both")
		case o.Output.Path != "":
			return cli.Usagef("--check publishes nothing: drop -o")
		case o.Order.Keep:
			return cli.Usagef("--check publishes nothing: drop --keep-order")
		}
	} else {
		if err := o.validatePublish(lGiven); err != nil {
			return err
		}
	}
	if o.Report {
		if o.Mechanism != diverted {
			return cli.Usagef("--report gives the guarantees of mechanism A′: it needs --mechanism diverted")
		}
		if err := cli.CheckNumber("rel-error", o.RelError, cli.Positive); err != nil {
			return err
		}
		if err := cli.CheckNumber("te", o.TE, cli.OpenClosedUnit); err != nil {
			return err
		}
	} else {
		for _, name := range []string{"rel-error", "te"} {
			if f.Changed(name) {
				return cli.Usagef("--%s applies to --report only", name)
			}
		}
	}
	if o.JSON && !o.Report && !o.Check {
		return cli.Usagef("--json applies to --report and --check")
	}
	switch {
	case o.Codebook.Path != "" && o.Codebook.Infer:
		return cli.Usagef("give either --codebook or --infer-codebook, not both")
	case o.Codebook.Infer && table.IsStdio(o.Input):
		return cli.Usagef("--infer-codebook reads the input twice: give a file, not standard input")
	case o.Codebook.Path == "" && !o.Codebook.Infer:
		return cli.Usagef("the sensitive columns need a codebook: give --codebook FILE, or --infer-codebook to derive one from the data (which reveals the values present)")
	}
	return nil
}

// validatePublish checks the flags of a run that publishes.
func (o *Options) validatePublish(lGiven bool) error {
	f := o.cmd.Flags()
	switch o.Mechanism {
	case diverted:
		if !lGiven {
			return cli.Usagef("give ℓ′ with --l N (N ≥ 2); --check tells the largest feasible ℓ′")
		}
	case anatomy:
		switch {
		case !lGiven:
			return cli.Usagef("give ℓ with --l N (N ≥ 2)")
		case len(o.Sensitive) > 1:
			return cli.Usagef("--mechanism anatomy publishes one sensitive column; got %d", len(o.Sensitive))
		case o.Groups == "":
			return cli.Usagef("--mechanism anatomy writes two tables: the rows to -o and the sensitive table to --groups FILE")
		case o.GroupCol == "":
			return cli.Usagef("--group-column needs a name")
		case o.Groups == o.Output.Path:
			return cli.Usagef("--groups and -o name the same file")
		case o.Order.Keep && o.Grouping != string(anonymize.GroupingAnatomy):
			return cli.Usagef("--mechanism anatomy --keep-order holds the table in memory and builds Anatomy's groups only: drop --keep-order or --grouping %s", o.Grouping)
		}
	case global:
		switch {
		case f.Changed("p") && lGiven:
			return cli.Usagef("give either --p (keep probability) or --l (retention 1/ℓ′), not both")
		case f.Changed("p"):
			switch {
			case o.P == 1:
				return cli.Usagef("--p 1 keeps every value: mechanism A would publish the sensitive column unchanged, with no privacy; choose a keep probability p < 1 (or --l N for retention 1/ℓ′)")
			case !cli.ClosedOpenUnit.Contains(o.P):
				return cli.CheckProbability("p", o.P, cli.ClosedOpenUnit)
			}
		case !lGiven:
			return cli.Usagef("give the keep probability --p P, or --l N for the paper's comparison point (retention 1/ℓ′)")
		}
	}
	return nil
}

func run(o *Options) error {
	if err := o.validate(); err != nil {
		return err
	}
	if o.twoPass() && !rereadable(o.Input) {
		path, cleanup, err := o.spoolInput()
		defer cleanup()
		if err != nil {
			return err
		}
		o.spooled = path
	}
	// The input first: a sensitive column it lacks is the likelier
	// mistake than one the codebook lacks.
	in, err := o.open()
	if err != nil {
		return err
	}
	defer in.Close()
	o.insecureIn = cli.CarryInsecureSeed(o.Streams, "anonymize", in.Name(), in.Meta(), nil)
	var names []string
	for _, f := range in.Schema().Fields() {
		names = append(names, f.Name)
	}
	for _, name := range o.Sensitive {
		if !slices.Contains(names, name) {
			return fmt.Errorf("%s has no column %q to treat as sensitive (columns: %s)", in.Name(), name, strings.Join(names, ", "))
		}
	}
	cb, err := o.Codebook.Load(o.Streams, o.Input, o.Sensitive)
	if err != nil {
		return err
	}
	for _, name := range o.Sensitive {
		col, _ := cb.Column(name)
		if o.cmd.Flags().Changed("l") && o.L > col.K() {
			return fmt.Errorf("ℓ′ = %d is larger than the %d values in the codebook of %s: a decoy group needs ℓ′ distinct values (and retention 1/ℓ′ cannot be below 1/V); choose a smaller --l", o.L, col.K(), name)
		}
	}
	switch {
	case o.Check:
		return o.runCheck(in, cb)
	case o.Report && table.IsStdio(o.Output.Path):
		return o.runReportOnly(in, cb)
	}
	i := slices.IndexFunc(steps, func(st step) bool { return st.name == o.Mechanism })
	return steps[i].publish(o, in, cb)
}

func (o *Options) policy() codebook.Policy {
	return codebook.Policy{Unknown: o.Unknown, Missing: o.Missing}
}
