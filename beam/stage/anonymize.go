package stage

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/table"
)

// Mechanism A′ on Beam (pramkit-beam anonymize). The CLI streams A′ in two
// passes (package anonymize, "Streaming A′ in two passes"): it counts the
// sensitive values, computes the Schedule (the multiset of the decoy
// groups' value sets) from the counts, then deals every kept row of value
// v one of v's remaining slots uniformly without replacement, in input
// order, and publishes a uniform member of the slot's set. A PCollection
// has no row order and a runner retries bundles, so the pipeline cannot
// deal from one sequential stream. It deals in two levels instead:
//
//  1. Pass 1 (countSplitFn, one call per split: a file, or a Parquet row
//     group) counts each sensitive column's values in the split and keeps
//     the split's ℓ′ − 1 rows of smallest drop priority PRF_K("ADRP", row);
//     a global combine (mergePlanFn) gathers the splits' counts and the
//     ℓ′ − 1 smallest priorities overall.
//  2. The plan (planFn, on that singleton) drops the d = N mod ℓ′ kept rows
//     of smallest priority, computes each column's Schedule from the
//     remaining counts with the library's NewSchedule, and allots the slots
//     to the splits: with the library's Dealer, it deals c_{v,s} slots of
//     value v to split s, the splits in (file, row group) order — the CLI's
//     own dealing, run on the rows sorted by split, keeping only how many
//     slots of each set type each split gets. Every split receives its own
//     allotment (splitPlan) as an element, not the whole schedule.
//  3. Pass 2 (dealSplitFn, one call per split) reads the split in file
//     order and deals each kept row of value v one of the split's allotted
//     slots for v, uniformly without replacement, then publishes a uniform
//     member of the slot's set (p = q = 1/ℓ′).
//  4. Each published row gets the order key PRF_K("AORD", row), goes to the
//     output shard key mod S and is written in key order within its shard.
//
// Row identity is (file index in the sorted --input glob, row number in
// the file), row = file·2^40 + row number; K is the run's key (crypto/rand,
// or rng.SeededKey under --seed --insecure-seed). Every draw is a function
// of K, a tag and a row or split: the schedule's draws come from stream
// ("ASCH", column), the allotment's from ("AALT", column), split s's from
// ("ADEL", its first row). A retried bundle reads the same split in the
// same order and redraws exactly the same values; the plan sorts its
// inputs before dealing, so it does not depend on the order in which the
// runner combined the splits.
//
// Claim: the published table has the law of the CLI's (hence of SPEC §4's
// algorithm, by package anonymize's proof), AES-256 taken as a random
// function. Proof, with the steps of package anonymize's proof:
//
//   - The drop. The priorities of the N kept rows are independent and
//     uniform on 128 bits, so the d smallest are a uniformly random
//     d-subset (ties, of probability below N²/2^129, are broken by row).
//     The CLI's reservoir drops a uniformly random d-subset too.
//   - The sets. NewSchedule on the same counts, with an independent
//     uniform stream: the schedule has the CLI's law given the drop.
//   - The rows in the slots. In the CLI the rows of v go to v's slots by a
//     uniformly random bijection σ, independently across values and
//     columns. Order v's rows by split (then file order) and let σ be such
//     a bijection. The types of the slots σ gives split s's rows, for all s
//     at once, have the law of dealing v's slots without replacement to
//     the splits in turn — what the plan draws. Given those allotments, σ
//     restricted to split s is a uniform bijection between its rows and
//     its allotted slots, independently across splits (σ composed with any
//     permutation of the slots within each split's allotment is again
//     uniform). Pass 2 deals each split's rows without replacement,
//     uniformly among the remaining allotted slots: a uniform bijection,
//     whatever the order of the rows. So the type each row gets has the
//     CLI's joint law, independently across values and columns, given the
//     schedule — and the published value only reads the type.
//   - The published values: a uniform member of the type's set, drawn
//     independently per row and column, as in the CLI.
//   - The order. The order keys are independent and uniform, independent
//     of everything above, and the rows are written sorted by (key mod S,
//     key): any fixed total order of i.i.d. continuous keys is a uniformly
//     random permutation of the rows, as the CLI's shuffle gives, and
//     unrelated to the input order.
//
// The allotment costs the plan one urn draw per kept row and sensitive
// column whose value has slots in several set types (the Dealer draws
// nothing for a value of one type): O(N) work on one worker, a few ns a
// row, against the split reads in parallel. Its output is O(Σ_s distinct
// (value, type) pairs of s); a split receives only its own.
//
// Randomness differs from the CLI's (keyed streams, not one ChaCha8
// stream in row order), so a seeded run is not byte-identical to the
// CLI's; it has the same law, and is identical from one Beam run to the
// next with the same seed, input and split.

