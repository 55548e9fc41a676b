package stage

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/textio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/cli"
	anonymizecmd "github.com/pramkit/pramkit/pkg/cmd/anonymize"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/table"
	"github.com/pramkit/pramkit/pkg/version"
)

// Anatomy on Beam (pramkit-beam anonymize -- --mechanism anatomy
// --groups FILE). The tool publishes the rows with a group id instead of
// the sensitive value, and the sensitive table (group, value, count): the
// groups are A′'s decoy groups (package anonymize's Schedule, from the
// counts), the groups of set type t numbered consecutively, each listing
// its ℓ values with count 1 (anonymizecmd.WriteSchedule). A row of value v
// dealt type t goes to a uniformly random one of t's groups, as a
// uniformly random bijection between the rows of (t, v) and t's groups,
// independently for each (t, v) (SPEC §4: a value's rows fill its groups
// in the order of random ids).
//
// The pipeline is A′'s up to the dealing (anonymize.go: pass 1 counts, the
// plan drops N mod ℓ rows, schedules and allots each split its share of
// every value's slots by type, pass 2 deals within the split), then:
//
//  1. Pass 2 (anatomyDealFn) deals each kept row a set type t, and gives
//     it the numbering key PRF_K("ANUM", row) and the order key
//     PRF_K("AORD", row). It sends the row to numbering bucket b, the key's
//     place among B equal ranges of 2^64 (its high word times B, over
//     2^64), and counts the rows of each (t, v, b); a combine adds the
//     counts over the splits.
//  2. Numbering (numberFn, one call per bucket) sorts its rows by
//     numbering key: a row of (t, v) gets group GroupBase[t] + o + j, where
//     o counts the rows of (t, v) in the buckets before b and j those
//     before it in b: its rank among all of (t, v)'s rows by numbering key.
//  3. The numbered rows go to output shard key mod S by their order key
//     and are written in order-key order (writeAnatomyShardFn).
//
// Claim: the release has the tool's law. The types have A′'s law given
// the schedule (anonymize.go's proof). The numbering keys are i.i.d.
// uniform and independent of the types and of the order keys, so ranking
// the rows of (t, v) by them is a uniformly random bijection onto
// 0 … G_t − 1, independently across (t, v), whatever the buckets (they are
// ranges: the rank by bucket then key is the rank by key). The order is
// a uniformly random permutation independent of the groups (the order
// keys, as for A′). The group ids are not ordered along the output (the
// numbering and order keys are independent): coming out of the numbering
// in its order, a value's group ids would increase along the release and
// tell which rows hold different values — why the tool, too, shuffles
// twice. Bucket b holds about N/B rows (B = S, the output shards); the
// count table holds (Σ_t ℓ)·B numbers.
//
// The sensitive table is the schedule written out: the plan's summary
// carries the schedule's set types, and the driver writes the table with
// the tool's WriteSchedule and metadata (a release id drawn on the driver
// from crypto/rand, as the tool's).

var tagNumber = rng.Tag("ANUM")

func init() {
	for _, t := range []any{anaBatch{}, anaCount{}, anaCounts{}, anaOut{}, anatomyDealFn{}, mergeAnaCountsFn{}, numberFn{}, writeAnatomyShardFn{}} {
		beam.RegisterType(reflect.TypeOf(t))
	}
	register.DoFn4x1[context.Context, splitPlan, func(int, anaBatch), func(anaCounts), error](&anatomyDealFn{})
	register.Emitter2[int, anaBatch]()
	register.Emitter1[anaCounts]()
	register.Combiner1[anaCounts](&mergeAnaCountsFn{})
	register.DoFn6x1[context.Context, int, func(*anaBatch) bool, anaCounts, string, func(int, anaOut), error](&numberFn{})
	register.Iter1[anaBatch]()
	register.Emitter2[int, anaOut]()
	register.DoFn4x1[context.Context, int, func(*anaOut) bool, string, error](&writeAnatomyShardFn{})
	register.Iter1[anaOut]()
}

