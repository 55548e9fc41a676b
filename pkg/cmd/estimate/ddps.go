package estimate

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/ddps"
	"github.com/pramkit/pramkit/pkg/estimate"
	"github.com/pramkit/pramkit/pkg/mechanism"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// ddpsOptions are the flags of the ddps estimators.
type ddpsOptions struct {
	RoundTwo bool // --round-two: the round-two-only estimator
}

const (
	ddpsHelp = `

ddps releases (perturb --mechanism ddps) hold two reports per data owner,
COLUMN.round1 and COLUMN.round2. With C1[v], C2[v] the numbers of round-one
and round-two reports of value v and π_s from the metadata, the count of
owners with value v is estimated by the paper's difference (Joy Eq. 41)
  n̂_v = (C2[v] − C1[v])/π_s
whose standard deviation, from the Bernoulli populations of Lemma 6.2,
  sd = √(N·π_⊥v(1 − π_⊥v) + n_v·a(1 − a) + (N − n_v)·π_⊥v(1 − π_⊥v))/π_s,
  a = π_⊥v + π_s,  N = the number of owners,
is reported with n̂_v (clamped to [0, N]) in place of n_v. Estimates are
not clipped, so they stay unbiased. The number of participants is N minus
the estimated non-participants (all N unless perturb had --non-participant).
--round-two uses round two alone, n̂_v = (C2[v] − N·π_⊥v)/π_s: round one's
expectation is known, so this is also unbiased and has the smaller variance
(by N·π_⊥v(1 − π_⊥v)/π_s²). With --truth FILE, the original table, the true
counts, the errors and their ℓ2 norm are added.

Output: one row per value: value, estimate, sd, and with --truth true and
error; a --non-participant category adds the row "VALUE (not
participating)". --json prints a summary instead of the table (the table
still goes to -o when given): π_s, ε, participants and participants_sd,
the counts, reports, column, estimator, and with --truth the true counts,
participants and l2_error. The table's metadata carries the summary's
items (those of a nested object as non_participants_estimate,
truth_l2_error, …).

Parts: the estimators read only C1 and C2, which add up over disjoint
parts of the owners, so estimate takes several files of one release — row
files (pieces of the release) and count tables — and gives exactly the
estimate of one run over all their rows. --tabulate writes, instead of
estimates, a count table: COLUMN.round1, COLUMN.round2 and count, one row
per observed pair of reports. Parts must agree on the release's metadata.
A ddps release records no number of owners, so estimate cannot check that
the parts add up: a missing part goes unnoticed (give every part), and only
a file given twice is refused.`

	ddpsExample = `

  # value counts of a DDPS release, with errors against the original table
  $ estimate occupation.ddps.csv --truth adult.csv
  $ estimate occupation.ddps.csv --json --round-two

  # the release's counts (of a part, in general), estimated later alone
  # or with the release's other parts: row files or count tables
  $ estimate --tabulate occupation.ddps.csv -o occupation.counts.csv
  $ estimate occupation.counts.csv --json`
)

// ddpsKind is the line of estimate's kinds for ddps releases.
var ddpsKind = kind{release.MechanismDDPS, addDDPSFlags, runDDPS, "DDPS releases (perturb --mechanism ddps)", ddpsHelp, ddpsExample}

// ddpsOpts are the run's ddpsOptions.
func (o *Options) ddpsOpts() *ddpsOptions {
	return mechanism.OptionsOf[ddpsOptions](&o.mech, release.MechanismDDPS)
}

func addDDPSFlags(cmd *cobra.Command, opts *Options) {
	o := opts.ddpsOpts()
	cmd.Flags().BoolVar(&o.RoundTwo, "round-two", false, "ddps: estimate from round two alone (smaller variance) instead of the difference of the rounds (Eq. 41)")
}

// ddpsRelease is what estimate knows about a ddps release.
type ddpsRelease struct {
	name           string
	column         string
	mech           *ddps.Mechanism
	md             release.DDPS // the labels of ⊥0..⊥V (label)
	nonParticipant string       // the category reported as ⊥0, "" if none
	noneToken      string       // how ⊥0 is written
	col            *codebook.Column
}

// label returns how output ⊥o is written.
func (rel *ddpsRelease) label(o int) string { return rel.md.Label(o) }

// output returns the output of codebook index x: 1..V in codebook order,
// −1 for the non-participant category (never a report; its owners report
// ⊥0 in round two).
func (rel *ddpsRelease) output(x int) int {
	if o := rel.md.Output(x); o > 0 {
		return o
	}
	return -1
}