// Stream tags of the anonymize pipeline (rng.Keyed).
var (
	tagDrop     = rng.Tag("ADRP")
	tagSchedule = rng.Tag("ASCH")
	tagAllot    = rng.Tag("AALT")
	tagDeal     = rng.Tag("ADEL")
	tagOrder    = rng.Tag("AORD")
)

// rowBits is the bits of a row number in a row identity; the file index
// takes the others.
const rowBits = 40

func init() {
	for _, t := range []any{anonFile{}, anonSplit{}, splitCounts{}, dropCand{}, planAcc{}, allotEntry{}, splitPlan{}, pubRow{}, pubBatch{},
		countSplitFn{}, mergePlanFn{}, planFn{}, dealSplitFn{}, writeShardFn{}} {
		beam.RegisterType(reflect.TypeOf(t))
	}
	register.Function2x1(splitAnonFile)
	register.Emitter1[anonSplit]()
	register.DoFn3x1[context.Context, anonSplit, func(planAcc), error](&countSplitFn{})
	register.Emitter1[planAcc]()
	register.Combiner1[planAcc](&mergePlanFn{})
	register.DoFn4x1[context.Context, planAcc, func(splitPlan), func(string), error](&planFn{})
	register.Emitter1[splitPlan]()
	register.DoFn3x1[context.Context, splitPlan, func(int, pubBatch), error](&dealSplitFn{})
	register.Emitter2[int, pubBatch]()
	register.DoFn4x1[context.Context, int, func(*pubBatch) bool, string, error](&writeShardFn{})
	register.Iter1[pubBatch]()
}

// anonFile is an input file and its index in the sorted glob.
type anonFile struct {
	Index int
	Path  string
}

// anonSplit is a split of file File (its index).
type anonSplit struct {
	File  int
	Split fileSplit
}

// rowID is the identity of the file's row (0-based).
func rowID(file int, row int64) uint64 { return uint64(file)<<rowBits | uint64(row) }

// splitAnonFile emits the file's splits (row groups of a Parquet file, or
// the whole file).
func splitAnonFile(f anonFile, emit func(anonSplit)) error {
	return splitFile(f.Path, func(s fileSplit) { emit(anonSplit{File: f.Index, Split: s}) })
}

// anonSetup is what both passes need from the base metadata: the
// sensitive columns' codebooks and policy (as estimate will read them).
type anonSetup struct {
	sens    []string
	cols    []*codebook.Column
	encs    []*codebook.Encoder
	caches  []map[string]int64 // label → value index, or -1 for a dropped (missing) value
	columns []string
	idx     []int // per sensitive column, its index among columns
}

func newAnonSetup(meta map[string]string, columns []string) (*anonSetup, error) {
	m := table.Meta(meta)
	if m[release.KeyMechanism] == release.MechanismAnatomy {
		// The row table's N and groups are the plan's, not known yet; the
		// setup reads only the items every mechanism shares.
		m = m.Clone()
		m[release.KeyMechanism] = release.MechanismDiverted
	}
	var a release.Anonymized
	if err := a.Decode(m, "the release metadata"); err != nil {
		return nil, err
	}
	s := &anonSetup{sens: a.Sensitive, columns: columns}
	for _, name := range a.Sensitive {
		col, ok := a.Codebook.Column(name)
		if !ok {
			return nil, fmt.Errorf("the codebook has no column %q", name)
		}
		enc, err := col.Encoder(a.Policy)
		if err != nil {
			return nil, err
		}
		j := slices.Index(columns, name)
		if j < 0 {
			return nil, fmt.Errorf("no column %q", name)
		}
		s.cols, s.encs, s.idx = append(s.cols, col), append(s.encs, enc), append(s.idx, j)
		s.caches = append(s.caches, map[string]int64{})
	}
	return s, nil
}