// anaBatch is up to pubBatchRows dealt rows of one split bound for one
// numbering bucket: their numbering and order keys, type, value, and the
// cells of the non-sensitive columns, row after row.
type anaBatch struct {
	NHi, NLo, OHi, OLo []uint64
	Type               []int32
	Value              []uint32
	Cells              []string
}

// anaCount is the number of rows of type T and value V in bucket B.
type anaCount struct {
	T int32
	V uint32
	B int32
	N int64
}

func (a anaCount) cmp(b anaCount) int {
	return cmp.Or(cmp.Compare(a.T, b.T), cmp.Compare(a.V, b.V), cmp.Compare(a.B, b.B))
}

// anaCounts are counts sorted by (T, V, B), each key once.
type anaCounts struct {
	Entries []anaCount
}

// mergeAnaCountsFn adds up the splits' counts.
type mergeAnaCountsFn struct{}

func (mergeAnaCountsFn) MergeAccumulators(a, b anaCounts) anaCounts {
	out := make([]anaCount, 0, len(a.Entries)+len(b.Entries))
	i, j := 0, 0
	for i < len(a.Entries) || j < len(b.Entries) {
		switch {
		case j == len(b.Entries) || (i < len(a.Entries) && a.Entries[i].cmp(b.Entries[j]) < 0):
			out = append(out, a.Entries[i])
			i++
		case i == len(a.Entries) || a.Entries[i].cmp(b.Entries[j]) > 0:
			out = append(out, b.Entries[j])
			j++
		default:
			e := a.Entries[i]
			e.N += b.Entries[j].N
			out = append(out, e)
			i++
			j++
		}
	}
	return anaCounts{Entries: out}
}

// bucketOf is the numbering bucket of key high word hi among b: its place
// among b equal ranges, so that buckets are ordered as their keys.
func bucketOf(hi uint64, b int) int {
	q, _ := bits.Mul64(hi, uint64(b))
	return int(q)
}

// anatomyDealFn is Anatomy's pass 2 on one split (step 1 above).
type anatomyDealFn struct {
	Key     []byte            `json:"key"`
	Meta    map[string]string `json:"meta"`
	Columns []string          `json:"columns"`
}

func (f *anatomyDealFn) ProcessElement(ctx context.Context, p splitPlan, emit func(int, anaBatch), counts func(anaCounts)) error {
	s, err := newAnonSetup(f.Meta, f.Columns)
	if err != nil {
		return err
	}
	if len(s.cols) != 1 {
		return fmt.Errorf("internal error: anatomy on %d sensitive columns", len(s.cols))
	}
	rd, err := s.open(p.Split)
	if err != nil {
		return err
	}
	defer rd.Close()
	dealer := newSplitDealer(p.Allot, []int{s.cols[0].K()})
	keyed := rng.NewKeyed(rng.Key(f.Key))
	r := rand.New(keyed.Stream(tagDeal, rowID(p.Split.File, p.Split.Split.FirstRow)))
	buckets := p.Shards
	count := map[anaCount]int64{}
	next := 0 // into p.Dropped
	keys := newRowKeys(keyed)
	batches := make([]anaBatch, buckets)
	err = s.scan(rd, p.Split, func(n int64, cells []table.Values, i int, vals []uint32, kept bool) error {
		if !kept {
			return nil
		}
		if next < len(p.Dropped) && p.Dropped[next] == n {
			next++
			return nil
		}
		e, err := dealer.deal(0, vals[0], r)
		if err != nil {
			return &table.DataError{File: p.Split.Split.Path, Row: n + 1, Column: s.sens[0], Err: err}
		}
		id := rowID(p.Split.File, n)
		nhi, nlo := keys.block(tagNumber, id)
		ohi, olo := keys.block(tagOrder, id)
		bk := bucketOf(nhi, buckets)
		b := &batches[bk]
		b.NHi, b.NLo = append(b.NHi, nhi), append(b.NLo, nlo)
		b.OHi, b.OLo = append(b.OHi, ohi), append(b.OLo, olo)
		b.Type, b.Value = append(b.Type, int32(e.Type)), append(b.Value, vals[0])
		for j, c := range cells {
			if j != s.idx[0] {
				b.Cells = append(b.Cells, strings.Clone(c.String(i)))
			}
		}
		count[anaCount{T: int32(e.Type), V: vals[0], B: int32(bk)}]++
		handFull(batches, bk, emit)
		return nil
	})
	if err != nil {
		return err
	}
	handRest(batches, emit)
	if next != len(p.Dropped) || !dealer.done() {
		return fmt.Errorf("%s: the second pass has fewer rows of some value than the first (did the input change between the passes?)", p.Split.Split)
	}
	out := anaCounts{Entries: make([]anaCount, 0, len(count))}
	for k, n := range count {
		k.N = n
		out.Entries = append(out.Entries, k)
	}
	slices.SortFunc(out.Entries, anaCount.cmp)
	counts(out)
	return nil
}

