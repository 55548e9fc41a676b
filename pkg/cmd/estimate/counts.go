package estimate

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/countquery"
	"github.com/pramkit/pramkit/pkg/mechanism"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// countOptions are the flags of the count-query estimators (anonymize's
// diverted, anatomy and global publications).
type countOptions struct {
	Query   string  // --query 'col=value,…'
	Queries string  // --queries FILE
	Decoy   string  // --decoy exact|paper
	Stop    string  // --ibu-stop auto|paper|converged|discrepancy|shrink
	Tol     float64 // --ibu-tol
	MaxIter int     // --ibu-max-iter
	Groups  string  // --groups FILE, anatomy's sensitive table
}

// Decoy probability models (--decoy).
const (
	decoyExact      = "exact"
	decoyPaper      = "paper"       // Figure 3's a01 = (x1 + x3)/N at the current x (Eq. 12)
	decoyPaperFixed = "paper-fixed" // a01 = f′_s/N, Figure 3 evaluated once at x = y
)

// Stopping rules of the Bayesian update (--ibu-stop).
const (
	stopAuto        = "auto"        // shrink on randomized-group releases (discrepancy with --decoy paper*), paper otherwise
	stopPaper       = "paper"       // no count changes by more than 1 % in a step (§9.6)
	stopConverged   = "converged"   // … by more than 1e-9: the maximum-likelihood estimate
	stopDiscrepancy = "discrepancy" // P's published counts fitted within their noise (countquery.FitsWithinNoise), else converged
	stopShrink      = "shrink"      // converged, then James–Stein toward independence over P's values (countquery.ShrinkPredicate)
)

const (
	countsHelp = `

Count queries on a table published by anonymize (mechanisms diverted,
anatomy, global). A query counts the rows of the original table that
satisfy 'col=value,col=value,…' (a conjunction; a backslash makes the next
character literal). Give one with --query, or many with --queries FILE: a
CSV whose header has a column "query" (a one-column file may leave its
queries unquoted). The answer is a CSV on stdout (or -o FILE) with the
columns query, estimate, iterations, one row per query in input order;
--truth FILE (the original table) adds true and relative_error. Estimates
on stdout are rounded to 2 decimals; -o keeps full precision. Values of the
sensitive columns are codebook labels (from the release's metadata); other
columns are matched as published, or, with --codebook FILE declaring them,
by category (e.g. age=25-34 with Adult's codebook). A value that is
neither a category nor in any row of the release is an error that lists
the column's values (a typo, or bins asked of a column published raw).

diverted (mechanism A′, Fu et al.), with N rows, ℓ′ and f′_s the count of
s in the release:
  only a sensitive value s   f′_s, the unbiased MLE of f_s (Theorem 3);
  P and one sensitive value  the iterative Bayesian update (Eq. 12) over
             the four states P̄s̄, P̄s, Ps̄, Ps of Figure 3, from x = y (the
             states' counts in the release) until no count changes in a
             step by more than a tolerance of itself (at least of one
             row), or a number of steps (--ibu-stop below);
  P and w sensitive values   the same over 2^{w+1} states with the tensor
             product of 2×2 matrices (Eq. 13);
  only non-sensitive values  the exact count (they are published unchanged).
The chance that a row without s publishes s (a01) is, with --decoy exact
(the default), f_s(ℓ′−1)/(ℓ′(N − f_s)): the average over the decoy groups,
which keeps E[f′_s] = f_s. --decoy paper follows the paper: Figure 3's
a01 = (x1 + x3)/N, re-evaluated from the current estimate x at every step
of Eq. 12; it overstates a01 by about ℓ′/(ℓ′−1). --decoy paper-fixed keeps
a01 = f′_s/N fixed (the update's first step), for comparison. On UCI Adult
(occupation, ℓ′ = 5, queries of selectivity 2–5 %) the mean relative error
is about 0.26 for exact, 0.28 for paper and 0.37 for paper-fixed.
--ibu-stop chooses the stopping rule: paper (tolerance 1 %, at most
10000 steps: the paper's §9.6), converged (tolerance 1e-9, at most
1000000 steps: the maximum-likelihood estimate), discrepancy (stop at the
first step whose expected counts of the P states match the published ones
within their sampling noise, Pearson's χ² of the P states ≤ its degrees of
freedom; else as converged), shrink, or auto (the default): shrink on
a release whose decoy groups were drawn at random (anonymize --grouping
random, the default; discrepancy with --decoy paper or paper-fixed),
paper on one grouped the Anatomy way. shrink (with --decoy
exact) answers a query of P and one sensitive value without iterating:
the converged estimates x̂_v of every value v among P's rows are shrunk
toward independence, x₀_v = n_P·f′_v/N, by James–Stein, x₀_v + w·(x̂_v −
x₀_v) with w = max(0, 1 − (p − 3)/Σ_v (x̂_v − x₀_v)²/σ_v²), σ_v the
estimates' sampling sd and p the values: biased toward independence,
but with less error on average (queries of several sensitive values
run the update with the discrepancy rule). --ibu-tol and --ibu-max-iter replace the
chosen rule's numbers. On UCI Adult (ℓ′ = 5, selectivity 2–5 %) random
groups give 0.17 with shrink, 0.19 with discrepancy and 0.20 converged,
Anatomy's groups 0.25 at 1 % and 0.38 converged. iterations says how
many update steps ran (0 for direct counts and shrink).

anatomy: Xiao and Tao's estimator Σ_g m_g·c_g(s)/n_g over the groups (m_g
rows of group g satisfy P, c_g(s) of its n_g values are s); the sensitive
table comes from --groups FILE, by default the file named in the metadata
next to the release. global (mechanism A, keep probability p over V
values): the unbiased inversion (y − (1 − p)·n_P/V)/p over the n_P rows
satisfying P (and its tensor form for several sensitive values).

Parts. A big release can be read in parts: files each holding some of its
rows with its metadata (CSV cut at line boundaries, Parquet row groups
written out by a job), and count tables. --tabulate --columns C1,C2,…
writes a part's count table: its rows counted by their values in those
columns plus the sensitive columns (anatomy: the group id), one row per
combination seen, with the release's metadata; --tabulate merges count
tables and rows too. estimate then takes any mix of parts and count
tables and answers the queries exactly as one run over all the rows
would. The parts must add up to the release's N rows (more is refused as
overlapping parts, fewer as a missing part), carry the same metadata, and
every column a query names must be in every count table (a query on
another column is refused, naming it).`

	countsExample = `

  # count queries on an anonymized Adult, one or a file of them
  $ estimate --query 'sex=Female,occupation=Sales' adult.l5.csv
  query,estimate,iterations
  "sex=Female,occupation=Sales",1298.05,1
  $ estimate --codebook codebook.json --queries queries.csv --truth adult.csv -o answers.csv adult.l5.csv
  $ estimate --codebook codebook.json --query 'age=25-34,occupation=Craft-repair' adult.l5.csv
  # a release in parts (README: Splitting the work): count tables, then the queries
  $ estimate --tabulate --columns sex,race a5.part1.csv -o a5.c1.csv
  $ estimate --query 'sex=Female,race=White,occupation=Sales' a5.c1.csv a5.part2.csv`
)