// splitReader opens a split and checks that its columns are the table's.
func (s *anonSetup) open(sp anonSplit) (table.Reader, error) {
	r, err := sp.Split.open()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, f := range r.Schema().Fields() {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, s.columns) {
		r.Close()
		return nil, fmt.Errorf("%s has columns %s, the first file %s: every input must be a shard of one table", sp.Split, strings.Join(names, ","), strings.Join(s.columns, ","))
	}
	return r, nil
}

// scan calls row for every row of the split with the row's number in its
// file (0-based), its cells and its value indexes (kept false for a row
// the --missing drop policy removes).
func (s *anonSetup) scan(r table.Reader, sp anonSplit, row func(n int64, cells []table.Values, i int, vals []uint32, kept bool) error) error {
	vals := make([]uint32, len(s.sens))
	n := sp.Split.FirstRow
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		cells := make([]table.Values, rec.NumCols())
		for j := range cells {
			cells[j] = table.ValuesOf(rec.Column(j))
		}
		for i := range int(rec.NumRows()) {
			if n >= 1<<rowBits {
				return fmt.Errorf("%s has more than 2^%d rows: split it into several files", sp.Split.Path, rowBits)
			}
			kept := true
			for k, j := range s.idx {
				label := cells[j].String(i)
				x, ok := s.caches[k][label]
				if !ok {
					v, err := s.encs[k].Index(label)
					switch {
					case errors.Is(err, codebook.ErrDrop):
						x = -1
					case err != nil:
						return &table.DataError{File: sp.Split.Path, Row: n + 1, Column: s.sens[k], Err: err}
					default:
						x = int64(v)
					}
					s.caches[k][strings.Clone(label)] = x
				}
				if x < 0 {
					kept = false
					break
				}
				vals[k] = uint32(x)
			}
			if err := row(n, cells, i, vals, kept); err != nil {
				return err
			}
			n++
		}
	}
}

// splitCounts is pass 1's result for one split.
type splitCounts struct {
	File    int
	Split   fileSplit
	Read    int64     // rows read
	Kept    int64     // rows kept (not removed by --missing drop)
	Missing int64     // rows removed by --missing drop
	Counts  [][]int64 // per sensitive column, per value index
	Dropped []int64   // after the plan: rows of the split dropped (row numbers in the file)
}

// dropCand is a kept row that may be dropped: its priority, identity and
// sensitive values.
type dropCand struct {
	Hi, Lo uint64
	File   int
	Group  int
	Row    int64
	Vals   []uint32
}

func (c dropCand) cmp(d dropCand) int {
	return cmp.Or(cmp.Compare(c.Hi, d.Hi), cmp.Compare(c.Lo, d.Lo), cmp.Compare(c.File, d.File), cmp.Compare(c.Row, d.Row))
}

// planAcc gathers pass 1: every split's counts and the ℓ′ − 1 kept rows of
// smallest drop priority.
type planAcc struct {
	Splits []splitCounts
	Cands  []dropCand
}

// keepCands sorts cands and keeps the first k.
func keepCands(cands []dropCand, k int) []dropCand {
	slices.SortFunc(cands, dropCand.cmp)
	if len(cands) > k {
		cands = slices.Clone(cands[:k])
	}
	return cands
}

// countSplitFn is pass 1 on one split.
type countSplitFn struct {
	Key     []byte            `json:"key"`
	Meta    map[string]string `json:"meta"`
	Columns []string          `json:"columns"`
	L       int               `json:"l"`
}

