package estimate

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/bitflip"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/estimate"
	"github.com/pramkit/pramkit/pkg/mechanism"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// bitflipOptions are the flags of the bitflip estimators.
type bitflipOptions struct {
	Anonymity bool // --anonymity
	Samples   int  // --anonymity-samples: Monte Carlo instead of exact
	MaxBits   int  // --anonymity-max-bits: the largest L computed exactly
}

// bitflipDefaultExactBits is the largest L for which --anonymity computes A_p
// exactly unless --anonymity-max-bits says otherwise: the exact method needs
// about 22·2^L bytes, 92 MB at L = 22 (and a few seconds on one core; L = 24
// takes 370 MB and about 25 s).
const bitflipDefaultExactBits = 22

const (
	bitflipHelp = `

bitflip releases (perturb --mechanism bitflip) hold randomized bits; every
bit flipped with the lie probability q recorded in the metadata. For each
bit, the report mean ȳ over the n rows gives the unbiased frequency
  f̂ = (ȳ − q)/(1 − 2q)
with a normal confidence interval f̂ ± z·√(ȳ(1 − ȳ)/n)/(1 − 2q) at --level.
Estimates are not clipped (they stay unbiased, so they can leave [0, 1]).
For each column the estimates of its categories (for a binary column f̂ and
1 − f̂) are also projected onto the probability simplex, the closest
distribution ("distribution"). With --truth FILE, the original table, the
true frequencies and the ℓ2 error of the distribution are added.

Output: one row per category of each column: column, value, bit (its bit
column; a binary column's first category has none, its estimate is
1 − f̂), estimate, ci_low, ci_high, distribution, and with --truth true and
l2_error. --json prints a summary instead of the table (the table still
goes to -o when given): lie, ε per bit, per record and between valid rows
(epsilon_encoded), reports, level, the bits and each column's
distribution. The table's metadata carries the summary's items.

--anonymity --truth FILE computes instead the anonymity of the original
collection T (Zhilyaev–Zeber §2):
  A_p = min over records v in T and reports s of P[s ∈ R(T∖{v})] / P[R(v) = s],
the chance that someone else's report equals s relative to v's chance of
reporting s, with P[s ∈ R(T)] = 1 − Π_{u∈T} (1 − q^d(u,s) (1 − q)^(L−d(u,s))).
It is exact (fast Walsh–Hadamard method, O(L·2^L) time, about 22·2^L bytes)
for L up to --anonymity-max-bits (default 22, at most 24). For more bits
--anonymity-samples N gives a Monte Carlo look instead: the smallest ratio
over N reports drawn from the records (an upper bound on A_p) and the mean
ratio with its standard error. The table has one row: method, records, L,
a_p (or samples, min_ratio, mean_ratio, mean_ratio_stderr), ε per record
and between valid rows, and the record and report where the smallest
ratio was found.

Parts: the estimates read only n and each bit's number of ones, which add
up over disjoint parts of the rows, so estimate takes several files of one
release — row files (pieces of the release) and count tables — and gives
exactly the estimate of one run over all their rows. --tabulate writes,
instead of estimates, a count table: one row with every bit column's number
of ones and count = n. Parts must agree on the release's metadata. A
bitflip release does not record its number of rows either (nor does ddps), so
estimate cannot check that the parts add up: a missing part goes unnoticed
(give every part), and only a file given twice is refused. --anonymity
reads no rows (q and L, and --truth's records): it takes one file, a
release or a count table.`

	bitflipExample = `

  # per-bit frequencies and category distributions, with errors against the truth
  $ estimate adult.bitflip.csv --truth adult.csv
  $ estimate adult.bitflip.csv --json

  # anonymity A_p of the original records under the release's q and L
  $ estimate adult.bitflip.csv --anonymity --truth adult.csv

  # the release's counts (of a part, in general), estimated later alone
  # or with the release's other parts: row files or count tables
  $ estimate --tabulate adult.bitflip.csv -o adult.bitflip.counts.csv
  $ estimate adult.bitflip.counts.csv --json`
)

