package estimate

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/countquery"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// An anonymize release (A′, Anatomy's row table, global) can be queried
// from parts too. Every count the count-query estimators read is a number
// of rows by their values in the columns the queries name (the states'
// counts y of Figure 3 and Eq. 12–13, the P rows nP, and for Anatomy the
// P rows of each group, m_g): these add up over disjoint parts of the
// rows. The count table of such a release (estimate --tabulate --columns
// C,…) therefore keeps the rows' counts by their joint value in the named
// columns plus those the estimators always read — the sensitive columns
// of A′ and global releases, Anatomy's group id — and answers every query
// on those columns exactly as the rows do (an id column left out makes the
// table small: one row per observed combination). A query that names
// another column is refused, naming the column. The parts (row files cut
// from the release, and count tables) must carry the release's metadata
// (release.AnonymizePartKeys) and their rows must add up to its N: more
// means a part given twice or overlapping parts, fewer a missing part
// (allowed with --tabulate, whose count tables are merged later).

// countInputs names the inputs for messages, joined by " + ".
func countInputs(names []string) string { return strings.Join(names, " + ") }

// eachCountPart calls fn with the first input (in, open) and then every
// other input, opened, after checking that it is not given twice and that
// it is a part of in's release (rel, whose codebook text may be gone from
// in's metadata: dropCodebookText).
func (o *Options) eachCountPart(in table.Reader, rel *countRelease, fn func(part table.Reader) error) error {
	if err := fn(in); err != nil {
		return err
	}
	for i, path := range o.Inputs[min(1, len(o.Inputs)):] {
		if j := slices.IndexFunc(o.Inputs[:i+1], func(q string) bool { return pramSameFile(q, path) }); j >= 0 {
			return cli.Usagef("%s is given twice (arguments %d and %d): give each part of the release once", path, j+1, i+2)
		}
		err := func() error {
			part, err := o.Streams.Open(path)
			if err != nil {
				return err
			}
			defer part.Close()
			if cli.CarryInsecureSeed(o.Streams, "estimate", part.Name(), part.Meta(), nil) {
				o.insecure = true
			}
			for _, key := range release.AnonymizePartKeys {
				a, okA := in.Meta()[key]
				b, okB := part.Meta()[key]
				if key == release.KeyCodebook && rel.codebookSum != "" {
					a, okA = rel.codebookSum, true
					if okB {
						b = release.CodebookDigest(b)
					}
				}
				if a != b || okA != okB {
					return fmt.Errorf("%s and %s are not parts of the same release: their metadata item %q differs (%s vs %s); estimate each release on its own", in.Name(), part.Name(), key, pramShort(a, okA), pramShort(b, okB))
				}
			}
			if rel.codebookSum != "" {
				delete(part.Meta(), release.KeyCodebook) // the same as the release's
			}
			return fn(part)
		}()
		if err != nil {
			return err
		}
	}
	return nil
}

// checkCountTotal checks the parts' rows (names[i] holds rows[i]) against
// the release's N: more is refused, fewer too unless partial (--tabulate).
func checkCountTotal(rel *countRelease, names []string, rows []int64, partial bool) error {
	if rel.Rows <= 0 {
		return nil // a global release without N: nothing to check
	}
	var total int64
	var list []string
	for i, n := range rows {
		total += n // each part's rows are at most N, checked as they add up
		list = append(list, fmt.Sprintf("%s (%d)", names[i], n))
		if total > rel.Rows {
			break
		}
	}
	switch {
	case total > rel.Rows:
		return fmt.Errorf("the parts have more rows than the release: %s ≥ %d rows, but the release has N = %d; a part was given twice, or the parts overlap: give each disjoint part once", strings.Join(list, " + "), total, rel.Rows)
	case total < rel.Rows && !partial:
		return fmt.Errorf("the parts have fewer rows than the release: %s = %d rows, but the release has N = %d; a part is missing: give every part of the release", strings.Join(list, " + "), total, rel.Rows)
	}
	return nil
}

