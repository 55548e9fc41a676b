package anonymize

import (
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/pipeline"
	"github.com/pramkit/pramkit/pkg/progress"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/table"
)

// inputs are the files the outputs must not overwrite.
func (o *Options) inputs() []string {
	return []string{o.Input, o.Codebook.Path, o.Codebook.Save}
}

// meta is the metadata of a publication: a's items (release.Anonymized,
// with the encoding policies, sensitive columns and their codebook filled
// in here) plus insecure_seed and order — all but the codebook's, which
// the writers make (o.codebookItem).
func (o *Options) meta(cb *codebook.Codebook, a *release.Anonymized) (table.Meta, error) {
	if err := o.fill(cb, a); err != nil {
		return nil, err
	}
	meta := table.Meta{}
	if o.insecureIn {
		meta[release.KeyInsecureSeed] = "true"
	}
	o.Seed.Mark(meta)
	o.Order.Record(meta)
	items := *a
	items.Codebook = nil // o.codebookItem
	if err := items.Encode(meta); err != nil {
		return nil, err
	}
	return meta, nil
}

// fill fills in a's encoding policies, sensitive columns and their
// codebook (cb's), and sets o.codebookItem.
func (o *Options) fill(cb *codebook.Codebook, a *release.Anonymized) error {
	// The encoding policies let estimate --truth read the original table
	// the way anonymize did.
	a.Policy = o.policy()
	a.Sensitive = o.Sensitive
	sel, err := cb.Select(o.Sensitive)
	if err != nil {
		return err
	}
	a.Codebook = sel
	o.codebookItem = []table.Deferred{release.CodebookItem(sel)}
	return nil
}

// insecure reports whether meta marks the publication insecure_seed.
func (o *Options) insecure() bool { return o.insecureIn || o.Seed.Insecure }

// notes tells on stderr which rows were left out of the publication. Each
// line names the publication: two runs (A′ and Anatomy of one table, as in
// make demo) leave out different random rows, and two identical lines
// read as one message printed twice.
func (o *Options) notes(d *dataset, drop int, n int64) {
	out := o.outName()
	if d.missing > 0 {
		fmt.Fprintf(o.Streams.Err, "anonymize: %s: left out %s with a missing sensitive value (--missing drop)\n", out, rowCount(d.missing))
	}
	if drop > 0 {
		fmt.Fprintf(o.Streams.Err, "anonymize: %s: left out %s chosen at random so that N = %d is a multiple of ℓ′ = %d\n", out, rowCount(int64(drop)), n, o.L)
	}
}

// rowCount is "1 row" or "N rows".
func rowCount(n int64) string {
	if n == 1 {
		return "1 row"
	}
	return fmt.Sprintf("%d rows", n)
}

// outName names the publication in notes: the -o file, else standard output.
func (o *Options) outName() string {
	if o.Output.Path == "" || o.Output.Path == "-" {
		return "standard output"
	}
	return o.Output.Path
}

// readRows reads the whole table into memory for publishing, and checks
// that it is eligible for --l.
func (o *Options) readRows(in table.Reader, cb *codebook.Codebook) (*dataset, error) {
	d, err := read(in, cb, o.Sensitive, readOptions{keepRows: true, policy: o.policy(), meter: o.Streams.Progress("anonymize: read")})
	if err != nil {
		return nil, err
	}
	if err := d.eligible(o.L); err != nil {
		return nil, err
	}
	return d, nil
}

// libError maps the library's eligibility error to labels.
func (d *dataset) libError(err error) error {
	var ie *anonymize.IneligibleError
	if errors.As(err, &ie) {
		return d.ineligible(ie)
	}
	return err
}

// writeRows writes the held rows in the given order: the non-sensitive
// columns from their dictionaries, sensitive column k (at output column j)
// by sens, or not at all when sens is nil; output columns after the input's
// by extra.
func (d *dataset) writeRows(w table.Writer, schema *arrow.Schema, order []uint32, meter *progress.Meter,
	sens func(bb *table.BatchBuilder, j, k int, row uint32), extra func(bb *table.BatchBuilder, j int, row uint32)) error {
	rw := table.NewRowWriter(w, schema, 0)
	defer rw.Release()
	rw.OnBatch = func(rows int) { meter.Add(int64(rows)) }
	bb := rw.BatchBuilder
	for _, row := range order {
		out := 0
		for j, k := range d.which {
			switch {
			case k < 0:
				bb.String(out, d.nsa[j].values[d.codes[j].at(row)])
			case sens != nil:
				sens(bb, out, k, row)
			default:
				continue // the sensitive column is left out
			}
			out++
		}
		for ; out < schema.NumFields(); out++ {
			extra(bb, out, row)
		}
		if err := rw.EndRow(); err != nil {
			return err
		}
	}
	if err := rw.Flush(); err != nil {
		return err
	}
	meter.Done()
	return nil
}