// anaOut is up to pubBatchRows numbered rows bound for one output shard:
// their order keys, group ids and non-sensitive cells, row after row.
type anaOut struct {
	Hi, Lo []uint64
	Group  []int64
	Cells  []string
}

// numberFn numbers one bucket's rows (step 2 above).
type numberFn struct {
	NSA int `json:"nsa"` // non-sensitive columns

	// before[(t, v)][b] counts the rows of (t, v) in the buckets before
	// b: computed once from the counts (the same side input for every
	// bucket), so that a bucket costs O(its rows + Σ_t ℓ), not a pass over
	// the (Σ_t ℓ)·B counts.
	before map[anaTV][]int64
}

// anaTV is a (set type, value) pair.
type anaTV struct {
	t int32
	v uint32
}

// prefix returns the rows of each (t, v) in the buckets before b.
func (f *numberFn) prefix(counts anaCounts, buckets int) map[anaTV][]int64 {
	if f.before != nil {
		return f.before
	}
	f.before = map[anaTV][]int64{}
	for _, e := range counts.Entries {
		k := anaTV{e.T, e.V}
		p := f.before[k]
		if p == nil {
			p = make([]int64, buckets+1)
			f.before[k] = p
		}
		if int(e.B) < buckets {
			p[e.B+1] += e.N
		}
	}
	for _, p := range f.before {
		for b := 1; b <= buckets; b++ {
			p[b] += p[b-1]
		}
	}
	return f.before
}

// anaRow is a dealt row in a bucket.
type anaRow struct {
	NHi, NLo, OHi, OLo uint64
	T                  int32
	V                  uint32
	Cells              []string
}

