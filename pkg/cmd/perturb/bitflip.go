package perturb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/spf13/cobra"

	"github.com/pramkit/pramkit/pkg/bitflip"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/mechanism"
	"github.com/pramkit/pramkit/pkg/pipeline"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/table"
)

// bitflipOptions are the flags of --mechanism bitflip (with the shared
// --columns, --codebook and --epsilon).
type bitflipOptions struct {
	Lie float64 // --lie: the lie probability q
}

const (
	bitflipHelp = `

bitflip is K-randomization (Zhilyaev–Zeber), a local mechanism: each data
owner randomizes their own row before anyone else sees it. The --columns
become a vector of L bits: a column whose codebook has exactly 2 categories,
or that holds 0/1 and is not in the codebook, is one bit (1 = its second
category); any other column is one-hot encoded, one bit per category of its
--codebook. Every bit then flips independently with the lie probability
  q = --lie Q,  0 < q < 1/2,
or, with --epsilon E instead, q = 1/(1 + e^(E/L)) so that ε per record = E.
The output holds only the randomized bits, as int32 0/1 columns named
"column=category" (the bit of a binary column names its category 1), in
the order of --columns; the other columns of the input are not released.
0/1 integers rather than booleans because every CSV reader and every
Parquet consumer reads them alike, and their column mean is the frequency.
The metadata records q, L, the layout of the bits (to regroup them) and:
  ε per bit     ln((1 − q)/q)
  ε per record  L·ln((1 − q)/q)   any two vectors of L bits
  ε encoded     D·ln((1 − q)/q)   tighter, between valid rows: they differ in
                                  at most D = 2 bits per one-hot column and
                                  1 per binary column
Memory does not grow with the rows beyond the shuffle's 16 MiB (see above),
nor with L past a few MB: a Parquet output's row group of 65,536 rows holds
its cells as bits, and past 2 MiB of them writes them a block of rows at a
time to a temporary file (in TMPDIR; 8 KiB a bit, 32 MB at L = 4,000). Peak
RSS stays under 100 MB for CSV and Arrow (measured to L = 4,000) and for
Parquet to L = 1,000 at 1M rows (94 MB) and L = 4,000 at 200k (96 MB); a
Parquet footer holds ~300 bytes per bit and row group until the file is
closed (L = 4,000 at 1M rows: 114 MB).`

	bitflipExample = `

  # each data owner's sex and income bits flip with probability 0.2
  $ perturb --mechanism bitflip --lie 0.2 --columns sex,income \
      --codebook codebook.json adult.csv -o adult.bitflip.csv
  $ estimate adult.bitflip.csv --truth adult.csv

  # one-hot occupation (15 bits), q chosen for ε = 4 per record
  $ perturb --mechanism bitflip --epsilon 4 --columns occupation \
      --codebook codebook.json adult.csv -o occupation.bitflip.parquet`
)

// lieRange is the valid --lie: q = 0 releases the bits unchanged and
// q ≥ 1/2 makes the reports carry no information (q = 1/2) or mostly
// invert it.
var lieRange = cli.Interval{Lo: 0, Hi: 0.5, LoOpen: true, HiOpen: true}

// bitflipStep is bitflip's line of perturb's mechanisms.
var bitflipStep = step{release.MechanismBitflip, addBitflipFlags, runBitflip, bitflipHelp, bitflipExample}

// bitflipOpts are the run's bitflipOptions.
func (o *Options) bitflipOpts() *bitflipOptions {
	return mechanism.OptionsOf[bitflipOptions](&o.mech, release.MechanismBitflip)
}

func addBitflipFlags(cmd *cobra.Command, opts *Options) {
	o := opts.bitflipOpts()
	cmd.Flags().Float64Var(&o.Lie, "lie", 0, "bitflip: lie probability `Q`, 0 < Q < 1/2, with which every bit flips (instead of --epsilon)")
}

// bitflipColumn is how one input column becomes bits.
type bitflipColumn struct {
	name  string
	index int               // in the input schema
	enc   *codebook.Encoder // nil: a 0/1 column without a codebook
}

