package countquery

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/progress"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// cellReader maps the cells of one column of one table to classes.
type cellReader struct {
	slot   *slot
	col    int  // column index in the table
	labels bool // cells are codebook labels (a release's sensitive column)
	enc    *codebook.Encoder
	memo   map[string]int32
	imemo  map[int64]int32
	file   string // for messages
	track  bool   // record the slot's seen and known values (release scan)
	// orig says the cells are the original table's values of a
	// sensitive column, read with the release's policy.
	orig bool

	// A dictionary column (Parquet read with table.ReadOptions.DictColumns):
	// the dictionary of the last batch and the class of each of its
	// entries, dictUnset until a cell uses the entry (so that an entry no
	// row holds is neither an error nor a value seen).
	dict      arrow.ArrayData
	dictClass []int32
}

// dictUnset marks a dictionary entry whose class is not looked up yet.
const dictUnset = int32(-1 << 30)

// classes writes the class of every cell of a into out. Text cells are
// looked up in the batch's memory and integer cells by value, so known
// values cost no allocation.
func (c *cellReader) classes(a arrow.Array, first int64, out []int32) error {
	if d, ok := a.(*array.Dictionary); ok {
		if labels, ok := d.Dictionary().(*array.String); ok {
			return c.dictClasses(d, labels, first, out)
		}
	}
	vals := table.ValuesOf(a)
	str, _ := a.(*array.String)
	i64, _ := a.(*array.Int64)
	i32, _ := a.(*array.Int32)
	for i := range a.Len() {
		var err error
		switch {
		case a.IsNull(i):
			out[i], err = c.classOf("", first+int64(i))
		case str != nil:
			out[i], err = c.classOf(str.Value(i), first+int64(i))
		case i64 != nil || i32 != nil:
			var v int64
			if i64 != nil {
				v = i64.Value(i)
			} else {
				v = int64(i32.Value(i))
			}
			cls, ok := c.imemo[v]
			if !ok {
				if cls, err = c.classOf(strconv.FormatInt(v, 10), first+int64(i)); err == nil && len(c.imemo) < memoMax {
					c.imemo[v] = cls
				}
			}
			out[i] = cls
		default:
			out[i], err = c.classOf(vals.String(i), first+int64(i))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// dictClasses is classes for a dictionary column: each entry's label is
// looked up once per dictionary (a Parquet row group's dictionary page
// serves all its batches), and a cell costs an index.
func (c *cellReader) dictClasses(d *array.Dictionary, labels *array.String, first int64, out []int32) error {
	if dd := labels.Data(); dd != c.dict {
		c.dict = dd
		c.dictClass = slices.Grow(c.dictClass[:0], labels.Len())[:labels.Len()]
		for k := range c.dictClass {
			c.dictClass[k] = dictUnset
		}
	}
	for i := range d.Len() {
		if d.IsNull(i) {
			cls, err := c.classOf("", first+int64(i))
			if err != nil {
				return err
			}
			out[i] = cls
			continue
		}
		k := d.GetValueIndex(i)
		cls := c.dictClass[k]
		if cls == dictUnset {
			var err error
			label := ""
			if labels.IsValid(k) {
				label = labels.Value(k)
			}
			if cls, err = c.classOf(label, first+int64(i)); err != nil {
				return err
			}
			c.dictClass[k] = cls
		}
		out[i] = cls
	}
	return nil
}

// classOf is the class of one cell's text.
func (c *cellReader) classOf(s string, row int64) (int32, error) {
	sl := c.slot
	switch {
	case sl.cb == nil:
		if cls, ok := sl.classOfValue[s]; ok {
			if c.track && !sl.seen[cls] {
				sl.seen[cls] = true
				sl.unseen--
			}
			return cls, nil
		}
		// Other values are kept only while a queried value is still
		// missing, and only for the message.
		if c.track && sl.unseen > 0 && !sl.knownMore {
			if _, ok := sl.known[s]; !ok {
				if len(sl.known) == knownMax {
					sl.knownMore = true
				} else {
					sl.known[strings.Clone(s)] = struct{}{}
				}
			}
		}
		return classNone, nil
	case c.labels:
		idx, ok := sl.cb.LabelIndex(s)
		if !ok {
			return 0, &table.DataError{File: c.file, Row: row, Column: sl.col,
				Err: fmt.Errorf("%s is not a category of the release's codebook; the release was edited: publish the original table again with anonymize", table.QuoteCell(s))}
		}
		return sl.classOfCode(idx), nil
	}
	if cls, ok := c.memo[s]; ok {
		return cls, nil
	}
	idx, err := c.enc.Index(s)
	cls := classNone
	switch {
	case errors.Is(err, codebook.ErrDrop) && c.orig:
		cls = classDrop
	case err != nil:
		var how string
		if !c.orig {
			how = " (the --codebook file declares this column)"
		}
		return 0, &table.DataError{File: c.file, Row: row, Column: sl.col, Err: fmt.Errorf("%w%s", err, how)}
	default:
		cls = sl.classOfCode(int(idx))
	}
	if len(c.memo) < memoMax {
		c.memo[strings.Clone(s)] = cls
	}
	return cls, nil
}

// bind prepares the cell readers of every slot for one table. orig says
// it is the original table (--truth), whose sensitive columns hold raw
// values read with the release's policy; skip lists the slots the table
// does not hold (anatomy's sensitive column).
func (p *Plan) bind(in table.Reader, rel *Release, orig bool, skip func(*slot) bool) ([]*cellReader, error) {
	cells := make([]*cellReader, len(p.slots))
	for i, s := range p.slots {
		if skip(s) {
			continue
		}
		idx := in.Schema().FieldIndices(s.col)
		if len(idx) == 0 {
			what := "the release"
			if orig {
				what = "--truth " + in.Name()
			}
			return nil, fmt.Errorf("%s has no column %q, which the queries name; give the original table the release was made from", what, s.col)
		}
		c := &cellReader{slot: s, col: idx[0], file: in.Name(), memo: map[string]int32{}, imemo: map[int64]int32{}}
		switch {
		case s.cb == nil:
			if !orig {
				c.track = true
				s.track()
			}
		case s.sens >= 0 && !orig:
			c.labels = true
		default:
			policy := codebook.Policy{}
			if s.sens >= 0 {
				policy, c.orig = rel.Policy, true
			}
			enc, err := s.cb.Encoder(policy)
			if err != nil {
				return nil, err
			}
			c.enc = enc
		}
		cells[i] = c
	}
	return cells, nil
}

// Columns lists the columns the queries name, which ScanRelease reads
// (a Parquet release may be opened with them as dictionaries).
func (p *Plan) Columns() []string {
	var cols []string
	for _, s := range p.slots {
		if !slices.Contains(cols, s.col) {
			cols = append(cols, s.col)
		}
	}
	return cols
}

// TruthColumns lists the columns ScanTruth reads of the original table:
// the queried ones, and under --missing drop every sensitive column.
func (p *Plan) TruthColumns() []string {
	cols := p.Columns()
	if p.rel.Policy.Missing == codebook.MissingDrop {
		for _, name := range p.rel.Sensitive {
			if !slices.Contains(cols, name) {
				cols = append(cols, name)
			}
		}
	}
	return cols
}

// ScanRelease counts, in one pass over the published table in, the rows
// of every group's predicate by combination of published sensitive values
// (the states' counts y of Figure 3 and Eq. 12–13; for anatomy the
// expected counts Σ_g m_g·c_g(s)/n_g, whose sensitive table
// ReadAnatomyGroups must have read first), and all rows by combination.
// It refuses a table whose row count is not the metadata's N, and a
// queried value that no row holds. Memory: one batch and the groups'
// counts.
func (p *Plan) ScanRelease(in table.Reader, meter *progress.Meter) error {
	if _, err := p.ScanPart(in, "", meter); err != nil {
		return err
	}
	return p.EndScan()
}

// ScanPart adds one part of the release to the counts, as ScanRelease
// does for the whole: its rows, or, when countColumn is not "", the rows
// of a count table — one row per combination of the columns it keeps,
// with their number of release rows in countColumn (a positive integer).
// Every count the estimators read is a sum over rows of an integer (for
// anatomy, of c_g(s) by group size n_g: see anatomySums), so the counts of
// disjoint parts add up to exactly those of the whole, whatever the order.
// It returns the release rows the part holds. EndScan checks the parts'
// total once every part is added.
func (p *Plan) ScanPart(in table.Reader, countColumn string, meter *progress.Meter) (int64, error) {
	rel := p.rel
	if rel.Mechanism == release.MechanismAnatomy && p.anat == nil {
		return 0, fmt.Errorf("countquery: %s is an anatomy release: Plan.ReadAnatomyGroups must read its sensitive table before the scan", rel.Name)
	}
	cells, err := p.bind(in, rel, false, func(s *slot) bool { return rel.Mechanism == release.MechanismAnatomy && s.sens >= 0 })
	if err != nil {
		return 0, err
	}
	groupCol, err := rel.groupColumn(in)
	if err != nil {
		return 0, err
	}
	countCol := -1
	if countColumn != "" {
		idx := in.Schema().FieldIndices(countColumn)
		if len(idx) == 0 {
			return 0, fmt.Errorf("%s is a count table without a %q column; tabulate the release again with estimate --tabulate", in.Name(), countColumn)
		}
		countCol = idx[0]
	}
	if p.anat != nil {
		p.anat.alloc(rel.Groups)
	}
	cls := make([][]int32, len(p.slots))
	var weight []int64
	var rows int64
	err = table.EachBatch(in, func(rec arrow.RecordBatch, first int64) error {
		n := int(rec.NumRows())
		if countCol >= 0 {
			var err error
			if weight, err = readCounts(rec.Column(countCol), in.Name(), countColumn, first, rows, weight); err != nil {
				return err
			}
		}
		if err := classify(cells, rec, first, cls); err != nil {
			return err
		}
		for row := range n {
			w := int64(1)
			if countCol >= 0 {
				w = weight[row]
			}
			rows += w
			if groupCol >= 0 {
				continue
			}
			for _, h := range p.hists {
				h.counts[h.tuple(cls, row)] += w
			}
			p.each(cls, row, func(g *group) {
				g.nP += w
				g.counts[g.tuple(cls, row)] += w
			})
		}
		if groupCol >= 0 {
			if err := p.addAnatomyRows(rec.Column(groupCol), in.Name(), first, cls, weight[:min(len(weight), n)], countCol >= 0); err != nil {
				return err
			}
		}
		meter.Add(int64(n))
		return nil
	})
	meter.Done()
	if err != nil {
		return 0, err
	}
	if rows > math.MaxInt64-p.rows {
		return 0, fmt.Errorf("%s: the parts' counts add up to more than %d rows: a count table was edited; tabulate the release again with estimate --tabulate", in.Name(), int64(math.MaxInt64))
	}
	p.rows += rows
	return rows, nil
}

// readCounts parses a count table's count column (one batch, first its
// first row) into w: positive integers whose sum with done (the rows
// counted so far in the file) stays within int64.
func readCounts(a arrow.Array, file, column string, first, done int64, w []int64) ([]int64, error) {
	vals := table.ValuesOf(a)
	n := a.Len()
	w = slices.Grow(w[:0], n)[:n]
	for i := range n {
		v, ok := vals.Int(i)
		if !ok || v < 1 {
			return nil, &table.DataError{File: file, Row: first + int64(i), Column: column,
				Err: fmt.Errorf("count %s is not a positive integer: the count table was edited; tabulate the release again with estimate --tabulate", table.QuoteCell(vals.String(i)))}
		}
		if v > math.MaxInt64-done {
			return nil, &table.DataError{File: file, Row: first + int64(i), Column: column,
				Err: fmt.Errorf("the counts add up to more than %d rows: the count table was edited; tabulate the release again with estimate --tabulate", int64(math.MaxInt64))}
		}
		done += v
		w[i] = v
	}
	return w, nil
}

// EndScan checks the rows that ScanPart added: some, and N of them when
// the metadata records N; and that every queried value is in some row of
// the release. Anatomy's estimates are then read from the integer sums.
func (p *Plan) EndScan() error {
	rel := p.rel
	if err := rel.checkRows(p.rows); err != nil {
		return err
	}
	for _, s := range p.slots {
		if err := s.missing(p.queries, p.file, rel.Name); err != nil {
			return err
		}
	}
	if p.anat != nil {
		return p.endAnatomy()
	}
	return nil
}

// groupColumn is the index of an anatomy release's group id column in
// in, -1 for other mechanisms.
func (rel *Release) groupColumn(in table.Reader) (int, error) {
	if rel.Mechanism != release.MechanismAnatomy {
		return -1, nil
	}
	idx := in.Schema().FieldIndices(rel.GroupColumn)
	if len(idx) == 0 {
		return 0, fmt.Errorf("%s has no group id column %q: tabulate the anatomy release again with estimate --tabulate", in.Name(), rel.GroupColumn)
	}
	return idx[0], nil
}

// groupID reads the group id of row row of an anatomy release's batch
// (first its first row), refusing one outside 0 … Groups−1.
func (rel *Release) groupID(vals table.Values, row int, file string, first int64) (int64, error) {
	gid, ok := vals.Int(row)
	if !ok || gid < 0 || gid >= int64(rel.Groups) {
		return 0, &table.DataError{File: file, Row: first + int64(row), Column: rel.GroupColumn,
			Err: fmt.Errorf("%s is not a group id of this release (0 to %d); the release was edited: publish the original table again with anonymize", table.QuoteCell(vals.String(row)), rel.Groups-1)}
	}
	return gid, nil
}

// checkRows refuses a scan of no rows, or of another number than the
// metadata's N.
func (rel *Release) checkRows(rows int64) error {
	if rows == 0 {
		return fmt.Errorf("%s has no data rows: nothing to estimate", rel.Name)
	}
	if rel.Rows > 0 && rows != rel.Rows {
		return fmt.Errorf("%s has %d rows but its metadata says N = %d; the release was edited: publish the original table again with anonymize", rel.Name, rows, rel.Rows)
	}
	return nil
}

// ScanTruth counts, in one pass over in, the original table the release
// was made from (--truth), the rows of every query: the true counts that
// Answer.Truth reports. Sensitive columns hold raw values, read with the
// release's Policy; rows anonymize left out (--missing drop) are skipped.
func (p *Plan) ScanTruth(in table.Reader, meter *progress.Meter) error {
	rel := p.rel
	cells, err := p.bind(in, rel, true, func(*slot) bool { return false })
	if err != nil {
		return err
	}
	// anonymize --missing drop left out the rows with a missing value in
	// any sensitive column, also in those no query names: read them too.
	var dropOnly []*cellReader
	if rel.Policy.Missing == codebook.MissingDrop {
		for k, name := range rel.Sensitive {
			if slices.ContainsFunc(p.slots, func(s *slot) bool { return s.col == name }) {
				continue
			}
			extra := &Plan{slots: []*slot{newSlot(name, k, rel.Columns[k])}}
			c, err := extra.bind(in, rel, true, func(*slot) bool { return false })
			if err != nil {
				return err
			}
			dropOnly = append(dropOnly, c[0])
		}
	}
	for _, g := range p.groups {
		g.truthP = make([]int64, g.size)
	}
	cls := make([][]int32, len(p.slots))
	dropCls := make([][]int32, len(dropOnly))
	err = table.EachBatch(in, func(rec arrow.RecordBatch, first int64) error {
		n := int(rec.NumRows())
		if err := classify(cells, rec, first, cls); err != nil {
			return err
		}
		if err := classify(dropOnly, rec, first, dropCls); err != nil {
			return err
		}
	rows:
		for row := range n {
			for i, s := range p.slots {
				if s.sens >= 0 && cls[i][row] == classDrop {
					continue rows // left out by anonymize --missing drop
				}
			}
			for i := range dropOnly {
				if dropCls[i][row] == classDrop {
					continue rows
				}
			}
			p.each(cls, row, func(g *group) {
				g.truthNP++
				g.truthP[g.tuple(cls, row)]++
			})
		}
		meter.Add(int64(n))
		return nil
	})
	meter.Done()
	if err != nil {
		return err
	}
	if in.RowsRead() == 0 {
		return fmt.Errorf("--truth %s has no data rows", in.Name())
	}
	return nil
}

// classify fills cls[i] with the classes of one batch's cells of cells[i]
// (for a nil entry cls[i] is only resized: its column is not read).
func classify(cells []*cellReader, rec arrow.RecordBatch, first int64, cls [][]int32) error {
	n := int(rec.NumRows())
	for i, c := range cells {
		cls[i] = slices.Grow(cls[i][:0], n)[:n]
		if c == nil {
			continue
		}
		if err := c.classes(rec.Column(c.col), first, cls[i]); err != nil {
			return err
		}
	}
	return nil
}

// checkAnatomy refuses a Release that is not a well-formed anatomy one.
func (rel *Release) checkAnatomy() error {
	if err := rel.check(); err != nil {
		return err
	}
	if rel.Mechanism != release.MechanismAnatomy {
		return fmt.Errorf("countquery: %s is a %s release, not an anatomy one", rel.Name, rel.Mechanism)
	}
	return nil
}

// AnatomyGroupsColumns are the columns of Anatomy's sensitive table that
// Values.ScanAnatomyGroups reads in a pass: the group id and the count,
// and with labels the sensitive column too.
func AnatomyGroupsColumns(rel *Release, labels bool) []string {
	if labels {
		return []string{rel.GroupColumn, rel.Sensitive[0], "count"}
	}
	return []string{rel.GroupColumn, "count"}
}

// eachAnatomyEntry calls f with each row of Anatomy's sensitive table in:
// its group id, the codebook index of its value (when labels; else -1,
// and the column is not read) and its count c_g(s), refusing an unknown
// group id or label and a count outside 1 … 2^32 − 1.
func eachAnatomyEntry(in table.Reader, rel *Release, labels bool, f func(gid int64, val int, cnt int64)) error {
	cols := AnatomyGroupsColumns(rel, labels)
	idx := make([]int, len(cols))
	for i, name := range cols {
		f := in.Schema().FieldIndices(name)
		if len(f) == 0 {
			return fmt.Errorf("%s has no column %q; the file was edited: publish the original table again with anonymize", in.Name(), name)
		}
		idx[i] = f[0]
	}
	col := rel.Sensitive[0]
	for {
		rec, err := in.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		g, c := table.ValuesOf(rec.Column(idx[0])), table.ValuesOf(rec.Column(idx[len(idx)-1]))
		var v table.Values
		if labels {
			v = table.ValuesOf(rec.Column(idx[1]))
		}
		first := in.RowsRead() - rec.NumRows() + 1
		for i := range int(rec.NumRows()) {
			edited := func(column, what string) error {
				return &table.DataError{File: in.Name(), Row: first + int64(i), Column: column,
					Err: fmt.Errorf("%s; the file was edited: publish the original table again with anonymize", what)}
			}
			gid, ok := g.Int(i)
			if !ok || gid < 0 || gid >= int64(rel.Groups) {
				return edited(rel.GroupColumn, fmt.Sprintf("%s is not a group id (0 to %d)", table.QuoteCell(g.String(i)), rel.Groups-1))
			}
			val := -1
			if labels {
				if val, ok = rel.Columns[0].LabelIndex(v.String(i)); !ok { // the codebook's compact index, not a map of 1M labels (~50 MB)
					return edited(col, fmt.Sprintf("%s is not a category of %s", table.QuoteCell(v.String(i)), col))
				}
			}
			cnt, ok := c.Int(i)
			switch {
			case !ok || cnt < 1:
				return edited("count", fmt.Sprintf("%s is not a count ≥ 1", table.QuoteCell(c.String(i))))
			case cnt > math.MaxUint32: // Plan holds counts as uint32
				return edited("count", fmt.Sprintf("%s is over %d, more rows than a group of a release holds", table.QuoteCell(c.String(i)), uint32(math.MaxUint32)))
			}
			f(gid, val, cnt)
		}
	}
}

// groupSizes returns the distinct group sizes n_g = per[g] in increasing
// order and the index of each group's among them, refusing a group of no
// entry.
func groupSizes(per []int64, file string) (sizes []int64, sizeOf sizeIndex, err error) {
	for g, n := range per {
		if n == 0 {
			return nil, sizeIndex{}, fmt.Errorf("%s: group %d has no entry; the file was edited: publish the original table again with anonymize", file, g)
		}
		if !slices.Contains(sizes, n) {
			sizes = append(sizes, n)
		}
	}
	slices.Sort(sizes)
	if len(sizes) <= math.MaxUint8+1 {
		sizeOf.small = make([]uint8, len(per))
	} else {
		sizeOf.large = make([]int32, len(per))
	}
	for g, n := range per {
		k, _ := slices.BinarySearch(sizes, n)
		if sizeOf.small != nil {
			sizeOf.small[g] = uint8(k)
		} else {
			sizeOf.large[g] = int32(k)
		}
	}
	return sizes, sizeOf, nil
}

// sizeIndex holds, for each group, the index of its size among the
// distinct sizes (groupSizes): a byte a group when there are at most 256
// sizes — Anatomy's groups hold ℓ′ or a few more rows, so a release has a
// few sizes — else 4. At 2M values (0.8M groups) a byte a group is 2.4 MB
// less at report's and estimate --query's peak.
type sizeIndex struct {
	small []uint8
	large []int32
}

// at is group g's size index.
func (x sizeIndex) at(g int64) int {
	if x.small != nil {
		return int(x.small[g])
	}
	return int(x.large[g])
}