// countsKind is the line of estimate's kinds for counts releases.
var countsKind = kind{mechanism.KindCounts, addCountFlags, runCounts, "count queries on anonymized tables (anonymize's diverted, anatomy, global)", countsHelp, countsExample}

// countOpts are the run's countOptions.
func (o *Options) countOpts() *countOptions {
	return mechanism.OptionsOf[countOptions](&o.mech, mechanism.KindCounts)
}

func addCountFlags(cmd *cobra.Command, opts *Options) {
	o := opts.countOpts()
	f := cmd.Flags()
	f.StringVar(&o.Query, "query", "", "anonymize releases: count query `Q` = 'col=value,col=value,…'")
	f.StringVar(&o.Queries, "queries", "", "anonymize releases: CSV `FILE` of count queries (header \"query\"), answered in order")
	f.StringVar(&o.Decoy, "decoy", decoyExact, "diverted: decoy probability `MODEL`: exact f_s(ℓ′−1)/(ℓ′(N−f_s)), paper (Figure 3's f_s/N, re-evaluated each step) or paper-fixed (f′_s/N)")
	f.StringVar(&o.Stop, "ibu-stop", stopAuto, "diverted: the Bayesian update's stopping `RULE`: paper (1 %), converged (1e-9), discrepancy (fit within noise), shrink (converged, then James–Stein toward independence), or auto (shrink on randomly grouped releases, paper otherwise)")
	f.Float64Var(&o.Tol, "ibu-tol", 0, "diverted: stop the Bayesian update once no state count changes by more than `T` of itself (default: the --ibu-stop rule's, 0.01 or 1e-9)")
	f.IntVar(&o.MaxIter, "ibu-max-iter", 0, "diverted: stop the Bayesian update after `N` steps (default: the --ibu-stop rule's, 10000 or 1000000)")
	f.StringVar(&o.Groups, "groups", "", "anatomy: the sensitive table `FILE` (default: the one named in the release's metadata)")
}