func runBitflip(o *Options) error {
	if err := o.checkBitflipFlags(); err != nil {
		return err
	}
	in, err := o.openOne("bitflip", o.Columns)
	if err != nil {
		return err
	}
	defer in.Close()
	su, err := o.bitflipSetup(in)
	if err != nil {
		return err
	}
	cb, cols, layout, mech, meta, names := su.cb, su.cols, su.layout, su.mech, su.meta, su.names
	if cb != nil {
		// A CSV input's codebook columns come coded from the parsing
		// goroutines; the Coders map each batch's dictionary through the
		// codebook, so cells code as before.
		table.CodeCSVColumns(in, cb.ReadLabels(o.Columns))
	}
	o.markInsecureSeed(meta, in)
	schema := table.Int32Schema(names)
	o.Order.Record(meta)
	w, err := o.Streams.Create(o.Output, schema, meta, in.Format(), append([]string{o.Codebook}, o.Inputs...))
	if err != nil {
		return err
	}
	defer w.Abort()
	r := o.Seed.Rand(o.cmd)
	if w, err = o.Order.BitsWriter(w, schema, r); err != nil {
		return err
	}
	defer w.Abort()
	if err := bitflipRows(o, in, cols, cb != nil, o.Codebook, layout, mech, schema, w, r); err != nil {
		return err
	}
	return w.Commit()
}

// checkBitflipFlags refuses bitflip flags out of range.
func (o *Options) checkBitflipFlags() error {
	f := o.cmd.Flags()
	lieGiven, epsGiven := f.Changed("lie"), f.Changed("epsilon")
	switch {
	case lieGiven == epsGiven:
		return cli.Usagef("give the privacy level of bitflip: either --lie Q or --epsilon E")
	case lieGiven && !lieRange.Contains(o.bitflipOpts().Lie):
		why := "q = 0 would release the bits unchanged"
		if o.bitflipOpts().Lie >= 0.5 {
			why = "at q = 1/2 the reports are independent of the data, and above it they mostly invert it"
		}
		return cli.Usagef("%v: %s", cli.CheckProbability("lie", o.bitflipOpts().Lie, lieRange), why)
	case epsGiven && !cli.Positive.Contains(o.Epsilon):
		return cli.CheckEpsilon("epsilon", o.Epsilon)
	case len(o.Columns) == 0:
		return cli.Usagef("bitflip needs --columns a,b: the columns that become bits")
	}
	return nil
}

// bitflipRun is what bitflipSetup builds.
type bitflipRun struct {
	cb     *codebook.Codebook
	cols   []bitflipColumn
	layout *bitflip.Layout
	mech   *bitflip.Mechanism
	meta   table.Meta
	names  []string
}

// bitflipSetup loads the codebook and builds the layout, the mechanism
// and the release's metadata and bit column names for the input in (the
// flags already checked); pramkit-beam reaches it through BitflipRelease.
func (o *Options) bitflipSetup(in table.Reader) (*bitflipRun, error) {
	epsGiven := o.cmd.Flags().Changed("epsilon")
	var err error
	var cb *codebook.Codebook
	if o.Codebook != "" {
		if cb, err = codebook.Load(o.Codebook); err != nil {
			return nil, err
		}
	}
	groups, cols, used, err := o.bitflipLayout(in, cb)
	if err != nil {
		return nil, err
	}
	layout, err := bitflip.NewLayout(groups)
	if err != nil {
		return nil, err
	}
	L := layout.Width()
	q := o.bitflipOpts().Lie
	if epsGiven {
		// ε_record = L·ln((1 − q)/q) solved for q.
		q = 1 / (1 + math.Exp(o.Epsilon/float64(L)))
		if q < 0x1p-64 {
			return nil, cli.Usagef("--epsilon %v over L = %d bits needs a lie probability q = %.3g below 2^-64, which cannot be drawn; give a smaller --epsilon", o.Epsilon, L, q)
		}
	}
	mech, err := bitflip.New(bitflip.Options{LieProbability: q, Bits: L})
	if err != nil {
		return nil, cli.Usagef("--lie %v: %v", q, err)
	}
	meta, names, err := bitflipMeta(layout, mech, cb, used)
	if err != nil {
		return nil, err
	}
	return &bitflipRun{cb, cols, layout, mech, meta, names}, nil
}