func (f *numberFn) ProcessElement(ctx context.Context, bucket int, batches func(*anaBatch) bool, counts anaCounts, summary string, emit func(int, anaOut)) error {
	var sum anonSummary
	if err := json.Unmarshal([]byte(summary), &sum); err != nil {
		return fmt.Errorf("internal error: the plan's summary %q: %v", summary, err)
	}
	var rows []anaRow
	var b anaBatch
	for batches(&b) {
		if len(b.Cells) != len(b.NHi)*f.NSA || len(b.Type) != len(b.NHi) || len(b.Value) != len(b.NHi) || len(b.OLo) != len(b.NHi) {
			return fmt.Errorf("internal error: a batch of %d rows has %d cells", len(b.NHi), len(b.Cells))
		}
		for i := range b.NHi {
			rows = append(rows, anaRow{NHi: b.NHi[i], NLo: b.NLo[i], OHi: b.OHi[i], OLo: b.OLo[i], T: b.Type[i], V: b.Value[i],
				Cells: b.Cells[i*f.NSA : (i+1)*f.NSA : (i+1)*f.NSA]})
		}
		b = anaBatch{}
	}
	slices.SortFunc(rows, func(a, b anaRow) int {
		return cmp.Or(cmp.Compare(a.NHi, b.NHi), cmp.Compare(a.NLo, b.NLo), cmp.Compare(a.OHi, b.OHi), cmp.Compare(a.OLo, b.OLo))
	})
	// The next group of each (t, v) in this bucket: the rows of (t, v) in
	// the buckets before.
	if bucket < 0 || bucket >= sum.Shards {
		return fmt.Errorf("internal error: bucket %d of %d", bucket, sum.Shards)
	}
	before := f.prefix(counts, sum.Shards)
	next := map[anaTV]int64{}
	for k, p := range before {
		next[k] = p[bucket]
	}
	sch := &anonymize.Schedule{Types: sum.Types}
	base := anonymizecmd.GroupBase(sch)
	out := make([]anaOut, sum.Shards)
	for _, r := range rows {
		if int(r.T) >= len(sch.Types) {
			return fmt.Errorf("internal error: a row of set type %d, of %d", r.T, len(sch.Types))
		}
		k := anaTV{r.T, r.V}
		j := next[k]
		if j >= sch.Types[r.T].Groups {
			return fmt.Errorf("internal error: set type %d has %d groups, and more rows of value %d", r.T, sch.Types[r.T].Groups, r.V)
		}
		next[k] = j + 1
		shard := shardOf(r.OHi, sum.Shards)
		o := &out[shard]
		o.Hi, o.Lo, o.Group, o.Cells = append(o.Hi, r.OHi), append(o.Lo, r.OLo), append(o.Group, base[r.T]+j), append(o.Cells, r.Cells...)
		handFull(out, shard, emit)
	}
	handRest(out, emit)
	return nil
}

// writeAnatomyShardFn writes one output shard of Anatomy's row table.
type writeAnatomyShardFn struct {
	Dir      string            `json:"dir"`
	Ext      string            `json:"ext"`
	Meta     map[string]string `json:"meta"`
	Names    []string          `json:"names"` // the non-sensitive columns
	GroupCol string            `json:"group_col"`
}

// anaOutRow is a numbered row.
type anaOutRow struct {
	Hi, Lo uint64
	Group  int64
	Cells  []string
}

func (f *writeAnatomyShardFn) ProcessElement(ctx context.Context, shard int, batches func(*anaOut) bool, summary string) error {
	var sum anonSummary
	if err := json.Unmarshal([]byte(summary), &sum); err != nil {
		return fmt.Errorf("internal error: the plan's summary %q: %v", summary, err)
	}
	var rows []anaOutRow
	var b anaOut
	n := len(f.Names)
	for batches(&b) {
		if len(b.Cells) != len(b.Hi)*n || len(b.Lo) != len(b.Hi) || len(b.Group) != len(b.Hi) {
			return fmt.Errorf("internal error: a batch of %d rows has %d cells", len(b.Hi), len(b.Cells))
		}
		for i := range b.Hi {
			rows = append(rows, anaOutRow{Hi: b.Hi[i], Lo: b.Lo[i], Group: b.Group[i], Cells: b.Cells[i*n : (i+1)*n : (i+1)*n]})
		}
		b = anaOut{}
	}
	return writeAnatomyShard(f.Dir, f.Ext, shard, rows, f.Meta, f.Names, f.GroupCol, &sum)
}

// anatomyMeta is the row table's metadata with N, dropped, missing_dropped
// and groups from the plan's summary.
func anatomyMeta(meta map[string]string, sum *anonSummary) table.Meta {
	m := table.Meta(meta).Clone()
	m.SetInt(release.KeyRows, sum.Rows)
	m.SetInt(release.KeyDropped, sum.Dropped)
	delete(m, release.KeyMissingDropped)
	if sum.Missing > 0 {
		m.SetInt(release.KeyMissingDropped, sum.Missing)
	}
	m.SetInt(release.KeyGroups, (&anonymize.Schedule{Types: sum.Types}).Groups())
	return m
}

