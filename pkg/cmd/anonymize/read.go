package anonymize

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/codebook"
	"github.com/pramkit/pramkit/pkg/progress"
	"github.com/pramkit/pramkit/pkg/table"
)

// dropped is the index sensColumn.index returns for a value whose row the
// --missing drop (or --unknown missing --missing drop) policy removes.
const dropped = -1

// sensitive is one sensitive column being read: its codebook column and
// its encoder. Cells are looked up in the codebook's own label map
// (Encoder.Index) as they come, with no map of the command's own: an
// interner of the distinct cells plus a code → index table held about
// 90 bytes per distinct value on top of the codebook's (26 MB at 300k
// values), which set anonymize's peak memory on high-cardinality columns.
type sensitive struct {
	name string
	col  *codebook.Column
	enc  *codebook.Encoder
	buf  []byte // an integer cell's decimal form

	// labels is the column's codebook labels as a dictionary (made by
	// dictionary, on first use): the published codes' (table.Labels),
	// and, for a categorical column of at most table.MaxReadLabels, what the
	// passes read it as (ReadOptions.Labels): cells come coded from the
	// parsing goroutines.
	labels *table.Labels
	// entries maps the entries of labels to value indexes (entryOf),
	// once; dict is the same for the batch being read.
	entries []int64
	dict    []int64
}

// Entries of a dictionary that are no value index: dropped (--missing
// drop), or an error that index reports for the cells that use them.
const badEntry = -2

// readLabels returns the sensitive column's labels for the passes to read
// it as codes (ReadOptions.Labels), or nil to read it as text.
func (sv *sensitive) readLabels() *table.Labels {
	if sv.col.IsNumeric() || sv.col.K() > table.MaxReadLabels {
		return nil
	}
	return sv.dictionary()
}

// dictionary returns sv.labels, made on first use.
func (sv *sensitive) dictionary() *table.Labels {
	if sv.labels == nil {
		sv.labels = sv.col.Dictionary()
	}
	return sv.labels
}

// sensColumn reads the cells of one batch column of a sensitive column.
type sensColumn struct {
	sv *sensitive
	typedCells
	codes []int32 // a dictionary column's indices, with sv.dict for its entries
}

func (sv *sensitive) column(a arrow.Array) sensColumn {
	c := sensColumn{sv: sv, typedCells: typedCellsOf(a)}
	if d, ok := a.(*array.Dictionary); ok && d.NullN() == 0 {
		if idx, ok := d.Indices().(*array.Int32); ok {
			c.codes = idx.Int32Values()
			sv.dict = sv.entriesOf(d.Dictionary(), sv.dict)
		}
	}
	return c
}

// entriesOf maps the entries of dict to value indexes (dropped, or
// badEntry), into buf: once for the labels' own dictionary, which every
// batch read with them shares unless it has other values; else entry by
// entry.
func (sv *sensitive) entriesOf(dict arrow.Array, buf []int64) []int64 {
	own := sv.labels != nil && dict.Data() == sv.labels.Dictionary().Data()
	if own && sv.entries != nil {
		return sv.entries
	}
	vs := table.ValuesOf(dict)
	out := buf[:0]
	if own {
		out = nil
	}
	for e := range dict.Len() {
		x, err := sv.enc.Index(vs.String(e))
		switch {
		case err == nil:
			out = append(out, int64(x))
		case errors.Is(err, codebook.ErrDrop):
			out = append(out, dropped)
		default:
			out = append(out, badEntry)
		}
	}
	if own {
		sv.entries = out
	}
	return out
}

// index returns the codebook index of cell i (row row of file), or dropped
// for a value --missing drop removes. A string cell is looked up with the
// batch's memory, an integer cell by its decimal form (what a string
// column holding it would read), a null as "" (missing); nothing is
// allocated but an error.
func (c sensColumn) index(i int, file string, row int64) (int64, error) {
	if c.codes != nil {
		if x := c.sv.dict[c.codes[i]]; x != badEntry {
			return x, nil
		}
	}
	var s string
	switch {
	case c.str != nil && !c.str.IsNull(i):
		s = c.str.Value(i)
	case c.i64 != nil && !c.i64.IsNull(i):
		s = c.sv.decimal(c.i64.Value(i))
	case c.i32 != nil && !c.i32.IsNull(i):
		s = c.sv.decimal(int64(c.i32.Value(i)))
	default:
		s = c.any.String(i) // nulls read as ""
	}
	x, err := c.sv.enc.Index(s)
	switch {
	case err == nil:
		return int64(x), nil
	case errors.Is(err, codebook.ErrDrop):
		return dropped, nil
	}
	// The error may hold s, which is the batch's or buf's memory: ask
	// again with a copy of its own.
	_, err = c.sv.enc.Index(strings.Clone(s))
	return 0, &table.DataError{File: file, Row: row, Column: c.sv.name, Err: err}
}

// decimal returns v's decimal form in sv.buf, valid until the next call.
func (sv *sensitive) decimal(v int64) string {
	sv.buf = strconv.AppendInt(sv.buf[:0], v, 10)
	return unsafe.String(unsafe.SliceData(sv.buf), len(sv.buf))
}

// findSensitive finds sensitive column name in schema (of file, whose
// columns are names) and in the codebook, and prepares its encoder.
func findSensitive(schema *arrow.Schema, file string, names []string, name string, cb *codebook.Codebook, policy codebook.Policy) (int, *sensitive, error) {
	idx := schema.FieldIndices(name)
	if len(idx) == 0 {
		return 0, nil, fmt.Errorf("%s has no column %q to treat as sensitive (columns: %s)", file, name, strings.Join(names, ", "))
	}
	col, ok := cb.Column(name)
	if !ok {
		return 0, nil, fmt.Errorf("the codebook has no column %q: declare its categories in the --codebook file", name)
	}
	enc, err := col.Encoder(policy)
	if err != nil {
		return 0, nil, err
	}
	return idx[0], &sensitive{name: name, col: col, enc: enc}, nil
}