// countRelease is what estimate knows about an anonymize publication: what
// the planner needs (countquery.Release), and where to find and how to
// recognise an anatomy release's sensitive table.
type countRelease struct {
	countquery.Release
	dir                    string // folder of the release file, "" for stdin
	releaseID, groupsTable string // anatomy
	// randomGroups: A′'s decoy groups were drawn at random (anonymize
	// --grouping random), not the Anatomy way.
	randomGroups bool
	// codebookSum is the digest of the codebook's text in the release's
	// metadata once the text is dropped from it (dropCodebookText), ""
	// before.
	codebookSum string
}

// dropCodebookText lets the codebook's text in the release's metadata
// meta go (~10 MB at 1M labels; rel.Columns holds it parsed), keeping its
// digest: the parts' codebooks and the sensitive table's are compared
// with it.
func (rel *countRelease) dropCodebookText(meta table.Meta) {
	text, ok := meta[release.KeyCodebook]
	if !ok || rel.codebookSum != "" {
		return
	}
	rel.codebookSum = release.CodebookDigest(text)
	delete(meta, release.KeyCodebook)
}

// readCountRelease reads and checks an anonymize release's metadata.
func readCountRelease(in table.Reader, path string) (*countRelease, error) {
	meta := in.Meta()
	rel := &countRelease{Release: countquery.Release{Name: in.Name()}}
	if !table.IsStdio(path) {
		rel.dir = filepath.Dir(path)
	}
	damaged := "the release was damaged or edited: publish the original table again with anonymize"
	bad := func(err error) error { return fmt.Errorf("%s: %v; %s", rel.Name, err, damaged) }
	var a release.Anonymized
	if err := a.Decode(meta, rel.Name); err != nil {
		return nil, err
	}
	rel.Mechanism, rel.Sensitive, rel.Policy = a.Mechanism, a.Sensitive, a.Policy
	rel.L, rel.Rows = a.L, a.Rows
	rel.randomGroups = a.Grouping == release.GroupingRandom
	for _, name := range rel.Sensitive {
		col, _ := a.Codebook.Column(name) // Decode checked it is there
		rel.Columns = append(rel.Columns, col)
	}
	switch rel.Mechanism {
	case release.MechanismGlobal:
		// p (per column) and ℓ′, typed and checked: p = 1 (no privacy)
		// and a p that disagrees with ℓ′ are refused.
		var g release.Global
		if err := g.Decode(meta, rel.Name); err != nil {
			return nil, err
		}
		rel.Keep = g.P
	case release.MechanismAnatomy:
		rel.GroupColumn, rel.releaseID, rel.groupsTable = a.GroupColumn, a.ReleaseID, a.GroupsTable
		rel.Groups = a.Groups
	}
	// The published table must hold what the metadata announces.
	has := func(c string) bool { return len(in.Schema().FieldIndices(c)) > 0 }
	for _, c := range rel.Sensitive {
		if has(c) == (rel.Mechanism == release.MechanismAnatomy) {
			return nil, bad(fmt.Errorf("column %q is %s the table, against its metadata", c, map[bool]string{true: "in", false: "missing from"}[has(c)]))
		}
	}
	if rel.Mechanism == release.MechanismAnatomy && !has(rel.GroupColumn) {
		return nil, bad(fmt.Errorf("the group id column %q is missing", rel.GroupColumn))
	}
	return rel, nil
}