func (f *countSplitFn) ProcessElement(ctx context.Context, sp anonSplit, emit func(planAcc)) error {
	s, err := newAnonSetup(f.Meta, f.Columns)
	if err != nil {
		return err
	}
	r, err := s.open(sp)
	if err != nil {
		return err
	}
	defer r.Close()
	keyed := rng.NewKeyed(rng.Key(f.Key))
	sc := splitCounts{File: sp.File, Split: sp.Split, Counts: make([][]int64, len(s.cols))}
	for k, c := range s.cols {
		sc.Counts[k] = make([]int64, c.K())
	}
	var cands []dropCand
	keys := newRowKeys(keyed)
	err = s.scan(r, sp, func(n int64, _ []table.Values, _ int, vals []uint32, kept bool) error {
		sc.Read++
		if !kept {
			sc.Missing++
			return nil
		}
		sc.Kept++
		for k, x := range vals {
			sc.Counts[k][x]++
		}
		c := dropCand{File: sp.File, Group: sp.Split.Group, Row: n}
		c.Hi, c.Lo = keys.block(tagDrop, rowID(sp.File, n))
		if len(cands) == f.L-1 && c.cmp(cands[len(cands)-1]) > 0 {
			return nil
		}
		c.Vals = slices.Clone(vals)
		cands = keepCands(append(cands, c), f.L-1)
		return nil
	})
	if err != nil {
		return err
	}
	emit(planAcc{Splits: []splitCounts{sc}, Cands: cands})
	return nil
}

// mergePlanFn merges pass 1's accumulators.
type mergePlanFn struct {
	L int `json:"l"`
}

func (f *mergePlanFn) MergeAccumulators(a, b planAcc) planAcc {
	return planAcc{Splits: append(slices.Clone(a.Splits), b.Splits...), Cands: keepCands(append(slices.Clone(a.Cands), b.Cands...), f.L-1)}
}

// allotEntry is a split's share of value Value's slots in one set type:
// N slots of the set Set.
type allotEntry struct {
	Value uint32
	Set   []uint32
	N     int64
	Type  int // the set's index in the schedule (Anatomy numbers its groups by type)
}

// splitPlan is pass 2's work on one split: its allotment per sensitive
// column, its dropped rows, and the output's shard count.
type splitPlan struct {
	Split   anonSplit
	Dropped []int64 // row numbers in the file, ascending
	Allot   [][]allotEntry
	Shards  int
}

// anonSummary is the plan's summary, for the driver's messages and the
// writers' metadata.
type anonSummary struct {
	Read, Rows, Dropped, Missing int64
	Shards                       int
	// Types is the schedule of the one sensitive column of an Anatomy
	// release (its groups and sensitive table); nil for A′.
	Types []anonymize.SetType `json:",omitempty"`
	// Counts are the published rows' value counts per sensitive column
	// (A′'s --report).
	Counts [][]int64 `json:",omitempty"`
}

// planFn computes the drop, the schedules and the allotments (step 2 of
// the design above).
type planFn struct {
	Key       []byte            `json:"key"`
	Meta      map[string]string `json:"meta"`
	Columns   []string          `json:"columns"`
	L         int               `json:"l"`
	Grouping  string            `json:"grouping"`
	ShardRows int64             `json:"shard_rows"`
	Input     string            `json:"input"`
	// Anatomy: the summary carries the schedule (anatomy.go); Report:
	// the published rows' counts.
	Anatomy bool `json:"anatomy"`
	Report  bool `json:"report"`
}

func (f *planFn) ProcessElement(ctx context.Context, acc planAcc, emit func(splitPlan), summary func(string)) error {
	s, err := newAnonSetup(f.Meta, f.Columns)
	if err != nil {
		return err
	}
	plans, sum, err := makePlan(acc, s, rng.NewKeyed(rng.Key(f.Key)), f.L, anonymize.Grouping(f.Grouping), f.ShardRows, f.Input)
	if err != nil {
		return err
	}
	if !f.Anatomy {
		sum.Types = nil
	}
	if !f.Report {
		sum.Counts = nil
	}
	for _, p := range plans {
		emit(p)
	}
	b, _ := json.Marshal(sum)
	summary(string(b))
	return nil
}