// runAnatomyInMemory publishes the Anatomy baseline holding the table
// (--keep-order; see runAnatomy): the rows with a group id instead of the
// sensitive value, in the input's order, and the sensitive table (group,
// value, count) to --groups.
func (o *Options) runAnatomyInMemory(in table.Reader, cb *codebook.Codebook) error {
	d, err := o.readRows(in, cb)
	if err != nil {
		return err
	}
	sv := d.sens[0]
	r := o.Seed.Rand(o.cmd)
	rel, err := anonymize.Anatomize(d.s[0], sv.col.K(), o.L, r)
	if err != nil {
		return d.libError(err)
	}
	d.s = nil
	if o.Order.Keep {
		slices.Sort(rel.Order)
	}
	n := int64(len(rel.Order))
	o.notes(d, len(rel.Dropped), n)
	a := release.Anonymized{Mechanism: anatomy, Grouping: release.GroupingAnatomy, Rows: n, Dropped: int64(len(rel.Dropped)), MissingDropped: d.missing, L: o.L,
		Groups: len(rel.ST) / rel.L}
	meta, gw, stSchema, err := o.createGroupsTable(in, cb, &a, sv.name)
	if err != nil {
		return err
	}
	defer gw.Abort()
	if err := writeST(gw, stSchema, rel.ST, sv.col.Label); err != nil {
		return err
	}

	var names []string
	for j, k := range d.which {
		if k < 0 {
			names = append(names, d.names[j])
		}
	}
	fields := make([]arrow.Field, 0, len(names)+1)
	for _, name := range names {
		fields = append(fields, arrow.Field{Name: name, Type: arrow.BinaryTypes.String})
	}
	fields = append(fields, arrow.Field{Name: o.GroupCol, Type: arrow.PrimitiveTypes.Int64})
	schema := arrow.NewSchema(fields, nil)
	w, err := o.Streams.Create(o.Output, schema, meta, in.Format(), o.rowsInputs(), o.codebookItem...)
	if err != nil {
		return err
	}
	defer w.Abort()
	err = d.writeRows(w, schema, rel.Order, o.Streams.Progress("anonymize: write"), nil, func(bb *table.BatchBuilder, j int, row uint32) {
		bb.Int64(j, int64(rel.GroupOf[row]))
	})
	if err != nil {
		return err
	}
	// Both complete, then the groups table and the rows: a failure while
	// writing leaves the previous run's pair as it was.
	_, err = table.CommitAll(gw, w)
	return err
}

// createGroupsTable completes Anatomy's metadata a (group column, a fresh
// release id shared by the two tables, so that estimate can check that it
// was given the sensitive table of these rows) and opens the sensitive
// table (group, value, count) at --groups: it is written in full before
// the rows. It returns the rows' metadata, the table's writer and schema.
func (o *Options) createGroupsTable(in table.Reader, cb *codebook.Codebook, a *release.Anonymized, sensitive string) (table.Meta, table.Writer, *arrow.Schema, error) {
	meta, err := o.anatomyMeta(cb, a)
	if err != nil {
		return nil, nil, nil, err
	}
	stMeta, err := o.groupsMeta(cb, a)
	if err != nil {
		return nil, nil, nil, err
	}
	stSchema := GroupsSchema(o.GroupCol, sensitive)
	gw, err := o.Streams.Create(o.groupsOutput(), stSchema, stMeta, in.Format(), o.groupsInputs(), o.codebookItem...)
	if err != nil {
		return nil, nil, nil, err
	}
	return meta, gw, stSchema, nil
}

// groupsOutput is where --groups writes the sensitive table.
func (o *Options) groupsOutput() cli.Output {
	return cli.Output{Path: o.Groups, Format: o.Output.Format, Flag: "--groups"}
}