func runDDPS(o *Options, in table.Reader) error {
	// Live: the codebook (~16 MB at 1M values, its index included), the
	// two rounds' counts (8 MB) and a batch: the budget of the other
	// stages that hold a codebook.
	cli.LowerMemoryBudget(cli.CodebookBudget)
	if err := o.checkLocalFlags(in); err != nil {
		return err
	}
	rel, err := readDDPSRelease(in)
	if err != nil {
		return err
	}
	if !o.Tabulate && len(o.Inputs) <= 1 {
		// Parsed, the codebook text is needed neither to compare parts
		// nor for a count table's metadata: the reader's Meta is its only
		// holder (10 MB at 1M values).
		delete(in.Meta(), release.KeyCodebook)
	}
	if len(o.Columns) > 1 || (len(o.Columns) == 1 && o.Columns[0] != rel.column) {
		return cli.Usagef("--columns: %s is a ddps release of the one column %q", rel.name, rel.column)
	}
	if err := o.checkDDPSTabulate(); err != nil {
		return err
	}
	pairs, err := o.countDDPSParts(rel, in, o.Tabulate)
	if err != nil {
		return err
	}
	if o.Tabulate {
		return o.writeDDPSCountTable(rel, in.Meta(), pairs)
	}
	tally := pairs.t
	est, estimator := ddps.Estimates{}, "difference"
	if o.ddpsOpts().RoundTwo {
		est, err = rel.mech.EstimateRoundTwo(tally)
		estimator = "round-two"
	} else {
		est, err = rel.mech.Estimate(tally)
	}
	if err != nil {
		return err
	}
	if rel.nonParticipant == "" {
		// Every owner holds one of the V values: all N participate, exactly.
		est.Participants = ddps.Estimate{Count: float64(est.N)}
	}
	var truth []int64 // truth[o]: owners with true value o
	if len(o.Truth) == 1 {
		if truth, err = rel.readTruth(o, o.Truth[0]); err != nil {
			return err
		}
	}
	res := ddpsResult{rel: rel, est: est, estimator: estimator, truth: truth}
	return o.writeLocalReport(res.asReport())
}

// readDDPSRelease reads and checks a ddps release's metadata.
func readDDPSRelease(in table.Reader) (*ddpsRelease, error) {
	name, meta := in.Name(), in.Meta()
	// The column, codebook, masses and ε, typed and checked against each
	// other: an edited mass or ε, or an older release's values that are
	// not the codebook's, is refused rather than estimated with.
	var md release.DDPS
	if err := md.Decode(meta, name); err != nil {
		return nil, err
	}
	rel := &ddpsRelease{name: name, column: md.Column, md: md, nonParticipant: md.NonParticipant, noneToken: md.NoneToken, col: md.Col}
	// ddps.New keeps masses that sum to 1 up to rounding, so this is the
	// mechanism perturb used, π_s and π_⊥ bit for bit.
	var err error
	if rel.mech, err = md.Mechanism(); err != nil {
		return nil, fmt.Errorf("%s: %v; the release was damaged or edited: randomize the original table again with perturb --mechanism ddps", name, err)
	}
	return rel, nil
}