// makePlan is planFn without Beam (tests call it directly).
// The summary's Types is the first sensitive column's schedule.
func makePlan(acc planAcc, s *anonSetup, keyed *rng.Keyed, l int, g anonymize.Grouping, shardRows int64, input string) ([]splitPlan, anonSummary, error) {
	var sum anonSummary
	splits := slices.Clone(acc.Splits)
	slices.SortFunc(splits, func(a, b splitCounts) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Split.Group, b.Split.Group))
	})
	counts := make([][]int64, len(s.cols))
	for k, c := range s.cols {
		counts[k] = make([]int64, c.K())
	}
	for _, sp := range splits {
		sum.Read += sp.Read
		sum.Rows += sp.Kept
		sum.Missing += sp.Missing
		for k := range counts {
			for v, c := range sp.Counts[k] {
				counts[k][v] += c
			}
		}
	}
	switch {
	case sum.Read == 0:
		return nil, sum, fmt.Errorf("%s has no data rows: nothing to anonymize", input)
	case sum.Rows == 0:
		return nil, sum, fmt.Errorf("%s: every row has a missing sensitive value and --missing drop removed them all: nothing to anonymize", input)
	case sum.Rows > anonymize.MaxRows-1:
		return nil, sum, fmt.Errorf("%s has more than %d rows, the most anonymize handles; split the table", input, int64(anonymize.MaxRows-1))
	}
	for k, c := range counts {
		if err := anonymize.CheckEligible(c, l); err != nil {
			return nil, sum, ineligible(err, input, s.cols[k])
		}
	}
	// The drop: the d kept rows of smallest priority.
	d := anonymize.DropCount(int(sum.Rows), l)
	cands := keepCands(slices.Clone(acc.Cands), l-1)
	if len(cands) < d {
		return nil, sum, fmt.Errorf("internal error: %d drop candidates for %d rows to drop", len(cands), d)
	}
	for _, c := range cands[:d] {
		i := slices.IndexFunc(splits, func(sp splitCounts) bool { return sp.File == c.File && sp.Split.Group == c.Group })
		if i < 0 {
			return nil, sum, errors.New("internal error: a drop candidate of no split")
		}
		splits[i].Dropped = append(splits[i].Dropped, c.Row)
		for k, x := range c.Vals {
			splits[i].Counts[k] = slices.Clone(splits[i].Counts[k])
			splits[i].Counts[k][x]--
			counts[k][x]--
		}
	}
	sum.Dropped = int64(d)
	sum.Rows -= sum.Dropped
	sum.Counts = counts
	sum.Shards = int(max(1, (sum.Rows+shardRows-1)/shardRows))
	plans := make([]splitPlan, len(splits))
	for i, sp := range splits {
		slices.Sort(sp.Dropped)
		plans[i] = splitPlan{Split: anonSplit{File: sp.File, Split: sp.Split}, Dropped: sp.Dropped, Allot: make([][]allotEntry, len(s.cols)), Shards: sum.Shards}
	}
	for k, c := range counts {
		sch, err := anonymize.NewSchedule(c, l, g, rand.New(keyed.Stream(tagSchedule, uint64(k))))
		if err != nil {
			return nil, sum, ineligible(err, input, s.cols[k])
		}
		if k == 0 {
			sum.Types = sch.Types
		}
		dealer := anonymize.NewDealer(sch)
		r := rand.New(keyed.Stream(tagAllot, uint64(k)))
		got := map[int]int64{}
		for i, sp := range splits {
			for v, n := range sp.Counts[k] {
				clear(got)
				for range n {
					t, err := dealer.Deal(uint32(v), r)
					if err != nil {
						return nil, sum, fmt.Errorf("internal error: %s: %v", s.cols[k].Name(), err)
					}
					got[t]++
				}
				types := make([]int, 0, len(got))
				for t := range got {
					types = append(types, t)
				}
				slices.Sort(types)
				for _, t := range types {
					plans[i].Allot[k] = append(plans[i].Allot[k], allotEntry{Value: uint32(v), Set: sch.Types[t].Values, N: got[t], Type: t})
				}
			}
		}
		if !dealer.Done() {
			return nil, sum, errors.New("internal error: the allotment left slots undealt")
		}
	}
	return plans, sum, nil
}