// groupsInputs are the files the sensitive table must not overwrite: the
// inputs and the row table.
func (o *Options) groupsInputs() []string { return append(o.inputs(), o.Output.Path) }

// rowsInputs are the files Anatomy's row table must not overwrite: the
// inputs and the sensitive table.
func (o *Options) rowsInputs() []string { return append(o.inputs(), o.Groups) }

// anatomyMeta completes Anatomy's metadata a with the group column, a
// fresh release id and the sensitive table's name, and returns the row
// table's metadata.
func (o *Options) anatomyMeta(cb *codebook.Codebook, a *release.Anonymized) (table.Meta, error) {
	o.anatomyIDs(a)
	return o.meta(cb, a)
}

// anatomyIDs completes Anatomy's metadata a with the group column, a
// fresh release id and the sensitive table's name.
func (o *Options) anatomyIDs(a *release.Anonymized) {
	a.GroupColumn, a.ReleaseID, a.GroupsTable = o.GroupCol, releaseID(), table.DisplayName(o.Groups)
}

// groupsMeta is the metadata of the sensitive table of Anatomy release a
// (after anatomyIDs): it fills in a's sensitive columns and codebook as
// meta does, without making the row table's metadata.
func (o *Options) groupsMeta(cb *codebook.Codebook, a *release.Anonymized) (table.Meta, error) {
	if err := o.fill(cb, a); err != nil {
		return nil, err
	}
	stMeta := table.Meta{}
	g := a.GroupsTableMeta(o.insecure())
	g.Codebook = nil // o.codebookItem
	if err := g.Encode(stMeta); err != nil {
		return nil, err
	}
	return stMeta, nil
}

// GroupsSchema is the schema of Anatomy's sensitive table: the group id,
// the sensitive value, the count.
func GroupsSchema(groupCol, sensitive string) *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: groupCol, Type: arrow.PrimitiveTypes.Int64},
		{Name: sensitive, Type: arrow.BinaryTypes.String},
		{Name: "count", Type: arrow.PrimitiveTypes.Int64},
	}, nil)
}

// GroupBase numbers Anatomy's groups from the schedule: the groups of set
// type t are GroupBase(sch)[t], GroupBase(sch)[t]+1, … (Types[t].Groups of
// them), the types in the schedule's order (Plan.GroupBase without the
// schedule).
func GroupBase(sch *anonymize.Schedule) []int64 {
	base := make([]int64, len(sch.Types))
	var next int64
	for t, ty := range sch.Types {
		base[t] = next
		next += ty.Groups
	}
	return base
}

// WriteSchedule writes Anatomy's sensitive table from the schedule (the
// groups numbered as GroupBase says, each listing its ℓ values with count
// 1) to w, a batch at a time, as anonymize writes it from its plan's
// sets (setSpill); the Beam stage has the schedule's Types alone.
// label(v) is value index v's label.
func WriteSchedule(w table.Writer, schema *arrow.Schema, sch *anonymize.Schedule, label func(int) string) error {
	base := GroupBase(sch)
	var labels []string // (a schedule the Beam stage rebuilt has Types alone, no L)
	return writeGroupsOf(w, schema, func(fn func(t int, labels []string, base, groups int64) error) error {
		for t, st := range sch.Types {
			if len(labels) < len(st.Values) {
				labels = make([]string, len(st.Values))
			}
			for j, v := range st.Values {
				labels[j] = label(int(v))
			}
			if err := fn(t, labels[:len(st.Values)], base[t], st.Groups); err != nil {
				return err
			}
		}
		return nil
	})
}

// groupEntry is a row of Anatomy's sensitive table, with count 1.
type groupEntry struct {
	group int64
	label string
}