// countTableColumns are a count table's columns, its count column left
// out.
func countTableColumns(in table.Reader) []string {
	var cols []string
	for _, f := range in.Schema().Fields() {
		if f.Name != release.CountColumn {
			cols = append(cols, f.Name)
		}
	}
	return cols
}

// checkCountTableQueries refuses a count table that lacks a column the
// queries name (file is the --queries file, for messages).
func checkCountTableQueries(in table.Reader, rel *countRelease, queries []countquery.Query, file string) error {
	if !release.IsCountTable(in.Meta()) {
		return nil
	}
	cols := countTableColumns(in)
	for i := range queries {
		for _, c := range queries[i].Conds {
			if slices.Contains(cols, c.Col) || (rel.Mechanism == release.MechanismAnatomy && slices.Contains(rel.Sensitive, c.Col)) {
				continue
			}
			if rel.Mechanism == release.MechanismAnatomy && c.Col == rel.GroupColumn {
				continue // NewPlan's message: the group id is no attribute
			}
			keep := slices.DeleteFunc(slices.Clone(cols), func(s string) bool {
				return slices.Contains(rel.Sensitive, s) || s == rel.GroupColumn
			})
			return fmt.Errorf("%s: %s is a count table of the columns %s, without %q; tabulate the release again with --columns %s", queries[i].Where(file), in.Name(), strings.Join(cols, ", "), c.Col, strings.Join(append(keep, c.Col), ","))
		}
	}
	return nil
}

// scanCountParts adds every input to the plan's counts (rows, or a count
// table's counted rows), checks the parts' total against N and ends the
// scan: the counts are those of one pass over all the release's rows.
func (o *Options) scanCountParts(in table.Reader, rel *countRelease, plan *countquery.Plan, queries []countquery.Query, file string) error {
	var names []string
	var rows []int64
	counted := false
	err := o.eachCountPart(in, rel, func(part table.Reader) error {
		if err := checkCountTableQueries(part, rel, queries, file); err != nil {
			return err
		}
		countCol := ""
		if release.IsCountTable(part.Meta()) {
			countCol, counted = release.CountColumn, true
		}
		r := part
		read := plan.Columns()
		if rel.Mechanism == release.MechanismAnatomy {
			read = append(read, rel.GroupColumn)
		}
		if countCol != "" {
			read = append(read, countCol)
		}
		if d, err := reopenQueriedAsDictionaries(o, part, plan.Columns(), read, rel.codebookSum); err != nil {
			return err
		} else if d != nil {
			defer d.Close()
			r = d
		}
		n, err := plan.ScanPart(r, countCol, o.Streams.Progress("estimate: read"))
		if err != nil {
			return err
		}
		names, rows = append(names, part.Name()), append(rows, n)
		return nil
	})
	if err != nil {
		return err
	}
	if len(names) > 1 || counted {
		if err := checkCountTotal(rel, names, rows, false); err != nil {
			return err
		}
		rel.Name = countInputs(names)
	}
	return plan.EndScan()
}

// checkCountTabulate refuses, with --tabulate, the flags of count queries,
// and --columns without it.
func (o *Options) checkCountTabulate() error {
	if !o.Tabulate {
		if o.cmd.Flags().Changed("columns") {
			return cli.Usagef("--columns names the columns of a count table of an anonymize release: give it with --tabulate (count queries read the columns they name)")
		}
		return nil
	}
	return o.checkLocalTabulate("json", "truth", "query", "queries", "decoy", "ibu-stop", "ibu-tol", "ibu-max-iter", "groups", "codebook")
}

// countTally counts rows by their joint value in some columns, each value
// numbered in order of appearance: O(observed combinations) memory.
type countTally struct {
	cols   []string
	group  int // index in cols of Anatomy's group id column, -1 if none
	groups int64
	codes  []map[string]uint32
	labels [][]string
	// dict caches, per column, the codes of the entries of the last
	// dictionary read (Parquet dictionary pages), -1 until looked up.
	dict     []arrow.ArrayData
	dictCode [][]int64
	index    map[string]int32 // packed codes → entry
	keys     []string
	counts   []int64
	total    int64
	buf      []byte
	cell     [][]uint32
}

