package estimate

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/cli"
	"github.com/pramkit/pramkit/pkg/estimate"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/table"
)

// A γ-diagonal release can be estimated from parts: every estimator reads
// the release only through its counts T(g)·m (Lin–Wang–Rane §III-A), and
// the counts of disjoint parts of the m rows add up to the counts of the
// whole. So estimate takes several files — row files (decrypt's output, or
// pieces of it) and count tables (estimate --tabulate) — checks that they
// are parts of one release and that their rows add up to m, and estimates
// from the summed counts: exactly what one run over all rows gives.

// pramTally accumulates the counts of one release's joint values: a plain
// array up to pramDenseCounts values, else a map (O(observed values)),
// which a spillable tally spills to runs on disk every pramSpillAt values
// (see pram_runs.go), so that its memory is bounded whatever the number
// of observed values.
type pramTally struct {
	K         uint64
	dense     []int64
	sparse    map[uint64]int64
	total     int64
	spillable bool      // the counts are only walked (cells), never held whole (counts)
	runs      *pramRuns // nil until the first spill
	keys      []uint64  // the map's sorted keys, once cells has walked it
}

func newPRAMTally(K uint64, spillable bool) *pramTally {
	if K <= pramDenseCounts {
		return &pramTally{K: K, dense: make([]int64, K)}
	}
	return &pramTally{K: K, sparse: make(map[uint64]int64), spillable: spillable}
}

// add counts n more rows with joint value g; false if the total would
// overflow int64. The caller spills (maybeSpill) between batches.
func (t *pramTally) add(g uint64, n int64) bool {
	if n > math.MaxInt64-t.total {
		return false
	}
	t.total += n
	if t.dense != nil {
		t.dense[g] += n
	} else {
		t.sparse[g] += n
	}
	return true
}

// maybeSpill spills a spillable tally's map once it holds pramSpillAt
// values.
func (t *pramTally) maybeSpill() error {
	if !t.spillable || len(t.sparse) < pramSpillAt {
		return nil
	}
	if t.runs == nil {
		t.runs = &pramRuns{}
	}
	return t.runs.spill(t.sparse)
}

// finish ends the counting: a tally that has spilled spills the rest of
// its map too, so that cells merges runs only.
func (t *pramTally) finish() error {
	if t.runs == nil || len(t.sparse) == 0 {
		return nil
	}
	return t.runs.spill(t.sparse)
}

// close removes the tally's runs, if any.
func (t *pramTally) close() {
	if t.runs != nil {
		t.runs.close()
	}
}

// counts returns the whole tally in memory (not for a spilled one).
func (t *pramTally) counts() (estimate.Counts, error) {
	if t.runs != nil {
		return estimate.Counts{}, fmt.Errorf("internal error: the counts were spilled to disk")
	}
	if t.dense != nil {
		return estimate.CountsFromDense(t.dense)
	}
	for g, n := range t.sparse {
		if n == 0 {
			delete(t.sparse, g) // a count table's explicit zero
		}
	}
	return pramCountsFromMap(t.K, t.sparse), nil
}

// pramPart is one input file and the rows it holds.
type pramPart struct {
	name string
	rows int64
	meta table.Meta
}

// countPRAMParts counts the rows of every input (rel is the first's, already
// open as in) after checking that each is a part of rel's release, and
// checks that the parts' rows add up to the release's m (unless
// --tabulate, which may tabulate some of the parts).
func (o *Options) countPRAMParts(rel *pramRelease, in table.Reader, t *pramTally) error {
	rows, err := rel.count(o, in, t)
	if err != nil {
		return err
	}
	parts := []pramPart{{rel.name, rows, rel.meta}}
	var more []string // the other parts (none when reading standard input)
	if len(o.Inputs) > 1 {
		more = o.Inputs[1:]
	}
	for i, path := range more {
		if j := slices.IndexFunc(o.Inputs[:i+1], func(p string) bool { return pramSameFile(p, path) }); j >= 0 {
			return cli.Usagef("%s is given twice (arguments %d and %d): give each part of the release once", path, j+1, i+2)
		}
		n, name, meta, err := o.countPRAMPart(rel, path, t)
		if err != nil {
			return err
		}
		parts = append(parts, pramPart{name, n, meta})
	}
	if err := rel.checkPartRanges(o, parts); err != nil {
		return err
	}
	if len(parts) > 1 || o.Tabulate {
		// (One file without --tabulate: account checks its rows are m.)
		if err := rel.checkPartTotals(o, parts, t.total); err != nil {
			return err
		}
	}
	if len(parts) > 1 {
		names := make([]string, len(parts))
		for i, p := range parts {
			names[i] = p.name
		}
		rel.name = strings.Join(names, " + ")
	}
	if t.total == 0 {
		return fmt.Errorf("%s: %w", rel.name, errPRAMNoRows)
	}
	return t.finish()
}

