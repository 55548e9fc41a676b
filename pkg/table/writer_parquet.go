package table

import (
	"bytes"
	"cmp"
	"context"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// maxDictPage bounds a column chunk's dictionary page (see newParquetWriter).
const maxDictPage = 64 << 10

type parquetWriter struct {
	fw     *pqFile
	schema *arrow.Schema
	fields []arrow.Field
	// write copies the rows it is given into group until it holds
	// groupRows rows, then queues them as one batch: one row group.
	groupRows int
	group     *rowGroupBuf
	memos     []dictMemo // the groups' dictionary copies (dictMemo)
	// Row groups are encoded on a goroutine of their own (encode), beside
	// the stage that makes the rows.
	queue chan arrow.RecordBatch
	done  chan error // encode's first error (or nil), once queue is closed
	// wide, set instead of group and queue for a table wider than
	// GroupBytes allows in a group, gathers each row group in compact
	// form and writes it before gathering the next (writeWide).
	wide   *wideGroup
	failed atomic.Pointer[error]
	strs   stringDicts // used by encode only
}

// inlineWideGroups turns on the one-group-at-a-time path of wide tables;
// tests turn it off to show that the file's bytes are the same either way.
var inlineWideGroups = true

// parquetQueue is the number of row groups that may wait to be encoded.
const parquetQueue = 1

// newParquetWriter writes row groups of groupRows rows (RowGroupRows if
// 0), the last one shorter, whatever batches it is given; Snappy, dictionary encoding on (categorical strings shrink to
// their codes). The Arrow schema is stored in the file (WithStoreSchema) so
// the pramkit metadata round-trips — with dictionary columns (Labels)
// declared as strings, so that every reader sees the string columns it
// would see had the stage written strings.
func newParquetWriter(s sink, schema *arrow.Schema, meta Meta, later lateItems, groupRows int) (*parquetWriter, error) {
	if groupRows <= 0 {
		groupRows = RowGroupRows
	}
	props := parquetProps(schema, groupRows)
	fw, err := newPQFile(withMeta(plainSchema(schema), meta), s, props, later)
	if err != nil {
		return nil, err
	}
	p := &parquetWriter{fw: fw, schema: schema, fields: schema.Fields(), groupRows: groupRows, memos: dictMemos(schema)}
	if inlineWideGroups && RowsWithin(schema, GroupBytes, groupRows) < groupRows {
		// A wide table (bitflip's one-hot bits): one row group at a time,
		// its 0/1 columns held as bits, encoded (its columns on every
		// core) before the next is gathered, where the queue and encode's
		// open groups hold up to four of 4 bytes a cell.
		if p.wide, err = newWideGroup(schema, groupRows, p.memos); err != nil {
			fw.close()
			return nil, err
		}
		return p, nil
	}
	p.queue, p.done = make(chan arrow.RecordBatch, parquetQueue), make(chan error, 1)
	go p.encode(p.queue)
	return p, nil
}

// parquetProps are the writer properties of newParquetWriter's files,
// then extra (tests).
func parquetProps(schema *arrow.Schema, groupRows int, extra ...parquet.WriterProperty) *parquet.WriterProperties {
	opts := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithDictionaryDefault(true),
		parquet.WithMaxRowGroupLength(int64(groupRows)),
		// A column of (nearly) unique values — an id — gains nothing from
		// a dictionary, yet hashing each cell into one was a sixth of
		// anonymize's CPU; past this many bytes of dictionary a column
		// chunk falls back to plain encoding. Categorical columns stay far
		// below it (a codebook's labels).
		parquet.WithDictionaryPageSizeLimit(maxDictPage),
		parquet.WithCreatedBy("pramkit"),
		// Each row group's column writers grow fresh index and page
		// buffers (a dictionary column's indices, doubled as they come:
		// ~320 MB allocated per 10M-row encrypt) and release them when
		// the row group closes; pooled, the next row group reuses them.
		parquet.WithAllocator(bufferPool),
	}
	for _, f := range schema.Fields() {
		if id := f.Type.ID(); id == arrow.DICTIONARY || id == arrow.INT32 || id == arrow.STRING {
			// pqarrow computes a dictionary column's min/max by hashing
			// every index of every batch (compute.Unique), half the cost
			// of writing it; the column's values are the codebook's
			// labels, which nearly every row group holds, so min/max would let a
			// reader skip next to nothing. The same holds for int32
			// columns (codes, one-hot bits) and categorical strings, which
			// go the dictionary path too (smallIntDict, stringDicts).
			opts = append(opts, parquet.WithStatsFor(f.Name, false))
		}
	}
	return parquet.NewWriterProperties(append(opts, extra...)...)
}

