package estimate

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/estimate"
	"github.com/pramkit/pramkit/pkg/mechanism"
	"github.com/pramkit/pramkit/pkg/table"
)

// pramOptions are the flags of the gamma-diagonal estimators.
type pramOptions struct {
	Method    string   // --method
	Marginals []string // --marginal, repeatable and comma-separated
	Gamma     float64  // --gamma, overrides the metadata
	N         int64    // -n, overrides the metadata
	M         int64    // -m, overrides the metadata
	CI        string   // --ci wilson|bootstrap|none
	Level     float64  // --level
	Reps      int      // --replicates
	MaxIter   int      // --max-iter
	Tol       float64  // --tol
	TruthID   string   // --truth-id
}

// pramMaxListed is the largest output domain listed cell by cell; above it the
// table lists the observed cells and one line for all the others, so that
// memory and output stay O(observed cells).
const pramMaxListed = 1_000_000

const (
	pramHelp = `

gamma-diagonal (the output of decrypt): the joint distribution of the
release's columns, or a marginal, as one row per value with the codebook's
labels (Lin–Wang–Rane §III-A "Release", SPEC §3.5). T(g) is the observed
frequency of joint value g among the m released rows, K the number of joint
values, q = γ + K − 1. --method chooses the estimator:
  inverse    the paper's A⁻¹T in closed form, T̂(g) = (q·T(g) − 1)/(γ − 1):
             unbiased, but cells can be negative;
  projected  T̂ projected onto the probability simplex (Euclidean): never
             further from the truth than T̂, in every release;
  mle        (default) maximum likelihood under the PRAM model, exact,
             in closed form: the inverse estimate of the release restricted
             to its most frequent values, as many as keep it positive, and
             0 for all other values. Giving --max-iter or --tol computes it
             by EM instead (iterative Bayesian update, from the uniform
             distribution; slow when γ is much smaller than K), to compare:
             it stops when no cell changes by more than --tol (1e-10) in an
             iteration, or after --max-iter (20000) iterations. The
             log-likelihood's distance to its maximum is bounded
             (Frank–Wolfe duality gap, loglik_gap in --json), with a
             warning when it may exceed 0.001. On UCI Adult (education ×
             income) mle is at least as accurate as inverse at every ε
             tested.
γ, n, m and the codebook come from the metadata; --gamma, -n, -m and
--codebook override them (with a warning), and a missing item is an error
that names its flag. K is the product of the codebook's category counts
and must match the metadata's. A re-perturbed release (releases = r ≥ 2) is
estimated with the γ of all r perturbations combined (from the metadata's
list gammas; a file without it only for r = 2).

Output columns: one per released column (the labels), then
  estimate   the estimated share of the full table (n rows) with this value;
  observed   its share among the m released rows, T(g); count: those rows;
  ci_low, ci_high  a --level (95%) confidence interval for the true share;
  truth      the true share, with --truth.
Every value is listed, also those never observed (their estimate is not 0
for inverse, and for mle by EM). When the output has more than 1,000,000
values, only the observed ones are listed, plus one line with empty labels
for all the others, and a column "cells" says how many values a line
stands for (each of them has the line's estimate, interval and, for truth,
the mean).

Intervals (--ci): wilson (default) solves |T(g) − p| ≤ z·sqrt(p(1 − p)/m)
for the release probability p (Wilson's score interval) and maps it
through p ↦ (q·p − 1)/(γ − 1), clipped to [0, 1]; the binomial variance
bounds the real one (sampling without replacement only lowers it), so it
is conservative, and it is a valid interval for the true share whatever
--method is. bootstrap draws --replicates (200) releases from the PRAM model
at the fitted estimate, re-estimates each with --method and takes the
percentiles (for projected and mle; --seed makes it reproducible).

--marginal COL (repeat it, or give a,b) sums the joint estimate over the
other columns: the distribution of the named columns together. Its
interval is that of the marginal release, which is itself γ′-diagonal with
γ′ = 1 + (γ − 1)·K′/K over its K′ values. --columns a,b instead estimates
from the release restricted to a and b (the same γ′), as if only they had
been released: the same numbers for inverse; for projected and mle
neither is always closer (on Adult, --columns gives the better income
marginal, --marginal the better education marginal), and --columns is
less work when K is huge.

--truth FILE gives the curators' original tables (the full n rows before
sampling, raw values or labels), to report the error: repeat it for each
curator's file; each release column is taken from the first file that has
it. Rows are joined by position (row i of every file is the same person),
or with --truth-id COL by that id column (which every file must have;
memory then grows with n). The JSON summary gets l2_error = ‖T̂ − t‖₂ over
all K values, t the true joint type, and the table a truth column.

Memory: a release's counts are held in memory up to 262,144 observed
values. Beyond that, an estimate over all the release's columns by a
closed form (any --method without --max-iter or --tol) with --ci wilson
or none, and --tabulate, spill them to a temporary file in $TMPDIR (2
to 10 bytes an observed value, removed however the run ends) and take
the same memory whatever their number; --columns, --marginal, --truth, --ci
bootstrap and EM hold every count and estimate, ~100 bytes an observed
value.

Parts of a release: estimate takes several files of one release — pieces
of decrypt's output holding disjoint rows, and count tables — and gives
exactly the estimate (table, intervals, summary) of one run over all the
rows, since every estimator reads the release only through the count of
each joint value. --tabulate writes those counts instead of estimates: a
count table, the release's columns and a count column, one row per
observed joint value, with the release's metadata and count_table = true;
it takes several parts too, and need not cover the whole release. The
files must be parts of the same release (same fingerprint, γ, n, m, K,
columns and codebook), and their rows, a count table's counts, must add
up to m: a part given twice or a missing one is refused, with each file's
rows. The other kinds of release take parts too (estimate help KIND).

--json prints a summary instead of the table (the table still goes to -o
when given): method, epsilon (Theorem III.2 for n, m, γ), gamma, n, m, K,
bound (Theorem III.4, (c·√K + 1)/√m with c = 1 + K/(γ − 1), on the
expected ℓ2 error of inverse), releases and epsilon_composed (a sample
released r times: ln((n + m(Γ − 1))/n), Γ the product of the γ's;
sample_releases when perturb's ledger knew of releases from other copies
of the files, with its epsilon_composed), the
planning optimum m_opt for this ε and its bound, EM's iterations, and
l2_error with --truth. The table's metadata carries the same items.`

	pramExample = `  # the researcher decrypts the release and estimates the joint distribution
  $ decrypt --key alice.key --key bob.key release.parquet | estimate -o joint.csv
  $ head -3 joint.csv
  education,income,estimate,observed,count,ci_low,ci_high
  Bachelors,>50K,0.06584615845265722,0.047642197374817695,98,0.04866275661269786,0.08886297357584026
  Bachelors,<=50K,0.08574028313412009,0.056878949927078266,117,0.06699079620252178,0.11066758026404523

  # the marginal of education by the paper's inverse estimator
  $ estimate --method inverse --marginal education sanitized.csv -o education.csv

  # the release's counts, and the same estimate from them (parts of a
  # release, row files and count tables, are given together the same way)
  $ estimate --tabulate sanitized.csv -o counts.csv
  $ estimate counts.csv -o joint-from-counts.csv

  # privacy, error bound, and the error against the curators' original tables
  $ estimate --json --truth alice.csv --truth bob.csv sanitized.csv
  {"method":"mle","columns":["education","income"],"epsilon":1,"gamma":28.19930705710013,"n":32561,"m":2057,"K":32,"bound":0.29351543260398094,…,"l2_error":0.05186891390193661}`
)