// bitflipKind is the line of estimate's kinds for bitflip releases.
var bitflipKind = kind{release.MechanismBitflip, addBitflipFlags, runBitflip, "bitflip releases (perturb --mechanism bitflip)", bitflipHelp, bitflipExample}

// bitflipOpts are the run's bitflipOptions.
func (o *Options) bitflipOpts() *bitflipOptions {
	return mechanism.OptionsOf[bitflipOptions](&o.mech, release.MechanismBitflip)
}

func addBitflipFlags(cmd *cobra.Command, opts *Options) {
	o := opts.bitflipOpts()
	f := cmd.Flags()
	f.BoolVar(&o.Anonymity, "anonymity", false, "bitflip: compute the anonymity A_p of the original records given by --truth")
	f.IntVar(&o.Samples, "anonymity-samples", 0, "bitflip: estimate A_p by Monte Carlo over `N` sampled reports (for L too large to compute exactly)")
	f.IntVar(&o.MaxBits, "anonymity-max-bits", bitflipDefaultExactBits, fmt.Sprintf("bitflip: compute A_p exactly up to `L` bits (at most %d; needs about 22·2^L bytes)", bitflip.MaxExactBits))
}

// bitflipRelease is what estimate knows about a bitflip release.
type bitflipRelease struct {
	name   string
	mech   *bitflip.Mechanism
	layout *bitflip.Layout    // from the metadata "layout"
	cb     *codebook.Codebook // columns with a codebook; nil if none had
	epsEnc float64
}

func runBitflip(o *Options, in table.Reader) error {
	if err := o.checkLocalFlags(in); err != nil {
		return err
	}
	rel, err := readBitflipRelease(in)
	if err != nil {
		return err
	}
	if err := o.checkBitflipTabulate(); err != nil {
		return err
	}
	switch {
	case o.bitflipOpts().Anonymity && len(o.Inputs) > 1:
		return cli.Usagef("--anonymity reads the release's q and L, not its rows: give one file of the release")
	case o.bitflipOpts().Anonymity:
		return o.bitflipAnonymity(rel)
	case o.cmd.Flags().Changed("anonymity-samples") || o.cmd.Flags().Changed("anonymity-max-bits"):
		return cli.Usagef("--anonymity-samples and --anonymity-max-bits go with --anonymity")
	}
	level, err := o.bitflipLevel()
	if err != nil {
		return err
	}
	sel, err := rel.selectGroups(o.Columns)
	if err != nil {
		return err
	}
	tally, err := o.countBitflipParts(rel, in)
	if err != nil {
		return err
	}
	if o.Tabulate {
		return o.writeBitflipCountTable(rel, in.Meta(), tally)
	}
	ests, err := rel.mech.EstimateBits(tally, level)
	if err != nil {
		return err
	}
	var truth [][]int64 // truth[j][x]: rows of group j with value x
	var truthN int64
	if len(o.Truth) == 1 {
		truth = make([][]int64, rel.layout.NumGroups())
		for j := range truth {
			truth[j] = make([]int64, len(rel.layout.Group(j).Labels))
		}
		err := rel.readTruth(o, o.Truth[0], func(values []int) {
			for j, x := range values {
				truth[j][x]++
			}
			truthN++
		})
		if err != nil {
			return err
		}
	}
	res := bitflipResult{rel: rel, tally: tally, bits: ests, level: level}
	for _, j := range sel {
		gr, err := rel.estimateGroup(j, tally, ests, truth, truthN)
		if err != nil {
			return err
		}
		res.groups = append(res.groups, gr)
	}
	return o.writeLocalReport(res.asReport())
}