func newCountTally(cols []string, rel *countRelease) *countTally {
	t := &countTally{cols: cols, group: -1, index: map[string]int32{},
		codes: make([]map[string]uint32, len(cols)), labels: make([][]string, len(cols)),
		dict: make([]arrow.ArrayData, len(cols)), dictCode: make([][]int64, len(cols)), cell: make([][]uint32, len(cols))}
	for j, c := range cols {
		t.codes[j] = map[string]uint32{}
		if rel.Mechanism == release.MechanismAnatomy && c == rel.GroupColumn {
			t.group, t.groups = j, int64(rel.Groups)
		}
	}
	return t
}

// code numbers one cell's text in column j; Anatomy's group ids must be
// group ids of the release.
func (t *countTally) code(j int, s string, file string, row int64) (uint32, error) {
	if c, ok := t.codes[j][s]; ok {
		return c, nil
	}
	if j == t.group {
		if g, err := strconv.ParseInt(s, 10, 64); err != nil || g < 0 || g >= t.groups {
			return 0, &table.DataError{File: file, Row: row, Column: t.cols[j],
				Err: fmt.Errorf("%s is not a group id of this release (0 to %d); the release was edited: publish the original table again with anonymize", table.QuoteCell(s), t.groups-1)}
		}
	}
	c := uint32(len(t.labels[j]))
	s = strings.Clone(s)
	t.codes[j][s] = c
	t.labels[j] = append(t.labels[j], s)
	return c, nil
}

// cells numbers the cells of one batch's column j into t.cell[j].
func (t *countTally) cells(j int, a arrow.Array, file string, first int64) error {
	n := a.Len()
	out := slices.Grow(t.cell[j][:0], n)[:n]
	t.cell[j] = out
	if d, ok := a.(*array.Dictionary); ok {
		if labels, ok := d.Dictionary().(*array.String); ok {
			if dd := labels.Data(); dd != t.dict[j] {
				t.dict[j] = dd
				t.dictCode[j] = slices.Repeat([]int64{-1}, labels.Len())
			}
			for i := range n {
				if d.IsNull(i) {
					c, err := t.code(j, "", file, first+int64(i))
					if err != nil {
						return err
					}
					out[i] = c
					continue
				}
				k := d.GetValueIndex(i)
				if t.dictCode[j][k] < 0 {
					c, err := t.code(j, table.ValuesOf(labels).String(k), file, first+int64(i))
					if err != nil {
						return err
					}
					t.dictCode[j][k] = int64(c)
				}
				out[i] = uint32(t.dictCode[j][k])
			}
			return nil
		}
	}
	vals := table.ValuesOf(a)
	for i := range n {
		c, err := t.code(j, vals.String(i), file, first+int64(i))
		if err != nil {
			return err
		}
		out[i] = c
	}
	return nil
}