// countPRAMPart opens one more input, checks it is a part of rel's release
// and adds its counts to t.
func (o *Options) countPRAMPart(rel *pramRelease, path string, t *pramTally) (int64, string, table.Meta, error) {
	in, err := o.Streams.Open(path)
	if err != nil {
		return 0, path, nil, err
	}
	defer in.Close()
	if cli.CarryInsecureSeed(o.Streams, "estimate", in.Name(), in.Meta(), nil) {
		o.insecure = true
	}
	for _, key := range release.ReleasePartKeys {
		a, okA := rel.partItem(key)
		b, okB := in.Meta()[key]
		if key == release.KeyCodebook && okB {
			b = release.CodebookDigest(b)
		}
		if a != b || okA != okB {
			return 0, in.Name(), nil, fmt.Errorf("%s and %s are not parts of the same release: their metadata item %q differs (%s vs %s); estimate each release on its own", rel.name, in.Name(), key, pramShort(a, okA), pramShort(b, okB))
		}
	}
	part, err := o.openPRAMRelease(in)
	if err != nil {
		return 0, in.Name(), nil, err
	}
	n, err := part.count(o, in, t)
	return n, in.Name(), in.Meta(), err
}

// checkPartRanges checks the parts' row ranges when every part records
// one (first_row and rows: perturb and decrypt on a part, and count
// tables of them): each part holds the rows it says, and the parts tile
// the sample's m rows, without overlap and, unless --tabulate, without a
// gap. The count table of contiguous parts records their union, so that
// merging count tables is checked the same way. Parts cut by hand (no
// range) are checked by their total only (checkPartTotals).
func (rel *pramRelease) checkPartRanges(o *Options, parts []pramPart) error {
	m, err := rel.metaInt(release.KeyM, "-m M")
	if err != nil {
		return nil // no m: checkPartTotals and account say what is missing
	}
	ranges := make([]release.Part, len(parts))
	names := make([]string, len(parts))
	for i, p := range parts {
		if _, ok := p.meta[release.KeyFirstRow]; !ok {
			if len(parts) > 1 && i > 0 {
				if _, first := parts[0].meta[release.KeyFirstRow]; first {
					return fmt.Errorf("%s records its rows of the sample (%s = %s) and %s does not: give the parts perturb or decrypt wrote, or count tables of them, not a mix with files cut otherwise", parts[0].name, release.KeyFirstRow, parts[0].meta[release.KeyFirstRow], p.name)
				}
			}
			delete(rel.meta, release.KeyFirstRow)
			delete(rel.meta, release.KeyPartRows)
			return nil
		}
		r, err := release.ReadPart(p.meta, p.name, m)
		if err != nil {
			return err
		}
		if p.rows != r.Rows {
			return fmt.Errorf("%s holds %d rows but its metadata says it holds %s (%d rows): the file was edited or truncated; decrypt the part again", p.name, p.rows, r, r.Rows)
		}
		ranges[i], names[i] = r, p.name
	}
	if err := release.CheckParts(ranges, names, m, o.Tabulate); err != nil {
		return err
	}
	// The union, when contiguous, is what the output (a count table)
	// holds; else it records no range.
	lo, hi, sum := m, int64(0), int64(0)
	for _, r := range ranges {
		lo, hi, sum = min(lo, r.First), max(hi, r.End()), sum+r.Rows
	}
	rel.meta = maps.Clone(rel.meta)
	if hi-lo == sum {
		release.Part{First: lo, Rows: sum}.Encode(rel.meta, m)
	} else {
		delete(rel.meta, release.KeyFirstRow)
		delete(rel.meta, release.KeyPartRows)
	}
	return nil
}