// writeAnatomyShard writes rows (any order) in order-key order as shard i
// of the row table under dir: the non-sensitive columns as text, then the
// group id.
func writeAnatomyShard(dir, ext string, i int, rows []anaOutRow, meta map[string]string, names []string, groupCol string, sum *anonSummary) error {
	slices.SortFunc(rows, func(a, b anaOutRow) int { return cmp.Or(cmp.Compare(a.Hi, b.Hi), cmp.Compare(a.Lo, b.Lo)) })
	fields := make([]arrow.Field, 0, len(names)+1)
	for _, name := range names {
		fields = append(fields, arrow.Field{Name: name, Type: arrow.BinaryTypes.String})
	}
	fields = append(fields, arrow.Field{Name: groupCol, Type: arrow.PrimitiveTypes.Int64})
	schema := arrow.NewSchema(fields, nil)
	w, err := table.Create(filepath.Join(dir, shardName("part", i, ext)), schema, anatomyMeta(meta, sum), table.WriteOptions{})
	if err != nil {
		return err
	}
	defer w.Abort()
	rw := table.NewRowWriter(w, schema, 0)
	defer rw.Release()
	bb := rw.BatchBuilder
	for _, r := range rows {
		for j, c := range r.Cells {
			bb.String(j, c)
		}
		bb.Int64(len(names), r.Group)
		if err := rw.EndRow(); err != nil {
			return err
		}
	}
	if err := rw.Flush(); err != nil {
		return err
	}
	return w.Commit()
}

// AnatomyParams are the Anatomy pipeline's parameters.
type AnatomyParams struct {
	AnonymizeParams
	GroupCol string
}

// AnatomyPipeline adds Anatomy over the files to s: it writes the row
// table's shards under p.Dir and returns the plan's summary (one JSON
// line, with the schedule's set types).
func AnatomyPipeline(s beam.Scope, files []string, p AnatomyParams) beam.PCollection {
	s = s.Scope("anatomy")
	splits := fileSplits(s, files)
	meta := map[string]string(p.Meta)
	counts := beam.ParDo(s, &countSplitFn{Key: p.Key, Meta: meta, Columns: p.Columns, L: p.L}, splits)
	acc := beam.Combine(s, &mergePlanFn{L: p.L}, counts)
	plans, summary := beam.ParDo2(s, &planFn{Key: p.Key, Meta: meta, Columns: p.Columns, L: p.L, Grouping: p.Grouping,
		ShardRows: p.ShardRows, Input: p.Input, Anatomy: true}, acc)
	dealt, tvb := beam.ParDo2(s, &anatomyDealFn{Key: p.Key, Meta: meta, Columns: p.Columns}, beam.Reshuffle(s, plans))
	total := beam.Combine(s, &mergeAnaCountsFn{}, tvb)
	var names []string
	sens := anonSensitive(meta)
	for _, c := range p.Columns {
		if c != sens {
			names = append(names, c)
		}
	}
	numbered := beam.ParDo(s, &numberFn{NSA: len(names)}, beam.GroupByKey(s, dealt),
		beam.SideInput{Input: total}, beam.SideInput{Input: summary})
	beam.ParDo0(s, &writeAnatomyShardFn{Dir: p.Dir, Ext: p.Ext, Meta: meta, Names: names, GroupCol: p.GroupCol},
		beam.GroupByKey(s, numbered), beam.SideInput{Input: summary})
	return summary
}

// anonSensitive is the one sensitive column of an Anatomy release's
// metadata ("" if it names none or several).
func anonSensitive(meta map[string]string) string {
	var sens []string
	if err := json.Unmarshal([]byte(meta[release.KeySensitive]), &sens); err != nil || len(sens) != 1 {
		return ""
	}
	return sens[0]
}