// pramKind is the line of estimate's kinds for pram releases.
var pramKind = kind{mechanism.KindPRAM, addPRAMFlags, runPRAM, "γ-diagonal releases (perturb's default mechanism, read after decrypt)", pramHelp, pramExample}

// pramOpts are the run's pramOptions.
func (o *Options) pramOpts() *pramOptions {
	return mechanism.OptionsOf[pramOptions](&o.mech, mechanism.KindPRAM)
}

func addPRAMFlags(cmd *cobra.Command, opts *Options) {
	o := opts.pramOpts()
	f := cmd.Flags()
	f.StringVar(&o.Method, "method", "mle", "gamma-diagonal: estimator `M`, inverse, projected or mle")
	f.StringArrayVar(&o.Marginals, "marginal", nil, "gamma-diagonal: print the marginal distribution of `COL` (repeat, or a,b, for several columns together)")
	f.Float64Var(&o.Gamma, "gamma", 0, "gamma-diagonal: PRAM parameter `G` > 1, overriding the metadata")
	f.Int64VarP(&o.N, "rows", "n", 0, "gamma-diagonal: rows `N` of the full table, overriding the metadata (for ε)")
	f.Int64VarP(&o.M, "sample-size", "m", 0, "gamma-diagonal: released rows `M`, overriding the metadata (for ε)")
	f.StringVar(&o.CI, "ci", "wilson", "gamma-diagonal: confidence intervals `KIND`: wilson, bootstrap or none")
	f.Float64Var(&o.Level, "level", 0.95, "confidence level `L` of the intervals, in (0, 1)")
	f.IntVar(&o.Reps, "replicates", 200, "gamma-diagonal: bootstrap replicates `N` for --ci bootstrap")
	f.IntVar(&o.MaxIter, "max-iter", estimate.DefaultMaxIter, "gamma-diagonal: compute the MLE by EM, stopped after `N` iterations (instead of exactly)")
	f.Float64Var(&o.Tol, "tol", estimate.DefaultTol, "gamma-diagonal: compute the MLE by EM, stopped once no cell changes by more than `T` (instead of exactly)")
	f.StringVar(&o.TruthID, "truth-id", "", "gamma-diagonal: join the --truth files by id `COLUMN` instead of by position")
}