// ineligible words the library's eligibility error with labels, as the
// CLI does.
func ineligible(err error, input string, col *codebook.Column) error {
	var ie *anonymize.IneligibleError
	if !errors.As(err, &ie) {
		return fmt.Errorf("%s: %s: %v", input, col.Name(), err)
	}
	feasible := fmt.Sprintf("the largest feasible ℓ′ is %d (check with anonymize --check)", ie.LargestL)
	if ie.LargestL < 2 {
		feasible = "no ℓ′ ≥ 2 is feasible: that value holds more than half the rows"
	}
	if ie.Distinct < ie.L {
		return fmt.Errorf("%s: %s is not eligible for ℓ′ = %d: it has only %d distinct values and a decoy group needs ℓ′; %s", input, col.Name(), ie.L, ie.Distinct, feasible)
	}
	return fmt.Errorf("%s: %s is not eligible for ℓ′ = %d: %s occurs %d times in %d rows, more than N/ℓ′ = %d; %s",
		input, col.Name(), ie.L, table.QuoteCell(col.Label(int(ie.Value))), ie.Count, ie.N, ie.N/int64(ie.L), feasible)
}

// splitDealer deals one split's allotted slots (step 3): per sensitive
// column and value, a Fenwick tree over the remaining slots of each of its
// entries.
type splitDealer struct {
	entries [][][]allotEntry // [k][v] → the value's entries
	trees   [][]*fenwick
}

func newSplitDealer(allot [][]allotEntry, v []int) *splitDealer {
	d := &splitDealer{entries: make([][][]allotEntry, len(allot)), trees: make([][]*fenwick, len(allot))}
	for k, es := range allot {
		d.entries[k] = make([][]allotEntry, v[k])
		d.trees[k] = make([]*fenwick, v[k])
		for _, e := range es {
			d.entries[k][e.Value] = append(d.entries[k][e.Value], e)
		}
		for x, list := range d.entries[k] {
			if len(list) > 0 {
				w := make([]int64, len(list))
				for i, e := range list {
					w[i] = e.N
				}
				d.trees[k][x] = newFenwick(w)
			}
		}
	}
	return d
}

var errNoAllottedSlot = errors.New("more rows of this value than in the first pass (did the input change between the passes?)")

// divert deals a row of value x in column k a uniformly random remaining
// slot and returns the slot's set and a uniform member of it.
func (d *splitDealer) divert(k int, x uint32, r *rand.Rand) ([]uint32, uint32, error) {
	e, err := d.deal(k, x, r)
	if err != nil {
		return nil, 0, err
	}
	return e.Set, e.Set[r.IntN(len(e.Set))], nil
}

// deal deals a row of value x in column k a uniformly random remaining
// slot and returns the slot's entry (its set and type).
func (d *splitDealer) deal(k int, x uint32, r *rand.Rand) (*allotEntry, error) {
	t := d.trees[k][x]
	if t == nil || t.total == 0 {
		return nil, errNoAllottedSlot
	}
	i := t.find(r.Int64N(t.total))
	t.add(i, -1)
	return &d.entries[k][x][i], nil
}

// done reports whether every allotted slot was dealt.
func (d *splitDealer) done() bool {
	for _, ts := range d.trees {
		for _, t := range ts {
			if t != nil && t.total != 0 {
				return false
			}
		}
	}
	return true
}

// fenwick is a binary indexed tree over non-negative weights.
type fenwick struct {
	tree  []int64 // 1-based
	total int64
}

func newFenwick(w []int64) *fenwick {
	f := &fenwick{tree: make([]int64, len(w)+1)}
	for i, x := range w {
		f.add(i, x)
	}
	return f
}

func (f *fenwick) add(i int, x int64) {
	f.total += x
	for j := i + 1; j < len(f.tree); j += j & -j {
		f.tree[j] += x
	}
}

