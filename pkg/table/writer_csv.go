package table

import (
	"bufio"
	"encoding/csv"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

type csvWriter struct {
	buf *bufio.Writer // the header; the rows too when the sink takes no blocks
	// blocks, when the sink is a file, takes the formatted rows in blocks
	// the writer fills itself: no copy between formatting and write(2).
	blocks blockSink
	ncols  int
	parts  [][]byte // per piece of a batch: its formatted rows
	// rowBytes is the mean size of a row of the last batch (0 before
	// the first), which sizes the next batch's pieces to fit a block.
	rowBytes int
	started  bool // the header has gone to blocks' sink
}

// newCSVWriter writes the header row, preceded by a "#pramkit" metadata line
// when the metadata has nowhere else to go (metaLine: a stream, no sidecar).
func newCSVWriter(s sink, schema *arrow.Schema, meta Meta, metaLine bool) (*csvWriter, error) {
	buf := bufio.NewWriterSize(s, 256<<10)
	if metaLine && len(meta) > 0 {
		b, err := encodeSidecar(meta)
		if err != nil {
			return nil, err
		}
		buf.WriteString(metaLinePrefix)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	w := csv.NewWriter(buf)
	header := make([]string, schema.NumFields())
	for i, f := range schema.Fields() {
		header[i] = f.Name
	}
	if err := w.Write(header); err != nil {
		return nil, err
	}
	w.Flush()
	c := &csvWriter{buf: buf, ncols: len(header)}
	c.blocks, _ = s.(blockSink)
	return c, w.Error()
}

// minParallelRows is the batch size from which formatting is shared
// between goroutines.
const minParallelRows = 4096

// write formats the batch's rows exactly as encoding/csv.Writer would
// (appendCSVField), on up to GOMAXPROCS goroutines, and writes them in
// order. It returns when the batch is formatted: callers may reuse the
// batch's memory (Int32Batch, CodesBatch) as soon as Write returns.
func (c *csvWriter) write(rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	if n == 0 {
		return nil
	}
	cols := make([]csvColumn, c.ncols)
	for j := range cols {
		cols[j] = newCSVColumn(rec.Column(j), n)
	}
	fixedCells(cols)
	if c.blocks != nil {
		return c.writeBlocks(cols, n)
	}
	workers := min(runtime.GOMAXPROCS(0), max(1, n/minParallelRows))
	if len(c.parts) < workers {
		c.parts = append(c.parts, make([][]byte, workers-len(c.parts))...)
	}
	if workers == 1 {
		c.parts[0] = formatCSVRows(c.parts[0][:0], cols, 0, n)
	} else {
		var wg sync.WaitGroup
		for k := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.parts[k] = formatCSVRows(c.parts[k][:0], cols, n*k/workers, n*(k+1)/workers)
			}()
		}
		wg.Wait()
	}
	for _, p := range c.parts[:workers] {
		if _, err := c.buf.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// writeBlocks formats the rows into pieces of about three quarters of a
// sink block, each into a block of the sink's (takeBlock), taken in turn
// by the caller and up to GOMAXPROCS-1 goroutines, and hands the blocks
// to the sink in row order. The sink writes and hashes them on goroutines
// of its own while the next batch is formatted: nothing of a batch is
// copied, and the pieces, smaller than a half of the batch, leave no core
// waiting on the last one for long.
func (c *csvWriter) writeBlocks(cols []csvColumn, n int) error {
	if !c.started {
		// The header, through Write, before the first block.
		if err := c.buf.Flush(); err != nil {
			return err
		}
		c.started = true
	}
	pieces := 1
	if n >= minParallelRows {
		per := minParallelRows
		if c.rowBytes > 0 {
			per = max(256, sinkBlockSize*3/4/c.rowBytes)
		}
		pieces = min((n+per-1)/per, handBlocks/2)
	}
	if cap(c.parts) < pieces {
		c.parts = make([][]byte, pieces)
	}
	parts := c.parts[:pieces]
	var next atomic.Int64
	format := func() {
		for k := int(next.Add(1) - 1); k < pieces; k = int(next.Add(1) - 1) {
			parts[k] = formatCSVRows(c.blocks.takeBlock(), cols, n*k/pieces, n*(k+1)/pieces)
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), pieces) - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			format()
		}()
	}
	format()
	wg.Wait()
	var err error
	size := 0
	for k, p := range parts {
		size += len(p)
		// Every block goes back to the sink, also after an error.
		if e := c.blocks.handBlock(p); e != nil && err == nil {
			err = e
		}
		parts[k] = nil
	}
	c.rowBytes = max(1, size/n)
	return err
}

// formatCSVRows appends rows [from, to) to dst.
func formatCSVRows(dst []byte, cols []csvColumn, from, to int) []byte {
	if len(cols) > 0 && cols[0].cells != nil {
		return formatFixedRows(dst, cols, from, to)
	}
	for i := from; i < to; i++ {
		for j := range cols {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = cols[j].append(dst, i)
		}
		if len(cols) == 1 && cols[0].empty(i) {
			// encoding/csv writes a lone empty field as a blank line,
			// which readers skip: quote it so the row survives.
			dst = append(dst, '"', '"')
		}
		dst = append(dst, '\n')
	}
	return dst
}