func runCounts(o *Options, in table.Reader) error {
	// Live: the codebook (~16 MB at 1M values, its index included), the
	// plan's class per label (4 MB), Anatomy's sizes and counts per group
	// (12–20 MB at 800K groups) and a batch, while a table's metadata is
	// parsed at each opening (~30 MB): the budget of the other stages that
	// hold a codebook.
	cli.LowerMemoryBudget(cli.CodebookBudget)
	co := o.countOpts()
	rel, err := readCountRelease(in, o.Input)
	if err != nil {
		return err
	}
	if err := o.checkCountTabulate(); err != nil {
		return err
	}
	if o.Tabulate {
		return o.tabulateCounts(in, rel)
	}
	switch {
	case co.Query != "" && co.Queries != "":
		return cli.Usagef("give either --query or --queries, not both")
	case co.Query == "" && co.Queries == "":
		return cli.Usagef("%s is a release of anonymize (mechanism %s): ask count queries with --query 'col=value,…' or --queries FILE", rel.Name, rel.Mechanism)
	case len(o.Truth) > 1:
		return cli.Usagef("an anonymize release has one original table: give --truth once")
	case co.Decoy != decoyExact && co.Decoy != decoyPaper && co.Decoy != decoyPaperFixed:
		return cli.Usagef("--decoy %q: choose exact, paper or paper-fixed", co.Decoy)
	case co.Stop != stopAuto && co.Stop != stopPaper && co.Stop != stopConverged && co.Stop != stopDiscrepancy && co.Stop != stopShrink:
		return cli.Usagef("--ibu-stop %q: choose auto, paper, converged, discrepancy or shrink", co.Stop)
	case co.Stop == stopShrink && co.Decoy != decoyExact:
		return cli.Usagef("--ibu-stop shrink shrinks the maximum-likelihood estimates of the exact a01: drop --decoy %s", co.Decoy)
	case o.cmd.Flags().Changed("ibu-tol") && !cli.Positive.Contains(co.Tol):
		return cli.CheckNumber("ibu-tol", co.Tol, cli.Positive)
	case o.cmd.Flags().Changed("ibu-max-iter") && co.MaxIter < 1:
		return cli.Usagef("--ibu-max-iter must be at least 1, got %d", co.MaxIter)
	case co.Queries == "-" && table.IsStdio(o.Input):
		return cli.Usagef("the release and --queries cannot both come from standard input")
	}
	var queries []countquery.Query
	if co.Query != "" {
		q := countquery.Query{Text: strings.TrimSpace(co.Query)}
		if q.Conds, err = countquery.Parse(co.Query); err != nil {
			return cli.Usagef("--query %q: %v", co.Query, err)
		}
		queries = []countquery.Query{q}
	} else if queries, err = countquery.ReadQueries(co.Queries, o.Streams.In); err != nil {
		return err
	}
	var nsaBook *codebook.Codebook
	if o.Codebook != "" {
		if nsaBook, err = codebook.Load(o.Codebook); err != nil {
			return err
		}
	}
	if err := checkCountTableQueries(in, rel, queries, co.Queries); err != nil {
		return err
	}
	stop := o.stopRule(rel)
	plan, err := countquery.NewPlanFor(&rel.Release, in.Schema(), nsaBook, queries, co.Queries, countquery.Options{Shrink: stop.rule == stopShrink})
	if err != nil {
		return err
	}
	rel.dropCodebookText(in.Meta())
	if rel.Mechanism == release.MechanismAnatomy {
		if err := o.readAnatomyTable(rel, in.Meta(), plan); err != nil {
			return err
		}
	}
	if err := o.scanCountParts(in, rel, plan, queries, co.Queries); err != nil {
		return err
	}
	hasTruth := len(o.Truth) == 1
	if hasTruth {
		if err := o.scanCountTruth(plan); err != nil {
			return err
		}
	}
	answers, err := plan.Answers(countquery.Options{Tolerance: stop.tol, MaxIter: stop.maxIter,
		ExactDecoy: co.Decoy == decoyExact, UpdateFrequencies: co.Decoy == decoyPaper,
		Discrepancy: stop.rule == stopDiscrepancy || stop.rule == stopShrink, Shrink: stop.rule == stopShrink})
	if err != nil {
		return err
	}
	if n := countNotConverged(answers); n > 0 {
		o.Streams.Warnf("estimate", "%d of %d queries stopped at %d steps before the update met its tolerance %g; raise --ibu-max-iter for the maximum-likelihood estimates", n, len(answers), stop.maxIter, stop.tol)
	}
	return o.writeCountAnswers(rel, queries, plan.Rows(), answers, hasTruth, stop)
}

// ibuStop is the Bayesian update's stopping rule for one run.
type ibuStop struct {
	rule    string // stopPaper, stopConverged, stopDiscrepancy or stopShrink
	tol     float64
	maxIter int
}

// stopRule resolves --ibu-stop for rel: auto is countquery.DefaultOptions'
// choice — shrink on a release whose decoy groups were drawn at random
// (the discrepancy principle when --decoy is not exact, which shrink
// needs) and the paper's rule otherwise (measured on Adult for ℓ′ = 2..7:
// countquery's doc and the README); shrink runs queries of several
// sensitive values with the discrepancy rule; discrepancy falls back on the
// converged rule's numbers when the fit is never reached; --ibu-tol and
// --ibu-max-iter, when given, replace the rule's numbers.
func (o *Options) stopRule(rel *countRelease) ibuStop {
	co := o.countOpts()
	rule := co.Stop
	if rule == stopAuto {
		def := countquery.DefaultOptions(rel.randomGroups)
		switch {
		case def.Shrink && co.Decoy == decoyExact:
			rule = stopShrink
		case def.Discrepancy:
			rule = stopDiscrepancy // shrink needs the exact a01
		default:
			rule = stopPaper
		}
	}
	st := ibuStop{rule, countquery.DefaultTolerance, countquery.DefaultMaxIter}
	if rule == stopConverged || rule == stopDiscrepancy || rule == stopShrink {
		st.tol, st.maxIter = countquery.ConvergedTolerance, countquery.ConvergedMaxIter
	}
	f := o.cmd.Flags()
	if f.Changed("ibu-tol") {
		st.tol = co.Tol
	}
	if f.Changed("ibu-max-iter") {
		st.maxIter = co.MaxIter
	}
	return st
}