// bitflipLevel returns the confidence level of intervals, --level when the
// command has it.
func (o *Options) bitflipLevel() (float64, error) {
	f := o.cmd.Flags().Lookup("level")
	if f == nil {
		return 0.95, nil
	}
	lv, err := o.cmd.Flags().GetFloat64("level")
	if err != nil {
		return 0, err
	}
	if err := cli.CheckNumber("level", lv, cli.OpenUnit); err != nil {
		return 0, err
	}
	return lv, nil
}

// readBitflipRelease reads and checks a bitflip release's metadata.
func readBitflipRelease(in table.Reader) (*bitflipRelease, error) {
	name, meta := in.Name(), in.Meta()
	damaged := "the release was damaged or edited: randomize the original table again with perturb --mechanism bitflip"
	// q, L, the layout and the three ε, typed and checked against each
	// other: an edited q or ε is refused rather than estimated with.
	var md release.Bitflip
	if err := md.Decode(meta, name); err != nil {
		return nil, err
	}
	rel := &bitflipRelease{name: name, layout: md.Layout, epsEnc: md.EpsilonEncoded}
	var err error
	if s, ok := meta[release.KeyCodebook]; ok {
		if rel.cb, err = codebook.ParseString(s); err != nil {
			return nil, fmt.Errorf("%s: the codebook in the metadata is not valid (%v); %s", name, err, damaged)
		}
	}
	if rel.mech, err = bitflip.New(bitflip.Options{LieProbability: md.Lie, Bits: md.Bits}); err != nil {
		return nil, fmt.Errorf("%s: %v; %s", name, err, damaged)
	}
	return rel, nil
}

// selectGroups returns the groups named by --columns (all when empty).
func (rel *bitflipRelease) selectGroups(names []string) ([]int, error) {
	if len(names) == 0 {
		all := make([]int, rel.layout.NumGroups())
		for j := range all {
			all[j] = j
		}
		return all, nil
	}
	var sel []int
	for _, n := range names {
		j := rel.group(n)
		if j < 0 {
			return nil, cli.Usagef("--columns: %s has no bitflip column %q (columns: %s)", rel.name, n, strings.Join(rel.groupNames(), ", "))
		}
		sel = append(sel, j)
	}
	return sel, nil
}

func (rel *bitflipRelease) group(name string) int {
	for j := range rel.layout.NumGroups() {
		if rel.layout.Group(j).Name == name {
			return j
		}
	}
	return -1
}

func (rel *bitflipRelease) groupNames() []string {
	names := make([]string, rel.layout.NumGroups())
	for j := range names {
		names[j] = rel.layout.Group(j).Name
	}
	return names
}

// bitflipCountOnes counts the 1s of a 0/1 column; bad is the first cell that is
// not 0 or 1, or −1.
func bitflipCountOnes(a arrow.Array) (ones int64, bad int) {
	if c, ok := a.(*array.Int32); ok && c.NullN() == 0 {
		for i, x := range c.Int32Values() {
			if uint32(x) > 1 {
				return 0, i
			}
			ones += int64(x)
		}
		return ones, -1
	}
	v := table.ValuesOf(a)
	for i := range v.Len() {
		x, ok := v.Int(i)
		if !ok || (x != 0 && x != 1) {
			return 0, i
		}
		ones += x
	}
	return ones, -1
}

