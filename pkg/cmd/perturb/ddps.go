package perturb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/ddps"
	"github.com/pramkit/pramkit/pkg/mechanism"
	"github.com/pramkit/pramkit/pkg/pipeline"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/table"
)

// ddpsOptions are the flags of --mechanism ddps (with the shared
// --codebook and --epsilon).
type ddpsOptions struct {
	Column         string    // --column
	PiS            float64   // --pi-s: π_s
	PiBottom       []float64 // --pi-bot: π_⊥0..π_⊥V
	NonParticipant string    // --non-participant: the category reported as ⊥0
}

// NoneToken is how a release writes the output ⊥0 (the report names no
// value: "not participating"). It must not be a category of the column.
const NoneToken = "(none)"

const (
	ddpsHelp = `

ddps is Distributed Differential Privacy by Sampling (Joy §6.3), a local
mechanism for one categorical --column with V categories (its --codebook).
Each data owner sends two reports over the outputs ⊥0 (no value, written
"` + NoneToken + `") and ⊥1..⊥V (the categories):
  round one:  P[⊥o] = π_⊥o + π_s·[o = 0]   (ignores the owner's value)
  round two:  P[⊥o] = π_⊥o + π_s·[o = v]   (v = the owner's value)
with π_s = --pi-s S and the noise masses π_⊥0..π_⊥V = --pi-bot P0,...,PV
(default: (1 − π_s)/(V + 1) each); π_s and the π_⊥ must sum to 1. With
--epsilon E instead of --pi-s, π_s = x/(V + 1 + x), x = e^E − 1, the π_s
for which the default masses give ε = E. The output holds the two reports
of every row, as columns COLUMN.round1 and COLUMN.round2 with the category
labels; nothing else of the input is released. Rows whose value is the
--non-participant category (e.g. ? for "no occupation") are the paper's
"No" population: they report ⊥0 in round two as well, and their category is
not one of the V outputs. The metadata records π_s, π_⊥ (one number when
all V + 1 masses are equal), the codebook (its categories but the
--non-participant one are the values ⊥1..⊥V) and
  ε = max over true values v of ln((π_⊥v + π_s)/π_⊥v)   (Eq. 42–45):
only round two depends on the owner's value, and it moves mass π_s onto it.
The two rounds are drawn independently. Memory does not grow with the rows
beyond the shuffle's 16 MiB (see above).`

	ddpsExample = `

  # every owner's occupation, π_s = 0.1 and uniform noise masses
  $ perturb --mechanism ddps --column occupation --pi-s 0.1 \
      --codebook codebook.json adult.csv -o occupation.ddps.csv
  $ estimate occupation.ddps.csv --truth adult.csv

  # owners without an occupation (?) do not participate; π_s for ε = 1
  $ perturb --mechanism ddps --column occupation --epsilon 1 --non-participant '?' \
      --codebook codebook.json adult.csv -o occupation.ddps.parquet`
)

// ddpsStep is ddps's line of perturb's mechanisms.
var ddpsStep = step{release.MechanismDDPS, addDDPSFlags, runDDPS, ddpsHelp, ddpsExample}

// ddpsOpts are the run's ddpsOptions.
func (o *Options) ddpsOpts() *ddpsOptions {
	return mechanism.OptionsOf[ddpsOptions](&o.mech, release.MechanismDDPS)
}

func addDDPSFlags(cmd *cobra.Command, opts *Options) {
	o := opts.ddpsOpts()
	f := cmd.Flags()
	f.StringVar(&o.Column, "column", "", "ddps: the `COLUMN` whose value each row reports")
	f.Float64Var(&o.PiS, "pi-s", 0, "ddps: sampling mass `S`, 0 < S < 1, moved onto ⊥0 in round one and onto the true value in round two")
	f.Float64SliceVar(&o.PiBottom, "pi-bot", nil, "ddps: noise masses `P0,...,PV` of ⊥0 and of the V categories in codebook order (default: uniform)")
	f.StringVar(&o.NonParticipant, "non-participant", "", "ddps: rows with this `VALUE` of the column do not participate (they report ⊥0 in both rounds)")
}