// add counts the rows of one input — a row file, or a count table whose
// rows weigh their count — and returns how many release rows it holds.
// Memory: one batch and the tally.
func (t *countTally) add(in table.Reader) (int64, error) {
	counted := release.IsCountTable(in.Meta())
	names := t.cols
	if counted {
		names = append(slices.Clone(t.cols), release.CountColumn)
	}
	missing := func(name string) error {
		switch {
		case name == release.CountColumn:
			return fmt.Errorf("%s is a count table without a %q column; tabulate the release again with estimate --tabulate", in.Name(), name)
		case counted:
			return fmt.Errorf("%s is a count table of the columns %s, without %q; tabulate its rows again with --columns %s", in.Name(), strings.Join(countTableColumns(in), ", "), name, strings.Join(t.cols, ","))
		}
		return fmt.Errorf("%s has no column %q (columns: %s); name the release's columns with --columns", in.Name(), name, strings.Join(countTableColumns(in), ", "))
	}
	var rows int64
	var weight []int64
	err := scanColumns(in, names, missing, nil, func(rec arrow.RecordBatch, cols []int, first int64) error {
		n := int(rec.NumRows())
		if counted {
			var err error
			if weight, err = countWeights(rec.Column(cols[len(t.cols)]), in.Name(), first, weight); err != nil {
				return err
			}
		}
		for j := range t.cols {
			if err := t.cells(j, rec.Column(cols[j]), in.Name(), first); err != nil {
				return err
			}
		}
		for i := range n {
			w := int64(1)
			if counted {
				w = weight[i]
			}
			if w > math.MaxInt64-t.total {
				return &table.DataError{File: in.Name(), Row: first + int64(i), Column: release.CountColumn,
					Err: fmt.Errorf("the counts add up to more than %d rows: a count table was edited; tabulate the release again with estimate --tabulate", int64(math.MaxInt64))}
			}
			t.buf = t.buf[:0]
			for j := range t.cols {
				t.buf = binaryAppendUvarint(t.buf, t.cell[j][i])
			}
			e, ok := t.index[string(t.buf)]
			if !ok {
				e = int32(len(t.keys))
				key := string(t.buf)
				t.index[key] = e
				t.keys = append(t.keys, key)
				t.counts = append(t.counts, 0)
			}
			t.counts[e] += w
			t.total += w
			rows += w
		}
		return nil
	})
	return rows, err
}

// binaryAppendUvarint appends x as a varint (a packed key's part).
func binaryAppendUvarint(b []byte, x uint32) []byte {
	for x >= 0x80 {
		b = append(b, byte(x)|0x80)
		x >>= 7
	}
	return append(b, byte(x))
}

// countWeights parses one batch of a count table's count column (first:
// its first row) into w: positive integers.
func countWeights(a arrow.Array, file string, first int64, w []int64) ([]int64, error) {
	vals := table.ValuesOf(a)
	n := a.Len()
	w = slices.Grow(w[:0], n)[:n]
	for i := range n {
		v, ok := vals.Int(i)
		if !ok || v < 1 {
			return nil, &table.DataError{File: file, Row: first + int64(i), Column: release.CountColumn,
				Err: fmt.Errorf("count %s is not a positive integer: the count table was edited; tabulate the release again with estimate --tabulate", table.QuoteCell(vals.String(i)))}
		}
		w[i] = v
	}
	return w, nil
}

// decode unpacks entry e's codes into x.
func (t *countTally) decode(e int, x []uint32) {
	key := t.keys[e]
	p := 0
	for j := range x {
		var v uint32
		for s := 0; ; s += 7 {
			b := key[p]
			p++
			v |= uint32(b&0x7f) << s
			if b < 0x80 {
				break
			}
		}
		x[j] = v
	}
}