// readTruth reads the original table and calls fn with the value index of
// every group for each row (values is reused between calls).
func (rel *bitflipRelease) readTruth(o *Options, path string, fn func(values []int)) error {
	names := rel.groupNames()
	encs := make([]*codebook.Encoder, len(names)) // nil: a 0/1 column
	if rel.cb != nil {
		for j, name := range names {
			if c, ok := rel.cb.Column(name); ok {
				var err error
				if encs[j], err = c.Encoder(codebook.Policy{}); err != nil {
					return err
				}
			}
		}
	}
	values := make([]int, len(names))
	vals := make([]table.Values, len(names))
	return o.scanTruth(path, names, func(file string, rec arrow.RecordBatch, cols []int, first int64) error {
		for j, c := range cols {
			vals[j] = table.ValuesOf(rec.Column(c))
		}
		for i := range int(rec.NumRows()) {
			for j, enc := range encs {
				if enc != nil {
					x, err := enc.Index(vals[j].String(i))
					if err != nil {
						return &table.DataError{File: file, Row: first + int64(i), Column: names[j], Err: err}
					}
					values[j] = int(x)
					continue
				}
				x, ok := vals[j].Int(i)
				if !ok || (x != 0 && x != 1) {
					return &table.DataError{File: file, Row: first + int64(i), Column: names[j],
						Err: fmt.Errorf("value %s is not 0 or 1, but the release encoded this column as a 0/1 bit: give the original table", table.QuoteCell(vals[j].String(i)))}
				}
				values[j] = int(x)
			}
			fn(values)
		}
		return nil
	})
}

// bitflipGroupResult is the estimated distribution of one column.
type bitflipGroupResult struct {
	j      int
	labels []string
	bit    []int     // bit[x]: the bit of category x, −1 for a binary column's category 0
	est    []float64 // unprojected per-category estimates
	lo, hi []float64
	dist   []float64 // projected onto the simplex
	truth  []float64 // nil without --truth
	l2     float64   // ‖dist − truth‖₂
	l2Raw  float64   // ‖est − truth‖₂
}

func (rel *bitflipRelease) estimateGroup(j int, t *bitflip.Tally, ests []bitflip.Estimate, truth [][]int64, truthN int64) (bitflipGroupResult, error) {
	g := rel.layout.Group(j)
	off := rel.layout.Offset(j)
	k := len(g.Labels)
	gr := bitflipGroupResult{j: j, labels: g.Labels, bit: make([]int, k), est: make([]float64, k), lo: make([]float64, k), hi: make([]float64, k)}
	if g.Kind == bitflip.Binary {
		e := ests[off]
		gr.bit[0], gr.bit[1] = -1, off
		gr.est[0], gr.lo[0], gr.hi[0] = 1-e.Freq, 1-e.Hi, 1-e.Lo
		gr.est[1], gr.lo[1], gr.hi[1] = e.Freq, e.Lo, e.Hi
	} else {
		for x := range k {
			e := ests[off+x]
			gr.bit[x] = off + x
			gr.est[x], gr.lo[x], gr.hi[x] = e.Freq, e.Lo, e.Hi
		}
	}
	var err error
	if gr.dist, err = rel.mech.Distribution(rel.layout, j, t); err != nil {
		return gr, err
	}
	if truth != nil {
		gr.truth = make([]float64, k)
		for x, c := range truth[j] {
			gr.truth[x] = float64(c) / float64(truthN)
		}
		if gr.l2, err = estimate.L2Slice(gr.dist, gr.truth); err != nil {
			return gr, err
		}
		if gr.l2Raw, err = estimate.L2Slice(gr.est, gr.truth); err != nil {
			return gr, err
		}
	}
	return gr, nil
}

// bitflipResult is everything runBitflip reports.
type bitflipResult struct {
	rel    *bitflipRelease
	tally  *bitflip.Tally
	bits   []bitflip.Estimate
	level  float64
	groups []bitflipGroupResult
}

// bitflipJSON is --json's shape: the keys of the issue first, in order,
// then the extras (distributions, reports, tighter ε).
type bitflipJSON struct {
	Mechanism        string           `json:"mechanism"`
	Lie              float64          `json:"lie"`
	EpsilonPerBit    float64          `json:"epsilon_per_bit"`
	EpsilonPerRecord float64          `json:"epsilon_per_record"`
	Bits             []bitflipBitJSON `json:"bits"`
	EpsilonEncoded   float64          `json:"epsilon_encoded"`
	Reports          int64            `json:"reports"`
	Level            float64          `json:"level"`
	Columns          []bitflipColJSON `json:"columns"`
}