func runDDPS(o *Options) error {
	su, err := o.ddpsSetup()
	if err != nil {
		return err
	}
	if su.col.K() > table.ManyLabels {
		// The codebook (~27 MB live at 1M values: its labels, index and
		// JSON) takes the room of the shuffle's rows: with 16 MiB of them
		// the live heap passed 64 MiB, was given 1.5 times its size, and
		// perturb ddps of 1M values peaked at 112–116 MB of RSS. The
		// budget changes when rows spill, never the law of the order
		// (package shuffle).
		cli.LowerMemoryBudget(cli.CodebookBudget)
		o.Order.Budget = manyLabelsShuffleBudget
	}
	col, plan, mech, meta := su.col, su.plan, su.mech, su.meta
	// The reports' dictionary shares the codebook's labels (12 MB less at
	// 1M values than one of its own); made first, so that what reads the
	// labels below (the coder, the encoder) reads that one copy.
	labels, err := col.DictionaryWith(NoneToken)
	if err != nil {
		return err
	}
	in, err := o.openOne("ddps", []string{col.Name()})
	if err != nil {
		return err
	}
	defer in.Close()
	idx, err := columnIndex(in, col.Name())
	if err != nil {
		return err
	}
	if l := col.ReadLabels(); l != nil {
		// Coded as a CSV input is parsed (see runBitflip).
		table.CodeCSVColumns(in, map[string]*table.Labels{col.Name(): l})
	}
	enc, err := col.Encoder(codebook.Policy{})
	if err != nil {
		return err
	}

	o.markInsecureSeed(meta, in)
	// The reports are codes over plan's labels (table.Labels): the shuffle
	// carries a varint a cell and the writer no string a row.
	schema := arrow.NewSchema([]arrow.Field{table.DictField(col.Name() + ".round1"), table.DictField(col.Name() + ".round2")}, nil)
	o.Order.Record(meta)
	w, err := o.Streams.Create(o.Output, schema, meta, in.Format(), append([]string{o.Codebook}, o.Inputs...), release.CodebookItem(su.sel))
	if err != nil {
		return err
	}
	defer w.Abort()
	r := o.Seed.Rand(o.cmd)
	if w, err = o.Order.Writer(w, schema, r); err != nil {
		return err
	}
	defer w.Abort()
	if err := ddpsRows(o, in, idx, enc, plan, mech, labels, schema, w, r); err != nil {
		return err
	}
	return w.Commit()
}

// manyLabelsShuffleBudget is the shuffle's budget of a ddps run over more
// than table.ManyLabels values, as anonymize's two-pass runs use
// (anonymize's shuffleBudget).
const manyLabelsShuffleBudget = 4 << 20

// ddpsRun is what ddpsSetup builds.
type ddpsRun struct {
	col  *codebook.Column
	plan ddpsPlan
	mech *ddps.Mechanism
	meta table.Meta
	// sel is the codebook of col (col is its column): the writer makes
	// the release's codebook item from it when it writes the metadata
	// (release.CodebookItem), not held while the reports stream.
	sel *codebook.Codebook
}