// bitflipLayout decides how each --columns column becomes bits. It returns
// the layout's groups, the input columns and the codebook columns used.
func (o *Options) bitflipLayout(in table.Reader, cb *codebook.Codebook) ([]bitflip.Group, []bitflipColumn, []string, error) {
	var (
		groups = make([]bitflip.Group, len(o.Columns))
		cols   = make([]bitflipColumn, len(o.Columns))
		used   []string
		seen   = map[string]bool{}
	)
	for j, name := range o.Columns {
		if seen[name] {
			return nil, nil, nil, cli.Usagef("--columns lists %q twice", name)
		}
		seen[name] = true
		idx, err := columnIndex(in, name)
		if err != nil {
			return nil, nil, nil, err
		}
		cols[j] = bitflipColumn{name: name, index: idx}
		var c *codebook.Column
		if cb != nil {
			c, _ = cb.Column(name)
		}
		if c == nil {
			// Without a codebook a column can only be a bit as it is: 0/1.
			groups[j] = bitflip.Group{Name: name, Kind: bitflip.Binary, Labels: []string{"0", "1"}}
			continue
		}
		used = append(used, name)
		if cols[j].enc, err = c.Encoder(codebook.Policy{}); err != nil {
			return nil, nil, nil, err
		}
		kind := bitflip.OneHot
		if c.K() == 2 {
			kind = bitflip.Binary
		}
		groups[j] = bitflip.Group{Name: name, Kind: kind, Labels: c.Labels()}
	}
	return groups, cols, used, nil
}

// bitflipMeta builds the release's metadata and output column names.
func bitflipMeta(layout *bitflip.Layout, mech *bitflip.Mechanism, cb *codebook.Codebook, used []string) (table.Meta, []string, error) {
	// The items estimate decodes with release.Bitflip.
	md, err := release.NewBitflip(mech, layout)
	if err != nil {
		return nil, nil, err
	}
	meta := table.Meta{release.KeyStage: release.StagePerturb}
	if err := md.Encode(meta); err != nil {
		return nil, nil, err
	}
	names := make([]string, layout.Width())
	seen := make(map[string]int, len(names)) // bit name → group
	for j := range layout.NumGroups() {
		for b := range layout.Group(j).Width() {
			i := layout.Offset(j) + b
			names[i] = layout.BitName(i)
			if other, ok := seen[names[i]]; ok {
				return nil, nil, fmt.Errorf("columns %q and %q would both give a bit column named %q; rename one of them", layout.Group(other).Name, layout.Group(j).Name, names[i])
			}
			seen[names[i]] = j
		}
	}
	if len(used) > 0 {
		sel, err := cb.Select(used)
		if err != nil {
			return nil, nil, err
		}
		if err := meta.SetJSON(release.KeyCodebook, sel); err != nil {
			return nil, nil, err
		}
	}
	return meta, names, nil
}