type bitflipBitJSON struct {
	Name     string  `json:"name"`
	Estimate float64 `json:"estimate"`
	CILow    float64 `json:"ci_low"`
	CIHigh   float64 `json:"ci_high"`
}

type bitflipColJSON struct {
	Name         string             `json:"name"`
	Kind         string             `json:"kind"`
	Distribution []bitflipValueJSON `json:"distribution"`
	L2Error      *float64           `json:"l2_error,omitempty"`
	L2ErrorRaw   *float64           `json:"l2_error_unprojected,omitempty"`
}

type bitflipValueJSON struct {
	Value    string   `json:"value"`
	Estimate float64  `json:"estimate"`
	True     *float64 `json:"true,omitempty"`
}

func (r bitflipResult) json() bitflipJSON {
	rel := r.rel
	out := bitflipJSON{
		Mechanism: "bitflip", Lie: rel.mech.LieProbability(),
		EpsilonPerBit: rel.mech.EpsilonBit(), EpsilonPerRecord: rel.mech.EpsilonRecord(),
		Bits:           []bitflipBitJSON{},
		EpsilonEncoded: rel.epsEnc, Reports: r.tally.N, Level: r.level,
		Columns: []bitflipColJSON{},
	}
	for _, gr := range r.groups {
		g := rel.layout.Group(gr.j)
		off := rel.layout.Offset(gr.j)
		for b := range g.Width() {
			e := r.bits[off+b]
			out.Bits = append(out.Bits, bitflipBitJSON{Name: rel.layout.BitName(off + b), Estimate: e.Freq, CILow: e.Lo, CIHigh: e.Hi})
		}
		c := bitflipColJSON{Name: g.Name, Kind: g.Kind.String()}
		for x, lab := range gr.labels {
			v := bitflipValueJSON{Value: lab, Estimate: gr.dist[x]}
			if gr.truth != nil {
				v.True = &gr.truth[x]
			}
			c.Distribution = append(c.Distribution, v)
		}
		if gr.truth != nil {
			c.L2Error, c.L2ErrorRaw = &gr.l2, &gr.l2Raw
		}
		out.Columns = append(out.Columns, c)
	}
	return out
}

// asReport is the table: one row per category of each column, with the
// estimate of its bit (1 − f̂ for a binary column's category 0, which has
// no bit), the interval and the projected distribution.
func (r bitflipResult) asReport() *localReport {
	rel := r.rel
	cols := []localColumn{{name: "column"}, {name: "value"}, {name: "bit"},
		{name: "estimate", float: true}, {name: "ci_low", float: true}, {name: "ci_high", float: true},
		{name: "distribution", float: true}}
	truth := len(r.groups) > 0 && r.groups[0].truth != nil
	if truth {
		cols = append(cols, localColumn{name: "true", float: true}, localColumn{name: "l2_error", float: true})
	}
	rep := &localReport{summary: func() any { return r.json() }, columns: cols, meta: table.Meta{}}
	rep.meta.SetInt(release.KeyBits, int64(rel.mech.Bits()))
	var rows [][]any // L rows at most
	for _, gr := range r.groups {
		name := rel.layout.Group(gr.j).Name
		for x, lab := range gr.labels {
			bit := ""
			if b := gr.bit[x]; b >= 0 {
				bit = rel.layout.BitName(b)
			}
			row := []any{name, lab, bit, gr.est[x], gr.lo[x], gr.hi[x], gr.dist[x]}
			if truth {
				row = append(row, gr.truth[x], gr.l2)
			}
			rows = append(rows, row)
		}
	}
	rep.rows = slices.Values(rows)
	return rep
}