// ddpsSetup checks ddps's flags and builds the plan, the mechanism and the
// release's metadata (but for the insecure-seed marks, which depend on the
// input); pramkit-beam reaches it through DDPSRelease.
func (o *Options) ddpsSetup() (*ddpsRun, error) {
	d := o.ddpsOpts()
	f := o.cmd.Flags()
	piGiven, epsGiven := f.Changed("pi-s"), f.Changed("epsilon")
	switch {
	case d.Column == "":
		return nil, cli.Usagef("ddps needs --column COLUMN: the column whose value each row reports")
	case o.Codebook == "":
		return nil, cli.Usagef("ddps needs --codebook FILE: the categories of --column %s are the outputs ⊥1..⊥V", d.Column)
	case piGiven == epsGiven:
		return nil, cli.Usagef("give the privacy level of ddps: either --pi-s S or --epsilon E")
	case piGiven && !cli.OpenUnit.Contains(d.PiS):
		return nil, cli.CheckProbability("pi-s", d.PiS, cli.OpenUnit)
	case epsGiven && !cli.Positive.Contains(o.Epsilon):
		return nil, cli.CheckEpsilon("epsilon", o.Epsilon)
	case epsGiven && f.Changed("pi-bot"):
		return nil, cli.Usagef("--epsilon chooses π_s for the default uniform --pi-bot; with your own --pi-bot give --pi-s")
	}
	cb, err := codebook.Load(o.Codebook)
	if err != nil {
		return nil, err
	}
	sel, err := cb.Select([]string{d.Column})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Codebook, err)
	}
	col := &sel.Columns[0]
	plan, err := o.ddpsPlan(col)
	if err != nil {
		return nil, err
	}
	mech, err := ddps.New(plan.opts)
	if err != nil {
		return nil, err
	}
	// The items estimate decodes with release.DDPS (the values are the
	// codebook's categories but the non-participant one).
	md := release.DDPS{Column: col.Name(), NoneToken: NoneToken, NonParticipant: d.NonParticipant,
		PiS: mech.PiS(), Epsilon: mech.Epsilon()}
	if each, ok := mech.UniformMass(); ok {
		md.PiBottomEach = each // not V + 1 copies of it (8 MB at 1M values)
	} else {
		md.PiBottom = mech.PiBottom()
	}
	meta := table.Meta{release.KeyStage: release.StagePerturb}
	if err := md.Encode(meta); err != nil {
		return nil, err
	}
	return &ddpsRun{col, plan, mech, meta, sel}, nil
}

// ddpsPlan is what runDDPS decided from the codebook and the flags. It
// numbers the outputs from the column's compact labels, with no list of
// them: at 1M values a list of the labels and a table of the values took
// 25 MB for the whole run (issue 11).
type ddpsPlan struct {
	opts ddps.Options
	col  *codebook.Column
	np   int // col's index of the --non-participant category, −1 without one
}

// value returns codebook index x's true value: 0 for the non-participant
// category, else its output 1..V (the categories but that one, in order,
// as release.DDPS numbers them).
func (p *ddpsPlan) value(x int) int { return release.DDPSOutput(p.np, x) }

// label returns how output ⊥o is written: NoneToken, then the V
// categories.
func (p *ddpsPlan) label(o int) string {
	if o == 0 {
		return NoneToken
	}
	return p.col.Label(p.category(o))
}

// category returns the codebook index of output ⊥o, o ≥ 1: the inverse of
// value.
func (p *ddpsPlan) category(o int) int {
	if p.np < 0 || o-1 < p.np {
		return o - 1
	}
	return o
}

// code returns output ⊥o's code in the reports' dictionary
// (Column.DictionaryWith(NoneToken)): the codebook's K labels, then
// NoneToken. The non-participant category, when there is one, is an
// entry no report uses.
func (p *ddpsPlan) code(o int) uint32 {
	if o == 0 {
		return uint32(p.col.K())
	}
	return uint32(p.category(o))
}

// values lists the V categories, for a message.
func (p *ddpsPlan) values() string {
	labels := make([]string, p.opts.Values)
	for o := range labels {
		labels[o] = p.label(o + 1)
	}
	return strings.Join(labels, ", ")
}