// openGroups is the number of row groups encode writes at once: the next
// one starts while the last columns of the one before finish. A row
// group's columns are encoded side by side, but one column can take most
// of a row group's time (anonymize's id: PLAIN text, Snappy-compressed,
// beside code columns of a few bits a cell), and with one row group at a
// time the other cores waited for it.
const openGroups = 2

// encode writes the queued batches, a row group each, up to openGroups
// at once, closed in order; after a failure it drops the rest.
func (p *parquetWriter) encode(queue <-chan arrow.RecordBatch) {
	var err error
	var open []*groupWrite
	finish := func() {
		g := open[0]
		open = open[1:]
		if gerr := g.wait(); err == nil {
			err = gerr
		}
		if err != nil {
			p.failed.Store(&err)
		}
	}
	sem := make(chan struct{}, runtime.GOMAXPROCS(0)) // column encoders running
	for rec := range queue {
		for len(open) >= openGroups || err != nil && len(open) > 0 {
			finish()
		}
		if err == nil {
			g, gerr := p.startGroup(rec, sem)
			if gerr != nil {
				err = gerr
				p.failed.Store(&err)
			} else {
				open = append(open, g)
			}
		}
		rec.Release()
	}
	for len(open) > 0 {
		finish()
	}
	p.done <- err
}

// groupWrite is a row group being written: its columns' encoders, and
// their errors.
type groupWrite struct {
	rg   *pqRowGroup
	wg   sync.WaitGroup
	errs []error
}

// wait waits for the row group's columns, then closes it (the row groups
// before it are closed: encode waits for them in order).
func (g *groupWrite) wait() error {
	g.wg.Wait()
	for _, err := range g.errs {
		if err != nil {
			return err
		}
	}
	return g.rg.close()
}

// write copies the batch's rows into the row group being gathered and
// queues the group once it is full (the caller may reuse the batch's
// memory once write returns, see Int32Batch); an encoding error shows in a
// later write or in close. Copying is a small price next to encoding:
// codes and dictionary indices are 4 bytes a cell.
func (p *parquetWriter) write(rec arrow.RecordBatch) error {
	if err := p.failed.Load(); err != nil {
		return *err
	}
	if p.wide != nil {
		return p.writeWide(rec)
	}
	n := int(rec.NumRows())
	for off := 0; off < n; {
		if p.group == nil {
			p.group = newRowGroupBuf(p.schema, p.groupRows, p.memos)
		}
		k := min(n-off, p.groupRows-p.group.rows)
		if err := p.group.appendRows(rec, off, k); err != nil {
			return err
		}
		off += k
		if p.group.rows == p.groupRows {
			if err := p.queueGroup(); err != nil {
				return err
			}
		}
	}
	return nil
}

// queueGroup hands the gathered row group to encode.
func (p *parquetWriter) queueGroup() error {
	g := p.group
	p.group = nil
	rec, err := g.batch()
	if err != nil {
		return err
	}
	p.queue <- rec
	return nil
}

// startGroup appends rec's row group and starts its columns' encoders,
// each once it holds a place in sem (one per core, shared by the row
// groups being written). An int32 column of small values (codes, one-hot
// bits) is written as finished pages (intPages), as is a dictionary
// column of labels (labelPages): its dictionary becomes the row group's
// dictionary page and its indices the data page, with no string hashed
// per row; a text column too wide for a dictionary goes out as PLAIN
// pages (plainPages). Other dictionary columns go to pqarrow's direct
// dictionary path, which writes the same pages value by value. Each
// column is encoded into its own column chunk's buffer; the row group's
// close then writes the chunks in column order, so the file's bytes do
// not depend on the goroutines' timing.
func (p *parquetWriter) startGroup(rec arrow.RecordBatch, sem chan struct{}) (*groupWrite, error) {
	rg, err := p.fw.appendRowGroup()
	if err != nil {
		return nil, err
	}
	// String columns become dictionary arrays here, in order: stringDicts'
	// maps are shared by the row groups. Int32 columns are left to
	// writeColumn.
	cols := make([]arrow.Array, rec.NumCols())
	wide := make([]bool, rec.NumCols()) // read here: dict writes the map while columns are encoded
	for j, col := range rec.Columns() {
		col.Retain()
		cols[j], wide[j] = p.strs.forColumn(j, col, int(rg.ordinal)%openGroups)
	}
	g := &groupWrite{rg: rg, errs: make([]error, len(cols))}
	g.wg.Add(len(cols))
	for j := range cols {
		go func() {
			defer g.wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ctx := pqarrow.NewArrowWriteContext(context.Background(), nil)
			g.errs[j] = p.writeColumn(ctx, rg, j, cols[j], wide[j])
		}()
	}
	return g, nil
}