// bitflipAnonymityJSON is the "anonymity" object of --anonymity --json.
type bitflipAnonymityJSON struct {
	Method string `json:"method"` // "exact" or "monte-carlo"
	// exact
	Ap *float64 `json:"a_p,omitempty"`
	// monte-carlo
	Samples      int      `json:"samples,omitempty"`
	MinRatio     *float64 `json:"min_ratio,omitempty"` // ≥ A_p
	MeanRatio    *float64 `json:"mean_ratio,omitempty"`
	MeanStdErr   *float64 `json:"mean_ratio_stderr,omitempty"`
	Record       string   `json:"record"`
	Report       string   `json:"report"`
	ExactMaxBits int      `json:"exact_max_bits"`
}

// bitflipAnonymityOut is --anonymity --json's shape.
type bitflipAnonymityOut struct {
	Mechanism        string               `json:"mechanism"`
	Lie              float64              `json:"lie"`
	L                int                  `json:"L"`
	Records          int64                `json:"records"`
	EpsilonPerBit    float64              `json:"epsilon_per_bit"`
	EpsilonPerRecord float64              `json:"epsilon_per_record"`
	EpsilonEncoded   float64              `json:"epsilon_encoded"`
	Anonymity        bitflipAnonymityJSON `json:"anonymity"`
}

// bitflipAnonymity computes A_p of the original records under the
// release's q and layout. Memory: the records, ⌈L/64⌉ words each, plus
// about 22·2^L bytes for the exact method.
func (o *Options) bitflipAnonymity(rel *bitflipRelease) error {
	bo := o.bitflipOpts()
	f := o.cmd.Flags()
	L := rel.layout.Width()
	switch {
	case len(o.Truth) != 1:
		return cli.Usagef("--anonymity needs the original records: give the table that was randomized with --truth FILE (once)")
	case len(o.Columns) > 0:
		return cli.Usagef("--anonymity is about whole records of all %d bits: drop --columns", L)
	case bo.MaxBits < 1 || bo.MaxBits > bitflip.MaxExactBits:
		return cli.Usagef("--anonymity-max-bits must be in [1, %d], got %d", bitflip.MaxExactBits, bo.MaxBits)
	case f.Changed("anonymity-samples") && bo.Samples < 1:
		return cli.Usagef("--anonymity-samples must be at least 1, got %d", bo.Samples)
	}
	mc := f.Changed("anonymity-samples")
	if !mc && L > bo.MaxBits {
		return fmt.Errorf("A_p cannot be computed exactly for L = %d bits: the exact method needs about 22·2^L bytes (%s) and is limited to L ≤ %d (--anonymity-max-bits, at most %d); add --anonymity-samples N for a Monte Carlo estimate",
			L, bitflipBytes(22*math.Exp2(float64(L))), bo.MaxBits, bitflip.MaxExactBits)
	}
	words := rel.layout.Words()
	var rows []uint64
	word := make([]uint64, words)
	var encErr error
	err := rel.readTruth(o, o.Truth[0], func(values []int) {
		if encErr == nil {
			encErr = rel.layout.Encode(values, word)
			rows = append(rows, word...)
		}
	})
	if err == nil {
		err = encErr
	}
	if err != nil {
		return err
	}
	n := int64(len(rows) / words)
	out := bitflipAnonymityOut{Mechanism: "bitflip", Lie: rel.mech.LieProbability(), L: L, Records: n,
		EpsilonPerBit: rel.mech.EpsilonBit(), EpsilonPerRecord: rel.mech.EpsilonRecord(), EpsilonEncoded: rel.epsEnc}
	a := &out.Anonymity
	a.ExactMaxBits = bo.MaxBits
	if mc {
		s, err := rel.mech.AnonymityMonteCarlo(o.Seed.Rand(o.cmd), rows, bo.Samples)
		if err != nil {
			return err
		}
		a.Method, a.Samples = "monte-carlo", s.Samples
		a.MinRatio, a.MeanRatio, a.MeanStdErr = &s.Min, &s.Mean, &s.StdErr
		a.Record = rel.describeRecord(rows[s.MinRecord*words : (s.MinRecord+1)*words])
		a.Report = rel.describeReport(s.MinReport)
	} else {
		res, err := rel.mech.Anonymity(rows) // L ≤ 24: one word per record
		if err != nil {
			return fmt.Errorf("--anonymity: %w", err)
		}
		a.Method, a.Ap = "exact", &res.Ap
		a.Record = rel.describeRecord([]uint64{res.Record})
		a.Report = rel.describeReport([]uint64{res.Report})
	}
	return o.writeLocalReport(bitflipAnonymityReport(rel, out))
}