// anatomy publishes the Anatomy baseline: the row table's shards and the
// sensitive table at --groups.
func (a *anonRun) anatomy(ctx context.Context) error {
	o := a.opts
	if slices.Contains(a.columns, o.GroupCol) {
		return fmt.Errorf("%s already has a column %q: name the group id column otherwise with --group-column NAME", a.files[0], o.GroupCol)
	}
	for _, in := range a.files {
		if sameFile(in, o.Groups) {
			return cli.Usagef("--groups %s would write over the input %s: choose another file", o.Groups, in)
		}
	}
	rel := release.Anonymized{Mechanism: release.MechanismAnatomy, Grouping: o.Grouping, L: o.L}
	meta, err := o.AnatomyRelease(a.cb, &rel, a.insecureIn)
	if err != nil {
		return err
	}
	release.Stamp(meta, version.String())
	tmp, err := os.MkdirTemp(filepath.Dir(a.c.Output+"x"), ".pramkit-beam-anonymize-*")
	if err != nil {
		return fmt.Errorf("cannot make a temporary folder next to --output %s: %w", a.c.Output, err)
	}
	defer os.RemoveAll(tmp)
	summaryTxt := filepath.Join(tmp, "summary.txt")
	p, s := beam.NewPipelineWithRoot()
	sum := AnatomyPipeline(s, a.files, AnatomyParams{AnonymizeParams: AnonymizeParams{Key: a.key, Meta: meta, Columns: a.columns, L: o.L,
		Grouping: o.Grouping, ShardRows: a.shardRows, Input: a.c.Input, Dir: tmp, Ext: a.ext}, GroupCol: o.GroupCol})
	textio.Write(s, summaryTxt, sum)
	if _, err := beam.Run(ctx, a.c.Runner, p); err != nil {
		return pipelineError(a.c.Runner, err)
	}
	var got anonSummary
	if err := readSummary(summaryTxt, &got); err != nil {
		return err
	}
	var names []string
	for _, c := range a.columns {
		if c != o.Sensitive[0] {
			names = append(names, c)
		}
	}
	// The sensitive table, next to the shards until all are written.
	sch := &anonymize.Schedule{Types: got.Types}
	rel.Rows, rel.Dropped, rel.MissingDropped, rel.Groups = got.Rows, got.Dropped, got.Missing, int(sch.Groups())
	stMeta := table.Meta{}
	if err := rel.GroupsTableMeta(meta[release.KeyInsecureSeed] == "true").Encode(stMeta); err != nil {
		return err
	}
	release.Stamp(stMeta, version.String())
	stTmp := filepath.Join(tmp, "groups-"+filepath.Base(o.Groups))
	gw, err := table.Create(stTmp, anonymizecmd.GroupsSchema(o.GroupCol, o.Sensitive[0]), stMeta,
		table.WriteOptions{Fallback: table.FormatFromPath(a.files[0])})
	if err != nil {
		return err
	}
	defer gw.Abort()
	col, _ := a.cb.Column(o.Sensitive[0])
	if err := anonymizecmd.WriteSchedule(gw, anonymizecmd.GroupsSchema(o.GroupCol, o.Sensitive[0]), sch, col.Label); err != nil {
		return err
	}
	if err := gw.Commit(); err != nil {
		return err
	}
	err = moveShards(tmp, a.c.Output, a.ext, got.Shards, func(i int) error {
		return writeAnatomyShard(tmp, a.ext, i, nil, meta, names, o.GroupCol, &got)
	})
	if err != nil {
		return err
	}
	if err := os.Rename(stTmp, o.Groups); err != nil {
		return err
	}
	if _, err := os.Stat(stTmp + ".meta.json"); err == nil {
		if err := os.Rename(stTmp+".meta.json", o.Groups+".meta.json"); err != nil {
			return err
		}
	}
	if got.Missing > 0 {
		fmt.Fprintf(a.streams.Err, "anonymize: %s: left out %s with a missing sensitive value (--missing drop)\n", a.out(), rowCount(got.Missing))
	}
	if got.Dropped > 0 {
		fmt.Fprintf(a.streams.Err, "anonymize: %s: left out %s chosen at random so that N = %d is a multiple of ℓ′ = %d\n", a.out(), rowCount(got.Dropped), got.Rows, o.L)
	}
	return nil
}