// writeGroupsOf writes Anatomy's sensitive table of the set types each
// calls its function with (type t, its values' labels, first group number
// and groups; in the types' order), a batch at a time: memory does not
// grow with the groups.
func writeGroupsOf(w table.Writer, schema *arrow.Schema, each func(func(t int, labels []string, base, groups int64) error) error) error {
	var st []groupEntry
	flush := func() error {
		rw := table.NewRowWriter(w, schema, 0)
		defer rw.Release()
		for _, e := range st {
			rw.Int64(0, e.group)
			rw.String(1, e.label)
			rw.Int64(2, 1)
			if err := rw.EndRow(); err != nil {
				return err
			}
		}
		st = st[:0]
		return rw.Flush()
	}
	err := each(func(_ int, labels []string, base, groups int64) error {
		for g := range groups {
			for _, l := range labels {
				st = append(st, groupEntry{base + g, l})
			}
			if len(st) >= table.DefaultBatchSize {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// writeST writes Anatomy's sensitive table.
func writeST(w table.Writer, schema *arrow.Schema, st []anonymize.AnatomyEntry, label func(int) string) error {
	rw := table.NewRowWriter(w, schema, 0)
	defer rw.Release()
	for _, e := range st {
		rw.Int64(0, int64(e.Group))
		rw.String(1, label(int(e.Value)))
		rw.Int64(2, int64(e.Count))
		if err := rw.EndRow(); err != nil {
			return err
		}
	}
	return rw.Flush()
}

// runGlobal publishes with mechanism A (§3): every row independently keeps
// its value with probability p, else draws one uniformly from the V values.
// Rows are independent, so they are randomized in parallel chunks
// (pipeline.RunLocal), each row from its own stream (tagGlobal): a seeded
// run gives the same bytes at any core count and batch size. Then they
// are shuffled in bounded memory (package shuffle) unless --keep-order,
// since the input's order may follow the sensitive values. On the 10M-row
// bench table (CSV in and out) this took 2 cores from 6.7–6.8 to 4.7–4.8 s
// and 1 core from 9.9 to 8.0–8.2 s (the rows' other columns pass through
// as the reader's own text instead of being copied cell by cell), and
// publishing the sensitive columns as codes to 4.2–4.3 and 7.2 s.
func (o *Options) runGlobal(in table.Reader, cb *codebook.Codebook) error {
	g, err := o.globalColumns(in, cb)
	if err != nil {
		return err
	}
	keep, names := g.keep, g.names
	meta, err := o.globalMeta(cb, keep)
	if err != nil {
		return err
	}
	// The sensitive columns are published as codes over their codebook's
	// labels (table.Labels), as A′'s are: a varint a cell through the
	// shuffle instead of a string, dictionary pages in Parquet.
	outSchema := table.StringSchema(names)
	fields := outSchema.Fields()
	for j, k := range g.which {
		if k >= 0 {
			g.sens[k].dictionary() // made once, shared by the workers' copies
			fields[j] = table.DictField(names[j])
		}
	}
	outSchema = arrow.NewSchema(fields, nil)
	w, err := o.Streams.Create(o.Output, outSchema, meta, in.Format(), o.inputs(), o.codebookItem...)
	if err != nil {
		return err
	}
	defer w.Abort()
	for k, sv := range g.sens {
		if err := anonymize.CheckKeep(sv.col.K(), keep[k]); err != nil {
			return err
		}
	}
	g.r = o.Seed.Rand(o.cmd)
	// Rows are randomized in parallel chunks (pipeline.RunLocal), each row
	// from its own stream of a key drawn from r; the published rows then
	// go through a shuffle, drawing from r.
	keyed := rng.DrawKeyed(g.r)
	if w, err = o.Order.Writer(w, outSchema, g.r); err != nil {
		return err
	}
	defer w.Abort()
	var missing atomic.Int64
	workers := sync.Pool{New: func() any { return &globalWorker{run: g.worker()} }}
	work := func(c *pipeline.LocalChunk) error {
		gw := workers.Get().(*globalWorker)
		defer workers.Put(gw)
		before := gw.run.missing
		out, err := gw.publish(c.Rec, c.First, in.Name(), keyed, outSchema)
		if err != nil {
			return err
		}
		missing.Add(gw.run.missing - before)
		c.Out = out
		return nil
	}
	opt := pipeline.LocalOptions{ChunkRows: readBatchRows, BatchRows: table.DefaultBatchSize,
		Meter: o.Streams.Progress("anonymize: randomize"), Task: "anonymize"}
	if err := pipeline.RunLocal(in, w, opt, work); err != nil {
		return err
	}
	g.missing = missing.Load()
	if g.missing > 0 {
		fmt.Fprintf(o.Streams.Err, "anonymize: %s: left out %s with a missing sensitive value (--missing drop)\n", o.outName(), rowCount(g.missing))
	}
	if in.RowsRead() == g.missing {
		return fmt.Errorf("%s: every row has a missing sensitive value and --missing drop removed them all: nothing to anonymize", in.Name())
	}
	return w.Commit()
}

// globalMeta is the metadata of a global release with keep probabilities
// keep (one per sensitive column).
func (o *Options) globalMeta(cb *codebook.Codebook, keep []float64) (table.Meta, error) {
	meta, err := o.meta(cb, &release.Anonymized{Mechanism: global})
	if err != nil {
		return nil, err
	}
	// Rows stream through, and the metadata goes first on a pipe, so N is
	// not known in time: global leaves it out (estimate counts the rows;
	// mechanism A needs no N). No row is left out for group sizes.
	// p (p_per_column when different codebook sizes give different p for
	// retention 1/ℓ′) and ℓ′: the items estimate decodes with
	// release.Global.
	md := release.Global{Sensitive: o.Sensitive, P: keep}
	if o.cmd.Flags().Changed("l") {
		md.L = o.L
	}
	if err := md.Encode(meta); err != nil {
		return nil, err
	}
	delete(meta, release.KeyRows)
	return meta, nil
}

// keepProbability is a global release's keep probability p for a column
// of v values: --p, or retention 1/ℓ′ (p + (1 − p)/V = 1/ℓ′) from --l.
func (o *Options) keepProbability(v int) float64 {
	if o.cmd.Flags().Changed("p") {
		return o.P
	}
	return release.KeepForRetention(v, o.L)
}

// globalRun is mechanism A's state over the batches of one input: which
// input columns are sensitive, their encoders and keep probabilities, and
// the buffers reused from batch to batch.
type globalRun struct {
	which   []int // input column j → sensitive column k, or -1
	sens    []*sensitive
	keep    []float64 // keep probability p of each sensitive column
	names   []string
	r       *rand.Rand
	missing int64 // rows left out for a missing sensitive value

	// batchDone, when set, is called by pass after each batch's rows.
	batchDone func(rec arrow.RecordBatch) error
	// codesOut, when set, takes every row's value indexes (pass 1);
	// codesIn, when set, gives them back (pass 2), for batchRows.
	codesOut, codesIn *codeSpool

	// idx[k] holds the value indexes of sensitive column k for the
	// batch's kept rows (keptRows).
	idx, pub [][]uint32
	// kept is keptRows' list, reused from batch to batch (a fresh one
	// was 150 MB of garbage on 10M rows).
	kept     []int
	cells    []table.Values
	sensCols []sensColumn
}

// globalColumns finds the sensitive columns of in and their keep
// probabilities (--p, or retention 1/ℓ′ from --l).
func (o *Options) globalColumns(in table.Reader, cb *codebook.Codebook) (*globalRun, error) {
	schema := in.Schema()
	which := make([]int, schema.NumFields())
	for j := range which {
		which[j] = -1
	}
	sens := make([]*sensitive, len(o.Sensitive))
	keep := make([]float64, len(o.Sensitive))
	names := make([]string, schema.NumFields())
	for j, f := range schema.Fields() {
		names[j] = f.Name
	}
	for k, name := range o.Sensitive {
		j, sv, err := findSensitive(schema, in.Name(), names, name, cb, o.policy())
		if err != nil {
			return nil, err
		}
		which[j], sens[k] = k, sv
		keep[k] = o.keepProbability(sv.col.K())
	}
	return &globalRun{which: which, sens: sens, keep: keep, names: names,
		idx: make([][]uint32, len(sens)), pub: make([][]uint32, len(sens)),
		cells: make([]table.Values, len(names)), sensCols: make([]sensColumn, len(sens))}, nil
}

// tagGlobal tags the rows' streams of mechanism A: row r (its 0-based
// position in the input, rows left out included) draws its published
// values, column after column, from the stream (tagGlobal, r) of the
// run's key, as pramkit-beam's global does.
var tagGlobal = rng.Tag("AGLB")

// globalWorker is one worker's state in runGlobal: a globalRun of its own
// (g.worker: the sensitive columns' scratch and the batch buffers) and
// its row stream.
type globalWorker struct {
	run globalRun
	st  rng.Stream
	r   *rand.Rand
}

// worker returns a copy of g for one worker of a parallel run: the same
// columns and keep probabilities, with scratch of its own.
func (g *globalRun) worker() globalRun {
	sens := make([]*sensitive, len(g.sens))
	for k, sv := range g.sens {
		cp := *sv // its encoder and labels are read-only; buf and dict are scratch
		cp.buf, cp.dict = nil, nil
		sens[k] = &cp
	}
	return globalRun{which: g.which, sens: sens, keep: g.keep, names: g.names,
		idx: make([][]uint32, len(sens)), pub: make([][]uint32, len(sens)),
		cells: make([]table.Values, len(g.names)), sensCols: make([]sensColumn, len(sens))}
}

// publish randomizes one chunk of input rows (first is the row number of
// its first row): each sensitive value kept with probability p, else
// drawn uniformly (anonymize.RandomizeValue), from the row's own stream;
// rows with a value --missing drop removes are left out and counted. It
// returns the published rows under schema: the sensitive columns as codes
// over their labels, the others as text, the input's own arrays when the
// chunk keeps every row.
func (gw *globalWorker) publish(rec arrow.RecordBatch, first int64, file string, keyed *rng.Keyed, schema *arrow.Schema) (arrow.RecordBatch, error) {
	g := &gw.run
	if gw.r == nil {
		gw.r = rand.New(&gw.st)
	}
	for j, k := range g.which {
		if k >= 0 {
			g.sensCols[k] = g.sens[k].column(rec.Column(j))
		} else {
			g.cells[j] = table.ValuesOf(rec.Column(j))
		}
	}
	n := int(rec.NumRows())
	kept, err := g.keptRows(n, first, file)
	if err != nil {
		return nil, err
	}
	for k := range g.pub {
		g.pub[k] = slices.Grow(g.pub[k][:0], len(kept))[:len(kept)]
	}
	row0 := uint64(first - 1)
	for m, i := range kept {
		keyed.Reset(&gw.st, tagGlobal, row0+uint64(i))
		for k, sv := range g.sens {
			g.pub[k][m] = anonymize.RandomizeValue(g.idx[k][m], uint32(sv.col.K()), g.keep[k], gw.r)
		}
	}
	cols := make([]arrow.Array, len(g.which))
	defer func() {
		for _, a := range cols {
			if a != nil {
				a.Release()
			}
		}
	}()
	for j, k := range g.which {
		if k >= 0 {
			// Codes of their own: the batch waits in the writer while
			// g.pub fills with the next chunk's.
			cols[j] = g.sens[k].labels.Column(slices.Clone(g.pub[k]))
			continue
		}
		if a, ok := rec.Column(j).(*array.String); ok && len(kept) == n && a.NullN() == 0 && a.Data().Offset() == 0 {
			a.Retain()
			cols[j] = a
			continue
		}
		b := array.NewStringBuilder(memory.DefaultAllocator)
		b.Reserve(len(kept))
		for _, i := range kept {
			b.Append(g.cells[j].String(i))
		}
		cols[j] = b.NewArray()
		b.Release()
	}
	return array.NewRecordBatch(schema, cols, int64(len(kept))), nil
}

// keptRows lists the batch's rows none of whose sensitive values is
// dropped, and leaves their value indexes in g.idx (one lookup per cell).
// The list is valid until the next call.
func (g *globalRun) keptRows(rows int, first int64, file string) ([]int, error) {
	kept := g.kept[:0]
	defer func() { g.kept = kept }()
	for k := range g.idx {
		g.idx[k] = g.idx[k][:0]
	}
rows:
	for i := range rows {
		for k, c := range g.sensCols {
			x, err := c.index(i, file, first+int64(i))
			if err != nil {
				return nil, err
			}
			if x == dropped {
				g.missing++
				for k2 := range k {
					g.idx[k2] = g.idx[k2][:len(kept)]
				}
				continue rows
			}
			g.idx[k] = append(g.idx[k], uint32(x))
		}
		kept = append(kept, i)
	}
	return kept, nil
}

// closeSpool removes the codes pass 1 spooled for pass 2, if any.
func (g *globalRun) closeSpool() { g.codesIn.close() }

// releaseID is a random 128-bit hex token shared by the two tables of an
// Anatomy publication. It is public, so it comes from crypto/rand even
// with --insecure-seed: drawn from the seeded stream it would let anyone
// confirm a guess of the seed, and then redo the grouping.
func releaseID() string {
	var b [16]byte
	crand.Read(b[:])
	return hex.EncodeToString(b[:])
}