// find returns the i with w[0]+…+w[i−1] ≤ x < w[0]+…+w[i], 0 ≤ x < total.
func (f *fenwick) find(x int64) int {
	pos := 0
	step := 1
	for step*2 < len(f.tree) {
		step *= 2
	}
	for ; step > 0; step /= 2 {
		if next := pos + step; next < len(f.tree) && f.tree[next] <= x {
			pos = next
			x -= f.tree[next]
		}
	}
	return pos
}

// pubRow is a published row: its order key and its cells.
type pubRow struct {
	Hi, Lo uint64
	Cells  []string
}

// pubBatch is up to pubBatchRows published rows of one split bound for one
// shard: their order keys and their cells, row after row. Rows travel to
// the shards' writers in batches since the runner's shuffle costs per
// element (1M rows on Prism: 55 s of CPU with one element per row, 16 s
// in batches).
type pubBatch struct {
	Hi, Lo []uint64
	Cells  []string
}

const pubBatchRows = 4096

// shardBatch is a batch of rows bound for one shard (or bucket): a
// pointer to B that counts its rows.
type shardBatch[B any] interface {
	*B
	size() int
}

// handFull hands batch k over once it holds pubBatchRows rows and starts
// it afresh: called after each row added to it.
func handFull[B any, P shardBatch[B]](batches []B, k int, emit func(int, B)) {
	if P(&batches[k]).size() == pubBatchRows {
		emit(k, batches[k])
		var empty B
		batches[k] = empty
	}
}

// handRest hands over, after a split's last row, the batches that hold
// rows.
func handRest[B any, P shardBatch[B]](batches []B, emit func(int, B)) {
	for k := range batches {
		if P(&batches[k]).size() > 0 {
			emit(k, batches[k])
		}
	}
}

func (b *pubBatch) size() int { return len(b.Hi) }
func (b *bitBatch) size() int { return len(b.Hi) }
func (b *anaBatch) size() int { return len(b.NHi) }
func (b *anaOut) size() int   { return len(b.Hi) }

// add appends a row to the batch.
func (b *pubBatch) add(r pubRow) {
	b.Hi, b.Lo, b.Cells = append(b.Hi, r.Hi), append(b.Lo, r.Lo), append(b.Cells, r.Cells...)
}

// rows appends the batch's rows (of ncol cells each) to dst.
func (b pubBatch) rows(dst []pubRow, ncol int) ([]pubRow, error) {
	if len(b.Cells) != len(b.Hi)*ncol || len(b.Lo) != len(b.Hi) {
		return nil, fmt.Errorf("internal error: a batch of %d rows has %d cells", len(b.Hi), len(b.Cells))
	}
	for i := range b.Hi {
		dst = append(dst, pubRow{Hi: b.Hi[i], Lo: b.Lo[i], Cells: b.Cells[i*ncol : (i+1)*ncol : (i+1)*ncol]})
	}
	return dst, nil
}

// dealSplitFn is pass 2 on one split.
type dealSplitFn struct {
	Key     []byte            `json:"key"`
	Meta    map[string]string `json:"meta"`
	Columns []string          `json:"columns"`
	// onDeal, when set (tests, in process), sees each row's dealt set.
	onDeal func(file int, row int64, k int, set []uint32, published uint32)
}