// ownIntPages turns intPages on; tests turn it off to show that the file's
// bytes are the same either way.
var ownIntPages = true

// writeColumn writes a (flat) column into column chunk j of rg and
// releases it; wide says that stringDicts found the column too wide for a
// dictionary (plainPages). A nullable column's definition levels are the slice's
// validity: 1 for a value, 0 for a null.
func (p *parquetWriter) writeColumn(ctx context.Context, rg *pqRowGroup, j int, col arrow.Array, wide bool) error {
	defer col.Release()
	if err := rg.openColumn(j); err != nil {
		return err
	}
	a := col
	if c, ok := col.(*array.Int32); ok {
		if hi, ok := smallIntMax(c); ok && ownIntPages && rg.canWriteIntPages(j, hi) {
			return rg.intPages(j, c.Int32Values(), hi)
		}
		if d, ok := smallIntDict(c); ok {
			defer d.Release()
			a = d
		}
	}
	if d, ok := a.(*array.Dictionary); ok {
		if c, ok := compactDict(d); ok {
			defer c.Release()
			d, a = c, c
		}
		if done, err := rg.labelPages(j, d); done {
			return err
		}
	}
	if s, ok := a.(*array.String); ok && wide {
		if done, err := rg.plainPages(j, s); done {
			return err
		}
	}
	cw := rg.writer(j)
	var def []int16
	if cw.LevelInfo().DefLevel > 0 {
		def = make([]int16, a.Len())
		for i := range def {
			if a.IsValid(i) {
				def[i] = 1
			}
		}
	}
	if err := pqarrow.WriteArrowToColumn(ctx, cw, a, def, nil, p.fields[j].Nullable); err != nil {
		return err
	}
	return flushDictPage(cw, a)
}

// earlyPageFlush turns flushDictPage on; tests turn it off to show that
// the file's bytes are the same either way.
var earlyPageFlush = true

// flushDictPage encodes a dictionary column chunk's data page now, on the
// column's own goroutine, rather than in the row group's Close, which runs
// the columns one after another: RLE/bit-packing the indices was the
// largest serial part of writing a Parquet file (a third of decrypt →
// Parquet on one core). Close then finds the page built and only writes
// the dictionary page and it to the file, in column order, as before.
//
// Only for a dictionary array written while the chunk still dictionary
// encodes: pqarrow then writes it whole through WriteDictIndices, which
// never flushes a page in the middle (it counts no raw bytes against the
// page size), so the chunk has exactly one page, unflushed — the page Close
// would flush. Other columns may have flushed pages during the write, and
// flushing again could add an empty page.
func flushDictPage(cw file.ColumnChunkWriter, a arrow.Array) error {
	if !earlyPageFlush || a.Len() == 0 {
		return nil
	}
	if _, ok := a.(*array.Dictionary); !ok {
		return nil
	}
	switch cw.CurrentEncoder().Encoding() {
	case parquet.Encodings.PlainDict, parquet.Encodings.RLEDict:
	default:
		return nil
	}
	f, ok := cw.(interface{ FlushCurrentPage() error })
	if !ok {
		return nil
	}
	return f.FlushCurrentPage()
}

func (p *parquetWriter) close() error {
	defer releaseMemos(p.memos)
	if p.wide != nil {
		var err error
		if failed := p.failed.Load(); failed != nil {
			err = *failed
		} else if p.wide.rows > 0 {
			err = p.writeWideGroup()
		}
		p.wide.close()
		p.wide = nil
		if err != nil {
			p.fw.close()
			return err
		}
	}
	if p.queue != nil {
		var err error
		if p.group != nil && p.failed.Load() == nil {
			err = p.queueGroup()
		}
		p.group = nil
		close(p.queue)
		p.queue = nil
		if encErr := <-p.done; encErr != nil || err != nil {
			p.fw.close()
			return cmp.Or(encErr, err)
		}
	}
	return p.fw.close()
}

// copyData copies d's buffers (dictionary included) into data that owns
// them.
func copyData(d arrow.ArrayData) arrow.ArrayData {
	bufs := make([]*memory.Buffer, len(d.Buffers()))
	for i, b := range d.Buffers() {
		if b != nil {
			bufs[i] = memory.NewBufferBytes(bytes.Clone(b.Bytes()))
		}
	}
	children := make([]arrow.ArrayData, len(d.Children()))
	for i, c := range d.Children() {
		children[i] = copyData(c)
	}
	out := array.NewData(d.DataType(), d.Len(), bufs, children, d.NullN(), d.Offset())
	for _, c := range children {
		c.Release()
	}
	if d.DataType().ID() == arrow.DICTIONARY {
		dc := copyData(d.Dictionary())
		out.SetDictionary(dc)
		dc.Release()
	}
	return out
}