// ddpsPlan numbers the column's categories as outputs and checks the
// masses, naming the flags in its errors.
func (o *Options) ddpsPlan(col *codebook.Column) (ddpsPlan, error) {
	d := o.ddpsOpts()
	p := ddpsPlan{col: col, np: -1}
	if _, ok := col.LabelIndex(NoneToken); ok {
		return p, fmt.Errorf("column %s has a category %q, the token of the output ⊥0 (no value) in a ddps release; rename the category in the codebook", col.Name(), NoneToken)
	}
	if d.NonParticipant != "" {
		x, ok := col.LabelIndex(d.NonParticipant)
		if !ok {
			return p, cli.Usagef("--non-participant %q is not a category of %s (categories: %s)", d.NonParticipant, col.Name(), strings.Join(col.Labels(), ", "))
		}
		p.np = x
	}
	np := p.np
	V := col.K()
	if np >= 0 {
		V--
	}
	if V < 1 {
		return p, cli.Usagef("column %s has no category besides the --non-participant one: nothing to report", col.Name())
	}
	p.opts = ddps.Options{Values: V, PiS: d.PiS, NonParticipants: np >= 0}
	if o.cmd.Flags().Changed("epsilon") {
		// ε = ln(1 + π_s/π_⊥) with π_⊥ = (1 − π_s)/(V + 1), solved for π_s.
		x := math.Expm1(o.Epsilon)
		p.opts.PiS = x / (float64(V+1) + x)
		if !(p.opts.PiS < 1) {
			return p, cli.Usagef("--epsilon %v is too large: it would need π_s = 1, which reveals every value", o.Epsilon)
		}
	}
	if pb := d.PiBottom; pb != nil {
		if len(pb) != V+1 {
			return p, cli.Usagef("--pi-bot needs V + 1 = %d masses, for %s then %s's categories in codebook order (%s), got %d", V+1, NoneToken, col.Name(), p.values(), len(pb))
		}
		total := p.opts.PiS
		for i, x := range pb {
			if !(x >= 0) || math.IsInf(x, 0) {
				return p, cli.Usagef("--pi-bot mass %d (output %s) must be a finite number ≥ 0, got %v", i+1, p.label(i), x)
			}
			total += x
		}
		if math.Abs(total-1) > 1e-9 {
			return p, cli.Usagef("--pi-s and the --pi-bot masses are the probabilities of one report and must sum to 1, got %.10g", total)
		}
		start := 1
		if p.opts.NonParticipants {
			start = 0
		}
		for i := start; i <= V; i++ {
			if pb[i] == 0 {
				return p, cli.Usagef("--pi-bot mass %d (output %s) is 0: a report of %s would then reveal the value (ε = ∞); give every value a positive mass", i+1, p.label(i), p.label(i))
			}
		}
		p.opts.PiBottom = pb
	}
	return p, nil
}

// ddpsRows draws and writes the two reports of every row, in parallel
// chunks (runLocal): row i's reports come from its own stream of the run's
// row-keyed generator, drawn from r. Memory: the chunks in flight, whatever
// the row count (plus the shuffle's bounded buffer behind w).
func ddpsRows(o *Options, in table.Reader, idx int, enc *codebook.Encoder, plan ddpsPlan, mech *ddps.Mechanism, labels *table.Labels, schema *arrow.Schema, w table.Writer, r *rand.Rand) error {
	keyed := rng.DrawKeyed(r)
	tag := rng.Tag("DDPS")
	// A worker's state: the coder keeps a batch's dictionary mapped.
	type state struct {
		coder *table.Coder
		codes []uint32
		st    rng.Stream
		r     *rand.Rand
	}
	states := sync.Pool{New: func() any {
		s := &state{coder: table.NewCoder(func(label string) (uint32, error) {
			x, err := enc.Index(label)
			return uint32(x), err
		})}
		s.r = rand.New(&s.st)
		return s
	}}
	work := func(c *pipeline.LocalChunk) error {
		s := states.Get().(*state)
		defer states.Put(s)
		n := int(c.Rec.NumRows())
		s.codes = slices.Grow(s.codes[:0], n)[:n]
		if i, err := s.coder.Codes(s.codes, c.Rec.Column(idx), 0); i >= 0 {
			return &table.DataError{File: in.Name(), Row: c.First + int64(i), Column: enc.Column().Name(), Err: err}
		}
		// Fresh slices: the batch shares them until it is written.
		round1, round2 := make([]uint32, n), make([]uint32, n)
		row0 := uint64(c.First - 1)
		for i, x := range s.codes {
			keyed.Reset(&s.st, tag, row0+uint64(i))
			one, two, err := mech.Report(s.r, plan.value(int(x)))
			if err != nil {
				return err
			}
			round1[i], round2[i] = plan.code(one), plan.code(two)
		}
		c.Out = table.CodesBatch(schema, [][]uint32{round1, round2}, []*table.Labels{labels, labels}, n)
		return nil
	}
	return pipeline.RunLocal(in, w, pipeline.LocalOptions{ChunkRows: table.DefaultBatchSize / 4, BatchRows: table.DefaultBatchSize, Meter: o.Streams.Progress("perturb: rows"), Task: "randomize"}, work)
}