func (f *dealSplitFn) ProcessElement(ctx context.Context, p splitPlan, emit func(int, pubBatch)) error {
	s, err := newAnonSetup(f.Meta, f.Columns)
	if err != nil {
		return err
	}
	rd, err := s.open(p.Split)
	if err != nil {
		return err
	}
	defer rd.Close()
	v := make([]int, len(s.cols))
	for k, c := range s.cols {
		v[k] = c.K()
	}
	dealer := newSplitDealer(p.Allot, v)
	keyed := rng.NewKeyed(rng.Key(f.Key))
	r := rand.New(keyed.Stream(tagDeal, rowID(p.Split.File, p.Split.Split.FirstRow)))
	sensAt := make([]int, len(f.Columns))
	for j := range sensAt {
		sensAt[j] = slices.Index(s.idx, j)
	}
	next := 0 // into p.Dropped
	keys := newRowKeys(keyed)
	batches := make([]pubBatch, p.Shards)
	err = s.scan(rd, p.Split, func(n int64, cells []table.Values, i int, vals []uint32, kept bool) error {
		if !kept {
			return nil
		}
		if next < len(p.Dropped) && p.Dropped[next] == n {
			next++
			return nil
		}
		row := pubRow{Cells: make([]string, len(cells))}
		for j, c := range cells {
			if k := sensAt[j]; k >= 0 {
				set, y, err := dealer.divert(k, vals[k], r)
				if err != nil {
					return &table.DataError{File: p.Split.Split.Path, Row: n + 1, Column: s.sens[k], Err: err}
				}
				if f.onDeal != nil {
					f.onDeal(p.Split.File, n, k, set, y)
				}
				row.Cells[j] = s.cols[k].Label(int(y))
			} else {
				row.Cells[j] = strings.Clone(c.String(i))
			}
		}
		var shard int
		row.Hi, row.Lo, shard = keys.order(tagOrder, rowID(p.Split.File, n), p.Shards)
		b := &batches[shard]
		b.add(row)
		handFull(batches, shard, emit)
		return nil
	})
	if err != nil {
		return err
	}
	handRest(batches, emit)
	if next != len(p.Dropped) || !dealer.done() {
		return fmt.Errorf("%s: the second pass has fewer rows of some value than the first (did the input change between the passes?)", p.Split.Split)
	}
	return nil
}

// writeShardFn writes one output shard: its rows in order-key order, with
// the release's metadata completed from the plan's summary.
type writeShardFn struct {
	Dir     string            `json:"dir"`
	Ext     string            `json:"ext"`
	Meta    map[string]string `json:"meta"`
	Columns []string          `json:"columns"`
}

func (f *writeShardFn) ProcessElement(ctx context.Context, shard int, batches func(*pubBatch) bool, summary string) error {
	var sum anonSummary
	if err := json.Unmarshal([]byte(summary), &sum); err != nil {
		return fmt.Errorf("internal error: the plan's summary %q: %v", summary, err)
	}
	var all []pubRow
	var b pubBatch
	for batches(&b) {
		var err error
		if all, err = b.rows(all, len(f.Columns)); err != nil {
			return err
		}
		b = pubBatch{}
	}
	return writeAnonShard(f.Dir, f.Ext, shard, all, f.Meta, f.Columns, &sum)
}

// shardName is output shard i's file name.
func shardName(prefix string, i int, ext string) string {
	return fmt.Sprintf("%s-%05d%s", prefix, i, ext)
}

// writeAnonShard writes rows (any order) as shard i under dir, with the
// metadata's N and dropped rows from the plan's summary sum (nil for a
// global release, whose metadata records neither).
func writeAnonShard(dir, ext string, i int, rows []pubRow, meta map[string]string, columns []string, sum *anonSummary) error {
	slices.SortFunc(rows, func(a, b pubRow) int { return cmp.Or(cmp.Compare(a.Hi, b.Hi), cmp.Compare(a.Lo, b.Lo)) })
	m := table.Meta(meta).Clone()
	if sum != nil {
		m.SetInt(release.KeyRows, sum.Rows)
		m.SetInt(release.KeyDropped, sum.Dropped)
		if sum.Missing > 0 {
			m.SetInt(release.KeyMissingDropped, sum.Missing)
		}
	}
	schema := table.StringSchema(columns)
	path := filepath.Join(dir, shardName("part", i, ext))
	w, err := table.Create(path, schema, m, table.WriteOptions{})
	if err != nil {
		return err
	}
	defer w.Abort()
	rw := table.NewRowWriter(w, schema, 0)
	defer rw.Release()
	for _, r := range rows {
		if err := rw.AppendStrings(r.Cells); err != nil {
			return err
		}
	}
	if err := rw.Flush(); err != nil {
		return err
	}
	return w.Commit()
}