// bitflipAnonymityReport is the one-row table of --anonymity.
func bitflipAnonymityReport(rel *bitflipRelease, out bitflipAnonymityOut) *localReport {
	a := out.Anonymity
	rep := &localReport{summary: func() any { return out }, meta: table.Meta{}}
	rep.meta.SetInt(release.KeyBits, int64(out.L))
	rep.columns = []localColumn{{name: "method"}, {name: "records", float: true}, {name: "L", float: true}}
	row := []any{a.Method, float64(out.Records), float64(out.L)}
	if a.Method == "exact" {
		rep.columns = append(rep.columns, localColumn{name: "a_p", float: true})
		row = append(row, *a.Ap)
	} else {
		rep.columns = append(rep.columns, localColumn{name: "samples", float: true}, localColumn{name: "min_ratio", float: true},
			localColumn{name: "mean_ratio", float: true}, localColumn{name: "mean_ratio_stderr", float: true})
		row = append(row, float64(a.Samples), *a.MinRatio, *a.MeanRatio, *a.MeanStdErr)
	}
	rep.columns = append(rep.columns, localColumn{name: "epsilon_per_record", float: true}, localColumn{name: "epsilon_encoded", float: true},
		localColumn{name: "record"}, localColumn{name: "report"})
	row = append(row, out.EpsilonPerRecord, out.EpsilonEncoded, a.Record, a.Report)
	rep.rows = slices.Values([][]any{row})
	return rep
}

// describeRecord names a valid record's values: "sex=Male income=<=50K".
func (rel *bitflipRelease) describeRecord(row []uint64) string {
	parts := make([]string, 0, rel.layout.NumGroups())
	for j := range rel.layout.NumGroups() {
		g, off := rel.layout.Group(j), rel.layout.Offset(j)
		lab := "?"
		if g.Kind == bitflip.Binary {
			lab = g.Labels[0]
			if bitflip.Bit(row, off) {
				lab = g.Labels[1]
			}
		} else {
			for x := range g.Labels {
				if bitflip.Bit(row, off+x) {
					lab = g.Labels[x]
					break
				}
			}
		}
		parts = append(parts, g.Name+"="+lab)
	}
	return strings.Join(parts, " ")
}

// describeReport names the values a report claims, which need not form a
// valid record: a binary column's bit names one of its two categories, a
// one-hot column may have any set of bits set, e.g.
// "sex=Male income=<=50K occupation={Sales,?}".
func (rel *bitflipRelease) describeReport(row []uint64) string {
	parts := make([]string, 0, rel.layout.NumGroups())
	for j := range rel.layout.NumGroups() {
		g, off := rel.layout.Group(j), rel.layout.Offset(j)
		if g.Kind == bitflip.Binary {
			lab := g.Labels[0]
			if bitflip.Bit(row, off) {
				lab = g.Labels[1]
			}
			parts = append(parts, g.Name+"="+lab)
			continue
		}
		var set []string
		for x, lab := range g.Labels {
			if bitflip.Bit(row, off+x) {
				set = append(set, lab)
			}
		}
		parts = append(parts, g.Name+"={"+strings.Join(set, ",")+"}")
	}
	return strings.Join(parts, " ")
}

// bitflipBytes formats a byte count for messages.
func bitflipBytes(b float64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB", "EB"}
	i := 0
	for b >= 1000 && i < len(units)-1 {
		b /= 1000
		i++
	}
	return fmt.Sprintf("%.3g %s", b, units[i])
}