// pramSameFile reports whether two arguments name the same file.
func pramSameFile(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// pramShort quotes a metadata value for a message, shortened.
func pramShort(v string, ok bool) string {
	if !ok {
		return "absent"
	}
	if len(v) > 40 {
		v = v[:37] + "…"
	}
	return strconv.Quote(v)
}

// checkPartTotals refuses parts whose rows do not add up to the release's m:
// more is a part given twice (or a part of another copy of the release),
// fewer a missing part (allowed with --tabulate, which writes the counts
// of some parts to be merged later).
func (rel *pramRelease) checkPartTotals(o *Options, parts []pramPart, total int64) error {
	if o.cmd.Flags().Changed("sample-size") {
		return nil // account checks the total against -m
	}
	m, err := rel.metaInt(release.KeyM, "-m M")
	if err != nil {
		var me *table.MissingError
		if errors.As(err, &me) {
			return nil
		}
		return err
	}
	list := make([]string, len(parts))
	for i, p := range parts {
		list[i] = fmt.Sprintf("%s (%d)", p.name, p.rows)
	}
	sum := strings.Join(list, " + ")
	switch {
	case total > m:
		return fmt.Errorf("the parts have more rows than the release: %s = %d rows, but the release has m = %d; a part was given twice, or the parts overlap: give each disjoint part once", sum, total, m)
	case total < m && !o.Tabulate:
		return fmt.Errorf("the parts have fewer rows than the release: %s = %d rows, but the release has m = %d; a part is missing: give every part of the release", sum, total, m)
	}
	return nil
}

// labelCode returns the code of a label of one column, and whether it is
// one of the column's labels.
type labelCode func(string) (uint32, bool)

// labelCodes returns each column's labelCode: its codebook column's own
// index (codebook.Column.LabelIndex), a few bytes a label; a
// map[string]uint32 per column was 55 MB at 1M labels.
func (rel *pramRelease) labelCodes() []labelCode {
	index := make([]labelCode, len(rel.cb.Columns))
	for j := range rel.cb.Columns {
		c := &rel.cb.Columns[j]
		index[j] = func(s string) (uint32, bool) {
			x, ok := c.LabelIndex(s)
			return uint32(x), ok
		}
	}
	return index
}

// count reads one input's rows — released rows, or a count table's
// counted joint values — into t, and returns how many rows it holds: O(d)
// work per row (one map lookup per cell).
func (rel *pramRelease) count(o *Options, in table.Reader, t *pramTally) (int64, error) {
	if rel.labels() > table.ManyLabels {
		table.LowerCSVBatchRows(in, table.ManyLabelsBatchRows)
	}
	d := rel.dom.Dims()
	index := rel.labelCodes()
	stride := pramStrides(rel.dom)
	countCol := -1
	if release.IsCountTable(in.Meta()) {
		idx := in.Schema().FieldIndices(release.CountColumn)
		if len(idx) == 0 {
			return 0, fmt.Errorf("%s is a count table without a %q column (it has %s); tabulate the release again with estimate --tabulate", rel.name, release.CountColumn, strings.Join(pramFieldNames(in), ", "))
		}
		countCol = idx[0]
	}
	if countCol < 0 && !pramCountSerial {
		return rel.countRows(o, in, t, index, stride)
	}
	vals := make([]table.Values, d)
	meter := o.Streams.Progress("estimate: read")
	defer meter.Done()
	var rows, lines int64
	for {
		rec, err := in.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
		for j := range vals {
			vals[j] = table.ValuesOf(rec.Column(rel.fileCol[j]))
		}
		var cnt table.Values
		if countCol >= 0 {
			cnt = table.ValuesOf(rec.Column(countCol))
		}
		nr := int(rec.NumRows())
		for i := range nr {
			row := lines + int64(i) + 1
			var g uint64
			for j, v := range vals {
				s := v.String(i)
				x, ok := index[j](s)
				if !ok {
					return 0, &table.DataError{File: rel.name, Row: row, Column: rel.names[j],
						Err: fmt.Errorf("value %s is not one of the column's %d codebook labels: the file is not decrypt's output for this codebook; decrypt the release again, or pass the --codebook it was made with", table.QuoteCell(s), rel.cb.Columns[j].K())}
				}
				g += uint64(x) * stride[j]
			}
			n := int64(1)
			if countCol >= 0 {
				s := cnt.String(i)
				v, err := strconv.ParseInt(s, 10, 64)
				if err != nil || v < 0 {
					return 0, &table.DataError{File: rel.name, Row: row, Column: release.CountColumn,
						Err: fmt.Errorf("count %s is not a non-negative integer: the count table was edited; tabulate the release again with estimate --tabulate", table.QuoteCell(s))}
				}
				n = v
			}
			if !t.add(g, n) {
				return 0, &table.DataError{File: rel.name, Row: row, Column: release.CountColumn,
					Err: fmt.Errorf("the counts add up to more than %d rows: the count table was edited; tabulate the release again with estimate --tabulate", int64(math.MaxInt64))}
			}
			rows += n
		}
		lines += int64(nr)
		meter.Add(int64(nr))
		if err := t.maybeSpill(); err != nil {
			return 0, err
		}
	}
	return rows, nil
}

// labels returns the number of labels of the release's columns.
func (rel *pramRelease) labels() int {
	n := 0
	for _, c := range rel.cb.Columns {
		n += c.K()
	}
	return n
}

// writePRAMCountTable writes the counts as a count table: the release's
// columns (labels) and CountColumn, one row per observed joint value in
// increasing order, with the release's metadata marked as a count table.
func (o *Options) writePRAMCountTable(rel *pramRelease, t *pramTally) error {
	var fields []arrow.Field
	for _, name := range rel.names {
		if name == release.CountColumn {
			return fmt.Errorf("%s: column %q has the name of the count table's count column; rename it before tabulating", rel.name, name)
		}
		fields = append(fields, arrow.Field{Name: name, Type: arrow.BinaryTypes.String})
	}
	fields = append(fields, arrow.Field{Name: release.CountColumn, Type: arrow.PrimitiveTypes.Int64})
	schema := arrow.NewSchema(fields, nil)
	w, err := o.createCountTable(schema, rel.meta)
	if err != nil {
		return err
	}
	defer w.Abort()
	bb := table.NewRowWriter(w, schema, 0)
	defer bb.Release()
	x := make([]uint32, len(rel.names))
	d := len(rel.names)
	cells, err := t.cells()
	if err != nil {
		return err
	}
	for c, ok := cells.next(); ok; c, ok = cells.next() {
		if err := rel.dom.Decode(c.g, x); err != nil {
			return err
		}
		for j := range d {
			bb.String(j, rel.label(j, x[j]))
		}
		bb.Int64(d, c.n)
		if err := bb.EndRow(); err != nil {
			return err
		}
	}
	if cells.err != nil {
		return cells.err
	}
	if err := bb.Flush(); err != nil {
		return err
	}
	return w.Commit()
}

// pramInputs are the files read, which the output must not overwrite.
func (o *Options) pramInputs() []string {
	if len(o.Inputs) == 0 {
		return append([]string{o.Input}, o.Truth...)
	}
	return append(append([]string{}, o.Inputs...), o.Truth...)
}

// createCountTable starts writing a count table (--tabulate): the release's
// metadata, marked as a count table, with schema (the release's columns
// and CountColumn); CSV unless -o says otherwise.
func (o *Options) createCountTable(schema *arrow.Schema, releaseMeta table.Meta) (table.Writer, error) {
	meta := maps.Clone(releaseMeta)
	meta[release.KeyCountTable] = release.CountTableTrue
	o.markInsecureSeed(meta)
	return o.Streams.Create(o.Output, schema, meta, table.CSV, o.pramInputs())
}