// readTruth counts the true values of the original table's column: the
// number of owners per output o (0 for the non-participant category).
func (rel *ddpsRelease) readTruth(o *Options, path string) ([]int64, error) {
	enc, err := rel.col.Encoder(codebook.Policy{})
	if err != nil {
		return nil, err
	}
	counts := make([]int64, rel.mech.Values()+1)
	err = o.scanTruth(path, []string{rel.column}, func(file string, rec arrow.RecordBatch, cols []int, first int64) error {
		vals := table.ValuesOf(rec.Column(cols[0]))
		for i := range vals.Len() {
			x, err := enc.Index(vals.String(i))
			if err != nil {
				return &table.DataError{File: file, Row: first + int64(i), Column: rel.column, Err: err}
			}
			counts[rel.md.Output(int(x))]++ // the non-participant category truly holds ⊥0
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return counts, nil
}

// ddpsResult is everything runDDPS reports.
type ddpsResult struct {
	rel       *ddpsRelease
	est       ddps.Estimates
	estimator string  // "difference" (Eq. 41) or "round-two"
	truth     []int64 // nil without --truth
}

// ddpsJSON is --json's shape: the keys of the issue first, in order, then
// the extras.
type ddpsJSON struct {
	Mechanism      string           `json:"mechanism"`
	PiS            float64          `json:"pi_s"`
	Epsilon        float64          `json:"epsilon"`
	Participants   float64          `json:"participants"`
	Counts         []ddpsCountJSON  `json:"counts"`
	ParticipantsSD float64          `json:"participants_sd"`
	Reports        int64            `json:"reports"`
	Column         string           `json:"column"`
	Estimator      string           `json:"estimator"`
	NonParticipant *ddpsNonPartJSON `json:"non_participants,omitempty"`
	Truth          *ddpsTruthJSON   `json:"truth,omitempty"`
}

type ddpsCountJSON struct {
	Value    string  `json:"value"`
	Estimate float64 `json:"estimate"`
	SD       float64 `json:"sd"`
}

type ddpsNonPartJSON struct {
	Value    string  `json:"value"`
	Estimate float64 `json:"estimate"`
	SD       float64 `json:"sd"`
}

type ddpsTruthJSON struct {
	Counts       []ddpsTrueCount `json:"counts"`
	Participants int64           `json:"participants"`
	L2Error      float64         `json:"l2_error"`
}

type ddpsTrueCount struct {
	Value string `json:"value"`
	Count int64  `json:"count"`
}

// json is the --json summary with its lists null: lists gives them.
func (r ddpsResult) json() ddpsJSON {
	rel, est := r.rel, r.est
	out := ddpsJSON{
		Mechanism: release.MechanismDDPS, PiS: rel.mech.PiS(), Epsilon: rel.mech.Epsilon(),
		Participants: est.Participants.Count, ParticipantsSD: est.Participants.SD,
		Reports: est.N, Column: rel.column, Estimator: r.estimator,
	}
	if rel.nonParticipant != "" {
		c := est.Count(0)
		out.NonParticipant = &ddpsNonPartJSON{Value: rel.nonParticipant, Estimate: c.Count, SD: c.SD}
	}
	if r.truth != nil {
		out.Truth = &ddpsTruthJSON{Participants: r.trueParticipants(), L2Error: r.l2()}
	}
	return out
}

// lists are the summary's per-value lists: counts (value 1 … V), and the
// truth's counts.
func (r ddpsResult) lists() []jsonList {
	rel, est := r.rel, r.est
	v := rel.mech.Values()
	l := []jsonList{{key: "counts", n: v, elem: func(i int) any {
		c := est.Count(i + 1)
		return ddpsCountJSON{Value: rel.label(i + 1), Estimate: c.Count, SD: c.SD}
	}}}
	if r.truth != nil {
		l = append(l, jsonList{key: "counts", n: v, elem: func(i int) any {
			return ddpsTrueCount{Value: rel.label(i + 1), Count: r.truth[i+1]}
		}})
	}
	return l
}

// trueParticipants is the number of owners holding one of the V values.
func (r ddpsResult) trueParticipants() int64 {
	var p int64
	for _, c := range r.truth[1:] {
		p += c
	}
	return p
}

// l2 is ‖n̂ − n‖₂ over the V values.
func (r ddpsResult) l2() float64 {
	est, truth := make([]float64, 0, len(r.truth)), make([]float64, 0, len(r.truth))
	for o := 1; o < len(r.truth); o++ {
		est, truth = append(est, r.est.Count(o).Count), append(truth, float64(r.truth[o]))
	}
	d, _ := estimate.L2Slice(est, truth) // the lengths are equal
	return d
}

// asReport is the table: one row per value (and the non-participant
// category, if any) with its estimated count and standard deviation.
func (r ddpsResult) asReport() *localReport {
	rel, est := r.rel, r.est
	cols := []localColumn{{name: "value"}, {name: "estimate", float: true}, {name: "sd", float: true}}
	if r.truth != nil {
		cols = append(cols, localColumn{name: "true", float: true}, localColumn{name: "error", float: true})
	}
	rep := &localReport{summary: func() any { return r.json() }, lists: r.lists(), columns: cols}
	row := func(label string, o int) []any {
		c := est.Count(o)
		row := []any{label, c.Count, c.SD}
		if r.truth != nil {
			row = append(row, float64(r.truth[o]), c.Count-float64(r.truth[o]))
		}
		return row
	}
	// One row at a time, as written: V rows built first took ~100 bytes a
	// value.
	rep.rows = func(yield func([]any) bool) {
		for o := 1; o <= rel.mech.Values(); o++ {
			if !yield(row(rel.label(o), o)) {
				return
			}
		}
		if rel.nonParticipant != "" {
			yield(row(rel.nonParticipant+" (not participating)", 0))
		}
	}
	return rep
}