// tabulateCounts is --tabulate on an anonymize release: the counts of the
// rows of every input (rel's, open as in, first) by their joint value in
// the columns of --columns (by default those of the first input, when it
// is a count table) plus the sensitive columns (A′, global) or the group
// id (Anatomy), written as a count table in increasing order of values.
func (o *Options) tabulateCounts(in table.Reader, rel *countRelease) error {
	cols := slices.Clone(o.Columns)
	switch {
	case len(cols) == 0 && release.IsCountTable(in.Meta()):
		cols = countTableColumns(in)
	case len(cols) == 0:
		return cli.Usagef("%s is a release of anonymize (mechanism %s): name the columns the count table keeps, those your queries will use, with --columns C1,C2,… (its sensitive columns%s are kept anyway)", rel.Name, rel.Mechanism, map[bool]string{true: " are in the groups table; its group id", false: ""}[rel.Mechanism == release.MechanismAnatomy])
	}
	for i, c := range cols {
		switch {
		case c == release.CountColumn:
			return cli.Usagef("--columns: %q is the name of the count table's count column; rename the release's column before tabulating", c)
		case rel.Mechanism == release.MechanismAnatomy && slices.Contains(rel.Sensitive, c):
			return cli.Usagef("--columns: %q is in the anatomy release's groups table, not in its rows; drop it: the count table keeps the group id %q instead, from which queries on %s are answered", c, rel.GroupColumn, c)
		case slices.Index(cols, c) != i:
			return cli.Usagef("--columns names %q twice", c)
		}
	}
	must := rel.Sensitive
	if rel.Mechanism == release.MechanismAnatomy {
		must = []string{rel.GroupColumn}
	}
	for _, c := range must {
		if !slices.Contains(cols, c) {
			cols = append(cols, c)
		}
	}
	t := newCountTally(cols, rel)
	var names []string
	var rows []int64
	meter := o.Streams.Progress("estimate: read")
	err := o.eachCountPart(in, rel, func(part table.Reader) error {
		r := part
		if d, err := reopenQueriedAsDictionaries(o, part, cols, nil, rel.codebookSum); err != nil {
			return err
		} else if d != nil {
			defer d.Close()
			r = d
		}
		n, err := t.add(r)
		names, rows = append(names, part.Name()), append(rows, n)
		meter.Add(n)
		return err
	})
	meter.Done()
	if err != nil {
		return err
	}
	if err := checkCountTotal(rel, names, rows, true); err != nil {
		return err
	}
	if t.total == 0 {
		return errNoReports(countInputs(names))
	}
	return o.writeCountTable(in.Meta(), t)
}

// writeCountTable writes the tally, entries in increasing order of their
// values (the group id as a number), with the release's metadata meta.
func (o *Options) writeCountTable(meta table.Meta, t *countTally) error {
	fields := make([]arrow.Field, len(t.cols)+1)
	for j, c := range t.cols {
		fields[j] = arrow.Field{Name: c, Type: arrow.BinaryTypes.String}
		if j == t.group {
			fields[j].Type = arrow.PrimitiveTypes.Int64
		}
	}
	fields[len(t.cols)] = arrow.Field{Name: release.CountColumn, Type: arrow.PrimitiveTypes.Int64}
	schema := arrow.NewSchema(fields, nil)
	// Sort the entries by their values: each column's labels are ranked
	// once, so that the order is the same whatever order the rows came in.
	rank := make([][]uint32, len(t.cols))
	for j, ls := range t.labels {
		order := make([]int, len(ls))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int {
			if j == t.group {
				x, _ := strconv.ParseInt(ls[a], 10, 64)
				y, _ := strconv.ParseInt(ls[b], 10, 64)
				return cmp.Compare(x, y)
			}
			return strings.Compare(ls[a], ls[b])
		})
		rank[j] = make([]uint32, len(ls))
		for r, i := range order {
			rank[j][i] = uint32(r)
		}
	}
	d := len(t.cols)
	codes := make([]uint32, len(t.keys)*d)
	for e := range t.keys {
		t.decode(e, codes[e*d:(e+1)*d])
	}
	entries := make([]int, len(t.keys))
	for e := range entries {
		entries[e] = e
	}
	slices.SortFunc(entries, func(a, b int) int {
		for j := range d {
			if c := cmp.Compare(rank[j][codes[a*d+j]], rank[j][codes[b*d+j]]); c != 0 {
				return c
			}
		}
		return 0
	})
	w, err := o.createCountTable(schema, maps.Clone(meta))
	if err != nil {
		return err
	}
	defer w.Abort()
	rw := table.NewRowWriter(w, schema, 0)
	defer rw.Release()
	for _, e := range entries {
		for j := range d {
			label := t.labels[j][codes[e*d+j]]
			if j == t.group {
				g, _ := strconv.ParseInt(label, 10, 64)
				rw.Int64(j, g)
			} else {
				rw.String(j, label)
			}
		}
		rw.Int64(d, t.counts[e])
		if err := rw.EndRow(); err != nil {
			return err
		}
	}
	if err := rw.Flush(); err != nil {
		return err
	}
	return w.Commit()
}