// bitflipRows encodes, randomizes and writes every row, in parallel chunks
// (runLocal): row i's flips come from its own stream of the run's
// row-keyed generator, drawn from r. Memory: the chunks in flight, each at
// most about 1 MiB of output bits, and one output batch of at most 4 MiB,
// whatever the row count (plus the shuffle's bounded buffer behind w).
func bitflipRows(o *Options, in table.Reader, cols []bitflipColumn, haveCodebook bool, cbPath string,
	layout *bitflip.Layout, mech *bitflip.Mechanism, schema *arrow.Schema, w table.Writer, r *rand.Rand) error {
	L := layout.Width()
	keyed := rng.DrawKeyed(r)
	tag := rng.Tag("BFLP")
	// A worker's state: coders keep a batch's dictionary mapped.
	type state struct {
		coders []*table.Coder
		codes  [][]uint32
		word   []uint64
		values []int
		st     rng.Stream
		z      *bitflip.Randomizer
		blocks []byte // scratch of RandomizeKeyed
	}
	states := sync.Pool{New: func() any {
		s := &state{coders: make([]*table.Coder, len(cols)), codes: make([][]uint32, len(cols)),
			word: make([]uint64, layout.Words()), values: make([]int, len(cols))}
		for j, c := range cols {
			if c.enc != nil {
				enc := c.enc
				s.coders[j] = table.NewCoder(func(label string) (uint32, error) {
					x, err := enc.Index(label)
					return uint32(x), err
				})
			}
		}
		s.z = mech.NewRandomizer(rand.New(&s.st))
		return s
	}}
	words := sync.Pool{New: func() any { return new([]uint64) }}
	// To a shuffle the rows go packed (shuffle.Writer.WritePacked), as it
	// holds them: no L columns cut here to be packed again there.
	packed := pipeline.PackedShuffle(w)
	W := layout.Words()
	work := func(c *pipeline.LocalChunk) error {
		s := states.Get().(*state)
		defer states.Put(s)
		n := int(c.Rec.NumRows())
		var bad firstBad
		for j, col := range cols {
			s.codes[j] = slices.Grow(s.codes[j][:0], n)[:n]
			a := c.Rec.Column(col.index)
			if s.coders[j] != nil {
				if i, err := s.coders[j].Codes(s.codes[j], a, 0); i >= 0 {
					bad.add(i, j, err)
				}
				continue
			}
			v := table.ValuesOf(a)
			for i := range n {
				x, err := bitValue(col, v, i, haveCodebook, cbPath)
				if err != nil {
					bad.add(i, j, err)
					break
				}
				s.codes[j][i] = uint32(x)
			}
		}
		if bad.err != nil {
			return &table.DataError{File: in.Name(), Row: c.First + int64(bad.row), Column: cols[bad.col].name, Err: bad.err}
		}
		row0 := uint64(c.First - 1)
		// The chunk's rows, W words each, reused once written.
		wp := words.Get().(*[]uint64)
		ws := slices.Grow((*wp)[:0], n*W)[:n*W]
		*wp = ws
		c.Free = func() { words.Put(wp) }
		if L <= 64 {
			if err := bitflipWords(ws, s.codes, s.values, s.word, &s.blocks, layout, mech, keyed, tag, row0); err != nil {
				return err
			}
		} else {
			for i := range n {
				row := ws[i*W : (i+1)*W : (i+1)*W]
				for j := range cols {
					s.values[j] = int(s.codes[j][i])
				}
				if err := layout.Encode(s.values, row); err != nil {
					return err
				}
				keyed.Reset(&s.st, tag, row0+uint64(i))
				if err := s.z.RandomizeRow(row); err != nil {
					return err
				}
			}
		}
		if packed {
			c.Packed = ws
			return nil
		}
		// The output columns, cut from the words a column at a time.
		block := table.Block(L, n)
		for b, col := range block {
			w, sh := b>>6, uint(b&63)
			for i := range col {
				col[i] = uint32(ws[i*W+w] >> sh & 1)
			}
		}
		c.Out = table.Int32Batch(schema, block, n)
		return nil
	}
	// Chunks of at most 1 MiB of bits (a chunk in flight pins its input
	// batch too), written in batches of at most 4 MiB.
	return pipeline.RunLocal(in, w, pipeline.LocalOptions{ChunkRows: max(64, min(table.DefaultBatchSize, (1<<18)/L)),
		BatchRows: max(64, min(table.DefaultBatchSize, (1<<20)/L)), Meter: o.Streams.Progress("perturb: rows"), Task: "randomize"}, work)
}

// bitflipWords encodes a chunk's rows of L ≤ 64 bits into ws, a word
// each, a column at a time, and randomizes them together
// (bitflip.Mechanism.RandomizeKeyed: row i draws from its own stream
// (tag, row0 + i), as a row at a time would) — no per-row calls.
func bitflipWords(ws []uint64, codes [][]uint32, values []int, word []uint64, blocks *[]byte,
	layout *bitflip.Layout, mech *bitflip.Mechanism, keyed *rng.Keyed, tag uint32, row0 uint64) error {
	clear(ws)
	for j := range layout.NumGroups() {
		g := layout.Group(j)
		off, k := uint(layout.Offset(j)), uint32(len(g.Labels))
		oneHot := g.Kind == bitflip.OneHot
		for i, x := range codes[j][:len(ws)] {
			if x >= k {
				// Layout.Encode says what is wrong.
				for jj := range values {
					values[jj] = int(codes[jj][i])
				}
				return layout.Encode(values, word)
			}
			if oneHot {
				ws[i] |= 1 << (off + uint(x))
			} else {
				ws[i] |= uint64(x) << off
			}
		}
	}
	var err error
	*blocks, err = mech.RandomizeKeyed(ws, keyed, tag, row0, *blocks)
	return err
}

// bitValue is the value index of row i of column c: the codebook index, or
// the 0/1 of a column without a codebook.
func bitValue(c bitflipColumn, v table.Values, i int, haveCodebook bool, cbPath string) (int, error) {
	if c.enc != nil {
		x, err := c.enc.Index(v.String(i))
		return int(x), err
	}
	if x, ok := v.Int(i); ok && (x == 0 || x == 1) {
		return int(x), nil
	}
	why := "no --codebook was given"
	if haveCodebook {
		why = fmt.Sprintf("it is not in the codebook %s", cbPath)
	}
	return 0, fmt.Errorf("value %s is not 0 or 1, and %s: a bit column without a codebook must hold 0/1; list the column's categories in the --codebook to one-hot encode it", table.QuoteCell(v.String(i)), why)
}