// csvColumn formats the cells of one column. A dictionary column's entries
// are formatted once per batch, a row then costing one copy of a few
// bytes, unless the dictionary has more entries than the batch has rows:
// then each cell is formatted from its entry. A published codebook of 1M
// labels (anonymize's sensitive column) had cost 1M formatted entries
// per batch, 32 MB and most of the run's time.
type csvColumn struct {
	dict *array.Dictionary
	enc  [][]byte // dictionary entries, formatted; nil when formatted per cell
	vals Values   // dictionary entries, when formatted per cell
	idx  []int32  // dict's indices, when int32 without nulls (CodesBatch)
	// cells and cellLen are enc's entries with their separator, padded
	// to cellWidth bytes (fixedCells), or nil.
	cells   [][cellWidth]byte
	cellLen []uint8
	str     *array.String
	i32     *array.Int32
	i64     *array.Int64
	other   Values
}

// newCSVColumn prepares the column a of a batch of n rows.
func newCSVColumn(a arrow.Array, n int) csvColumn {
	switch c := a.(type) {
	case *array.Dictionary:
		vs := ValuesOf(c.Dictionary())
		col := csvColumn{dict: c, vals: vs}
		if m := c.Dictionary().Len(); m <= n {
			col.enc = make([][]byte, m)
			for k := range col.enc {
				col.enc[k] = appendCSVField(nil, vs.String(k))
			}
		}
		if ix, ok := c.Indices().(*array.Int32); ok && c.NullN() == 0 {
			// GetValueIndex switches on the index type for every cell.
			col.idx = ix.Int32Values()
		}
		return col
	case *array.String:
		return csvColumn{str: c}
	case *array.Int32:
		if c.NullN() == 0 {
			return csvColumn{i32: c}
		}
	case *array.Int64:
		if c.NullN() == 0 {
			return csvColumn{i64: c}
		}
	}
	return csvColumn{other: ValuesOf(a)}
}

// entry is the dictionary entry of a dictionary column's cell i (not
// null): from the int32 indices when the column has them, without
// GetValueIndex's switch on the index type.
func (c *csvColumn) entry(i int) int {
	if c.idx != nil {
		return int(c.idx[i])
	}
	return c.dict.GetValueIndex(i)
}

func (c *csvColumn) append(dst []byte, i int) []byte {
	switch {
	case c.idx != nil && c.enc != nil:
		return append(dst, c.enc[c.idx[i]]...)
	case c.dict != nil:
		if c.dict.IsNull(i) {
			return dst
		}
		if c.enc == nil {
			return appendCSVField(dst, c.vals.String(c.entry(i)))
		}
		return append(dst, c.enc[c.dict.GetValueIndex(i)]...)
	case c.str != nil:
		if c.str.IsNull(i) {
			return dst
		}
		return appendCSVField(dst, c.str.Value(i))
	case c.i32 != nil:
		return strconv.AppendInt(dst, int64(c.i32.Value(i)), 10)
	case c.i64 != nil:
		return strconv.AppendInt(dst, c.i64.Value(i), 10)
	}
	return appendCSVField(dst, c.other.String(i))
}

// empty reports whether cell i formats as nothing.
func (c *csvColumn) empty(i int) bool {
	switch {
	case c.idx != nil && c.enc != nil:
		return len(c.enc[c.idx[i]]) == 0
	case c.dict != nil:
		if c.dict.IsNull(i) {
			return true
		}
		if c.enc == nil {
			return c.vals.String(c.entry(i)) == ""
		}
		return len(c.enc[c.dict.GetValueIndex(i)]) == 0
	case c.str != nil:
		return c.str.IsNull(i) || c.str.Value(i) == ""
	case c.i32 != nil, c.i64 != nil:
		return false
	}
	return c.other.String(i) == ""
}

// appendCSVField appends field as encoding/csv.Writer (comma separator,
// UseCRLF false) writes it: quoted when it holds a comma, quote, CR or LF,
// starts with a space, or is `\.`; inner quotes doubled.
func appendCSVField(dst []byte, field string) []byte {
	if !csvNeedsQuotes(field) {
		return append(dst, field...)
	}
	dst = append(dst, '"')
	for {
		i := strings.IndexByte(field, '"')
		if i < 0 {
			break
		}
		dst = append(dst, field[:i+1]...)
		dst = append(dst, '"')
		field = field[i+1:]
	}
	dst = append(dst, field...)
	return append(dst, '"')
}

// csvNeedsQuotes is encoding/csv's fieldNeedsQuotes for a comma.
func csvNeedsQuotes(field string) bool {
	if field == "" {
		return false
	}
	if field == `\.` {
		return true
	}
	for i := 0; i < len(field); i++ {
		switch field[i] {
		case '\n', '\r', '"', ',':
			return true
		}
	}
	r1, _ := utf8.DecodeRuneInString(field)
	return unicode.IsSpace(r1)
}

func (c *csvWriter) close() error { return c.buf.Flush() }