// dataset is the input table as anonymize holds it. The sensitive columns
// are value indexes (4 bytes per row each); the others are dictionary codes
// (1, 2 or 4 bytes per row each, see codes), so that the rows can be
// written in any order after the whole table is read.
type dataset struct {
	name  string   // input name for messages
	names []string // input column names, in order
	// which[j] is k for the k-th sensitive column, -1 for the others.
	which []int
	sens  []*sensitive
	// s[k][row] is the codebook index of sensitive column k (rows kept only).
	s [][]uint32
	// counts[k][v] is the frequency of value index v in sensitive column k.
	counts [][]int64
	nsa    []*interner // per input column; nil for sensitive ones
	codes  []*codes    // per input column; nil for sensitive ones
	rows   int64       // rows kept
	// missing counts the rows removed by --missing drop.
	missing int64
}

// readOptions say how much of the table to keep.
type readOptions struct {
	keepRows bool // hold every row (publishing); else only the counts
	policy   codebook.Policy
	meter    *progress.Meter
}

// read reads the whole input. Memory: O(V) per sensitive column for the
// counts; with keepRows, the rows as described at dataset.
func read(in table.Reader, cb *codebook.Codebook, names []string, opt readOptions) (*dataset, error) {
	schema := in.Schema()
	d := &dataset{name: in.Name(), which: make([]int, schema.NumFields())}
	for j, f := range schema.Fields() {
		d.names = append(d.names, f.Name)
		d.which[j] = -1
	}
	for k, name := range names {
		j, sv, err := findSensitive(schema, in.Name(), d.names, name, cb, opt.policy)
		if err != nil {
			return nil, err
		}
		d.which[j] = k
		d.sens = append(d.sens, sv)
		d.counts = append(d.counts, make([]int64, sv.col.K()))
	}
	d.s = make([][]uint32, len(names))
	d.nsa = make([]*interner, len(d.names))
	d.codes = make([]*codes, len(d.names))
	if opt.keepRows {
		// The input's row count is a hint from its footer, which a
		// crafted file sets at will (4e9 rows in 2 KB made 16 GB of
		// slices): at most 1M rows are reserved, append grows the rest.
		capacity := 1024
		if n := in.NumRows(); n > 0 && n < anonymize.MaxRows {
			capacity = int(min(n, 1<<20))
		}
		for j, k := range d.which {
			if k < 0 {
				d.nsa[j], d.codes[j] = newInterner(), newCodes(capacity)
			} else {
				d.s[k] = make([]uint32, 0, capacity)
			}
		}
	}
	rowIdx := make([]uint32, len(names))
	sensCols := make([]sensColumn, len(names))
	var nsaCols []column
	var nsaAt []int
	for {
		rec, err := in.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		first := in.RowsRead() - rec.NumRows() + 1
		nsaCols, nsaAt = nsaCols[:0], nsaAt[:0]
		for j, k := range d.which {
			switch {
			case k >= 0:
				sensCols[k] = d.sens[k].column(rec.Column(j))
			case opt.keepRows:
				nsaCols = append(nsaCols, d.nsa[j].column(rec.Column(j)))
				nsaAt = append(nsaAt, j)
			}
		}
	rows:
		for i := range int(rec.NumRows()) {
			for k, c := range sensCols {
				x, err := c.index(i, in.Name(), first+int64(i))
				if err != nil {
					return nil, err
				}
				if x == dropped {
					d.missing++
					continue rows
				}
				rowIdx[k] = uint32(x)
			}
			if d.rows >= anonymize.MaxRows-1 {
				return nil, fmt.Errorf("%s has more than %d rows, the most anonymize handles; split the table", in.Name(), anonymize.MaxRows-1)
			}
			d.rows++
			for k, x := range rowIdx {
				d.counts[k][x]++
				if opt.keepRows {
					d.s[k] = append(d.s[k], x)
				}
			}
			for c, col := range nsaCols {
				code, _ := col.code(i)
				d.codes[nsaAt[c]].append(code)
			}
		}
		opt.meter.Add(rec.NumRows())
	}
	opt.meter.Done()
	if in.RowsRead() == 0 {
		return nil, fmt.Errorf("%s has no data rows: nothing to anonymize", in.Name())
	}
	if d.rows == 0 {
		return nil, fmt.Errorf("%s: every row has a missing sensitive value and --missing drop removed them all: nothing to anonymize", in.Name())
	}
	return d, nil
}

// distinct is the number of values of sensitive column k that occur.
func (d *dataset) distinct(k int) int {
	n := 0
	for _, c := range d.counts[k] {
		if c > 0 {
			n++
		}
	}
	return n
}

// mostFrequent returns the value index of the largest count of column k
// (the smallest index among ties).
func (d *dataset) mostFrequent(k int) int {
	best := 0
	for v, c := range d.counts[k] {
		if c > d.counts[k][best] {
			best = v
		}
	}
	return best
}

// bytesPerRow is the memory the rows take, per row.
func (d *dataset) bytesPerRow() float64 {
	var b int
	for _, s := range d.s {
		b += 4 * cap(s)
	}
	for _, c := range d.codes {
		if c != nil {
			b += c.bytes()
		}
	}
	return float64(b) / float64(max(d.rows, 1))
}