// pramSettings are the checked flags of one gamma-diagonal run.
type pramSettings struct {
	method estimate.Method
	em     estimate.EMOptions
	ci     string
	level  float64
	reps   int
}

func (o *Options) parsePRAMSettings() (pramSettings, error) {
	p := *o.pramOpts()
	var s pramSettings
	var err error
	if s.method, err = estimate.ParseMethod(p.Method); err != nil {
		return s, cli.Usagef("--method %q: want inverse, projected or mle", p.Method)
	}
	switch p.CI {
	case "wilson", "bootstrap", "none":
		s.ci = p.CI
	default:
		return s, cli.Usagef("--ci %q: want wilson, bootstrap or none", p.CI)
	}
	if s.ci == "bootstrap" && s.method == estimate.MethodInverse {
		return s, cli.Usagef("--ci bootstrap is for --method projected or mle; inverse has closed-form (wilson) intervals")
	}
	if err := cli.CheckNumber("level", p.Level, cli.OpenUnit); err != nil {
		return s, err
	}
	s.level = p.Level
	if p.Reps < 2 {
		return s, cli.Usagef("--replicates must be at least 2, got %d", p.Reps)
	}
	s.reps = p.Reps
	if p.MaxIter < 1 {
		return s, cli.Usagef("--max-iter must be at least 1, got %d", p.MaxIter)
	}
	if err := cli.CheckNumber("tol", p.Tol, cli.Positive); err != nil {
		return s, err
	}
	f := o.cmd.Flags()
	s.em = estimate.EMOptions{Iterative: f.Changed("max-iter") || f.Changed("tol"), MaxIter: p.MaxIter, Tol: p.Tol}
	if f.Changed("gamma") {
		if err := cli.CheckGamma("gamma", p.Gamma); err != nil {
			return s, err
		}
	}
	if f.Changed("rows") && p.N < 1 {
		return s, cli.Usagef("-n must be at least 1, got %d", p.N)
	}
	if f.Changed("sample-size") && p.M < 1 {
		return s, cli.Usagef("-m must be at least 1, got %d", p.M)
	}
	if p.TruthID != "" && len(o.Truth) == 0 {
		return s, cli.Usagef("--truth-id needs --truth FILE")
	}
	if o.Tabulate {
		for _, name := range []string{"json", "truth", "marginal", "columns", "method", "ci"} {
			if f.Changed(name) {
				return s, cli.Usagef("--tabulate writes the counts, not an estimate: drop --%s (estimate from the count table instead)", name)
			}
		}
	}
	if o.JSON && f.Changed("output") && table.IsStdio(o.Output.Path) {
		return s, cli.Usagef("--json prints the summary on standard output: give -o FILE for the table, or drop --json")
	}
	return s, nil
}

// marginalNames splits --marginal's values (repeatable, comma-separated).
func (p pramOptions) marginalNames() ([]string, error) {
	var out []string
	for _, v := range p.Marginals {
		for _, name := range strings.Split(v, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				return nil, cli.Usagef("--marginal %q names an empty column", v)
			}
			out = append(out, name)
		}
	}
	return out, nil
}

// runPRAM estimates from a decrypted gamma-diagonal release: read and count
// the released rows, estimate, then write the table and/or the summary.
func runPRAM(o *Options, in table.Reader) error {
	cli.LowerMemoryBudget(cli.CodebookBudget)
	set, err := o.parsePRAMSettings()
	if err != nil {
		return err
	}
	rel, err := o.openPRAMRelease(in)
	if err != nil {
		return err
	}
	sh, err := o.pramShapeOf(rel)
	if err != nil {
		return err
	}
	stream := o.Tabulate || o.pramStreams(set, rel, sh)
	t := newPRAMTally(rel.dom.Size(), stream)
	defer t.close()
	if err := o.countPRAMParts(rel, in, t); err != nil {
		return err
	}
	if o.Tabulate {
		return o.writePRAMCountTable(rel, t)
	}
	if err := rel.account(o, t.total); err != nil {
		return err
	}
	if stream {
		res, err := o.estimatePRAMStream(set, rel, sh, t)
		if err != nil {
			return err
		}
		return o.writePRAM(rel, res)
	}
	counts, err := t.counts()
	if err != nil {
		return err
	}
	res, err := o.estimatePRAM(set, rel, sh, counts)
	if err != nil {
		return err
	}
	if len(o.Truth) > 0 {
		if err := o.addPRAMTruth(rel, res); err != nil {
			return err
		}
	}
	return o.writePRAM(rel, res)
}

// errPRAMNoRows is returned for a release without data rows.
var errPRAMNoRows = errors.New("the release has no data rows: nothing to estimate; get the release again from the server")
