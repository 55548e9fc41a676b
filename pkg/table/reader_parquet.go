package table

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// parquetReader streams a Parquet file row group by row group through
// pqarrow, so memory is bounded by a row group, not by the file. Every
// column is decoded by a goroutine of its own, ahead of the caller (at
// most parquetAhead batches of each column wait), and one more goroutine
// puts the columns' batches together and checks them: decoding runs on all
// cores and beside the caller's work. (pqarrow's own Parallel option would
// decode on goroutines where a panic on a corrupt file escapes recovered
// and kills the process.)
type parquetReader struct {
	name string
	f    *os.File
	fileSource
	pf *file.Reader
	// borrowed: f and pf are another reader's (ParquetReopen), which
	// closes f.
	borrowed bool
	cols     []*pqarrow.ColumnReader
	batch    int64
	mem      memory.Allocator // the arrays' allocator
	colSch   *arrow.Schema    // the columns' schema as pqarrow reads it
	schema   *arrow.Schema
	meta     Meta
	total    int64
	rows     int64
	// leaves and groups are the file's leaf columns read and row groups;
	// fast[j] says how column j is read without pqarrow (readDictChunk),
	// fastNone for pqarrow.
	leaves []int
	groups []int
	fast   []fastKind
	// fastBatches: batches do not straddle row groups (batchesInGroups),
	// so the fast columns are read by readDictChunk.
	fastBatches bool
	cur         arrow.RecordBatch
	err         error // the error Next returned, returned again

	ahead   chan parquetResult // nil until the first Next
	quit    chan struct{}
	stopped sync.WaitGroup // the decoding goroutines
}

// parquetAhead is the number of decoded batches that may wait for Next.
const parquetAhead = 2

type parquetResult struct {
	rec arrow.RecordBatch
	err error // io.EOF at the end
}

// parquetColumn is one column's next batch.
type parquetColumn struct {
	arr arrow.Array
	err error // io.EOF at the end
	bad error // validateArray(arr), run on the column's goroutine
}

func openParquet(name string, f *os.File, br *bufio.Reader, opt ReadOptions) (rd Reader, err error) {
	defer recovered(name, &err)
	sf, err := seekable(name, f, br, opt)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			sf.Close()
		}
	}()
	st, err := sf.Stat()
	if err != nil {
		return nil, errorf(name, "cannot read (%v)", err)
	}
	// Pages are decompressed into buffers that the page reader frees when
	// it closes, after its column chunk: pooled too under ReuseBuffers
	// (decrypt's 10M-row Parquet input: 33 of its 130 MB allocated).
	opts := []file.ReadOption{file.WithReadProps(parquet.NewReaderProperties(readAllocator(opt)))}
	md, ours, plain, err := readParquetFooter(sf, st.Size())
	if err != nil {
		return nil, errorf(name, "not a readable Parquet file (%v); check that it was copied whole", err)
	}
	if plain {
		opts = append(opts, file.WithMetadata(md))
	}
	pf, err := file.NewParquetReader(sf, opts...)
	if err != nil {
		return nil, errorf(name, "not a readable Parquet file (%v); check that it was copied whole", err)
	}
	if err := checkStoredArrowSchema(pf); err != nil {
		return nil, errorf(name, "cannot read the Parquet schema (%v)", err)
	}
	p, err := parquetFrom(name, sf, pf, ours, opt)
	if err != nil {
		return nil, err
	}
	if !plain {
		forgetFooterMeta(pf)
	}
	return p, nil
}

// forgetFooterMeta drops the pramkit items of a footer that arrow-go
// parsed whole (one readParquetFooter left to it; a plain footer's items
// never reach arrow-go's metadata), once
// they are in the reader's Meta: the footer stays referenced as long as
// the reader, and the codebook in a key file's or a release's metadata
// is 10 MB at 1M labels, which decrypt held twice for the whole run, as
// the footer's string and as the codebook it parses (issue 11: peak RSS
// ≤ 100 MB per stage). With the reader's Meta the only reference, a
// caller that has decoded an item deletes it to free it (Reader.Meta).
// Nothing reads the footer's key-value metadata after the open but
// ParquetReopen, which takes the reader's Meta instead.
func forgetFooterMeta(pf *file.Reader) {
	for _, e := range pf.MetaData().KeyValueMetadata() {
		if _, ok := metaKey(e.GetKey()); ok {
			e.Value = nil
		}
	}
}

// parquetFrom reads the Parquet file sf, whose footer pf has parsed and
// checked, with opt's columns, row groups and batches; its Meta is ours,
// or if nil the pramkit items of pf's footer or stored Arrow schema.
func parquetFrom(name string, sf *os.File, pf *file.Reader, ours Meta, opt ReadOptions) (p *parquetReader, err error) {
	defer recovered(name, &err)
	props := pqarrow.ArrowReadProperties{BatchSize: int64(opt.BatchSize)}
	for _, c := range opt.DictColumns {
		if i := pf.MetaData().Schema.ColumnIndexByName(c); i >= 0 {
			props.SetReadDict(i, true)
		}
	}
	mem := readAllocator(opt)
	fr, err := pqarrow.NewFileReader(pf, props, mem)
	if err != nil {
		return nil, errorf(name, "cannot read the Parquet schema (%v)", err)
	}
	schema, err := fr.Schema()
	if err != nil {
		return nil, errorf(name, "cannot read the Parquet schema (%v)", err)
	}
	leaves := make([]int, pf.MetaData().Schema.NumColumns())
	for i := range leaves {
		leaves[i] = i
	}
	sel, err := projection(name, schema, opt.Columns)
	if err != nil {
		return nil, err
	}
	if sel != nil {
		// pramkit tables are flat: a field is one leaf column, found by
		// its name.
		leaves = leaves[:0]
		for _, j := range sel {
			i := pf.MetaData().Schema.ColumnIndexByName(schema.Field(j).Name)
			if i < 0 {
				return nil, errorf(name, "column %s is not a flat column; pramkit tables have one value per cell", QuoteCell(schema.Field(j).Name))
			}
			leaves = append(leaves, i)
		}
	}
	groups := make([]int, pf.NumRowGroups())
	for i := range groups {
		groups[i] = i
	}
	// The footer's row counts size buffers and slices: a negative one,
	// or row groups that do not add up to the file's count, is a
	// damaged or crafted footer (estimate had sliced with a negative
	// count and crashed).
	var sum int64
	for g := range pf.NumRowGroups() {
		n := pf.MetaData().RowGroup(g).NumRows()
		if n < 0 || sum > math.MaxInt64-n {
			return nil, errorf(name, "row group %d claims %d rows: the file is damaged", g, n)
		}
		sum += n
	}
	if sum != pf.NumRows() {
		return nil, errorf(name, "its row groups hold %d rows but its footer says %d: the file is damaged", sum, pf.NumRows())
	}
	total := pf.NumRows()
	if opt.RowGroups != nil {
		groups, total = opt.RowGroups, 0
		for _, g := range groups {
			if g < 0 || g >= pf.NumRowGroups() {
				return nil, errorf(name, "has no row group %d (it has %d)", g, pf.NumRowGroups())
			}
			total += pf.MetaData().RowGroup(g).NumRows()
		}
	}
	cols, colSch, err := fr.GetFieldReaders(context.Background(), leaves, groups)
	if err == nil && len(cols) == 0 {
		err = errors.New("no columns")
	}
	if err != nil {
		return nil, errorf(name, "cannot read the Parquet data (%v)", err)
	}
	if ours == nil {
		ours = metaOfParquet(pf.MetaData().KeyValueMetadata(), schema)
	}
	return &parquetReader{
		name:   name,
		f:      sf,
		pf:     pf,
		cols:   cols,
		batch:  int64(opt.BatchSize),
		mem:    mem,
		colSch: colSch,
		schema: withMeta(projectSchema(schema, sel), nil),
		meta:   ours,
		total:  total,
		leaves: leaves,
		groups: groups,
		fast:   fastColumns(pf, leaves, groups, colSch),
		// (readDictChunk reads batches only when they line up with
		// pqarrow's; DictGroups reads whole groups.)
		fastBatches: batchesInGroups(pf, groups, opt.BatchSize),
	}, nil
}

// ParquetRowGroups returns the rows of each row group of r, a Parquet file
// opened whole, or nil for another format.
func ParquetRowGroups(r Reader) []int64 {
	p, ok := r.(*parquetReader)
	if !ok {
		return nil
	}
	rows := make([]int64, p.pf.NumRowGroups())
	for i := range rows {
		rows[i] = p.pf.MetaData().RowGroup(i).NumRows()
	}
	return rows
}

func (p *parquetReader) Name() string          { return p.name }
func (p *parquetReader) Format() Format        { return Parquet }
func (p *parquetReader) Schema() *arrow.Schema { return p.schema }
func (p *parquetReader) Meta() Meta            { return p.meta }
func (p *parquetReader) RowsRead() int64       { return p.rows }
func (p *parquetReader) NumRows() int64        { return p.total }

func (p *parquetReader) Next() (arrow.RecordBatch, error) {
	if p.cur != nil {
		p.cur.Release()
		p.cur = nil
	}
	if p.err != nil {
		return nil, p.err
	}
	if p.ahead == nil {
		p.start()
	}
	r, ok := <-p.ahead
	if !ok {
		r.err = io.EOF
	}
	if r.err != nil {
		p.err = r.err
		return nil, r.err
	}
	p.rows += r.rec.NumRows()
	p.cur = r.rec
	return p.cur, nil
}

// start starts a decoding goroutine per column and the one that puts
// their batches together.
func (p *parquetReader) start() {
	p.ahead = make(chan parquetResult, parquetAhead)
	p.quit = make(chan struct{})
	in := make([]chan parquetColumn, len(p.cols))
	for j, cr := range p.cols {
		in[j] = make(chan parquetColumn, parquetAhead)
		p.stopped.Add(1)
		if p.fastBatches && p.fast[j] != fastNone {
			go p.decodeDictColumn(j, in[j])
		} else {
			go p.decodeColumn(cr, in[j])
		}
	}
	p.stopped.Add(1)
	go p.assemble(in)
}

// decodeColumn reads one column's batches until its end, an error or
// Close.
func (p *parquetReader) decodeColumn(cr *pqarrow.ColumnReader, out chan<- parquetColumn) {
	defer p.stopped.Done()
	defer close(out)
	for {
		arr, err := p.nextColumnBatch(cr)
		var bad error
		if err == nil {
			// A panic is reported as gather's own would be.
			if bad, err = p.validateColumn(arr); err != nil {
				arr.Release()
				arr = nil
			}
		}
		select {
		case out <- parquetColumn{arr, err, bad}:
		case <-p.quit:
			if arr != nil {
				arr.Release()
			}
			return
		}
		if err != nil {
			return
		}
	}
}

// validateColumn is validateArray(arr); a panic is turned into panicked.
func (p *parquetReader) validateColumn(arr arrow.Array) (bad, panicked error) {
	defer recovered(p.name, &panicked)
	return validateArray(arr), nil
}

// nextColumnBatch is the column's next batch as one array (pqarrow hands
// out a chunk per row group a batch touches).
func (p *parquetReader) nextColumnBatch(cr *pqarrow.ColumnReader) (arr arrow.Array, err error) {
	defer recovered(p.name, &err)
	data, err := cr.NextBatch(p.batch)
	if err != nil {
		return nil, err
	}
	defer data.Release()
	switch chunks := data.Chunks(); {
	case data.Len() == 0:
		return nil, io.EOF
	case len(chunks) == 1:
		chunks[0].Retain()
		return chunks[0], nil
	default:
		return array.Concatenate(chunks, p.mem)
	}
}

// assemble puts the columns' batches together into checked record
// batches, in order, until the end, an error or Close.
func (p *parquetReader) assemble(in []chan parquetColumn) {
	defer p.stopped.Done()
	defer close(p.ahead)
	var rows int64
	for {
		rec, err := p.gather(in, rows)
		if rec != nil {
			rows += rec.NumRows()
		}
		select {
		case p.ahead <- parquetResult{rec, err}:
		case <-p.quit:
			if rec != nil {
				rec.Release()
			}
			return
		}
		if err != nil {
			return
		}
	}
}

// gather takes the next batch of every column, after row rows, and checks
// the batch; it is the caller's to release.
func (p *parquetReader) gather(in []chan parquetColumn, rows int64) (out arrow.RecordBatch, err error) {
	defer recovered(p.name, &err)
	arrs := make([]arrow.Array, len(in))
	bad := make([]error, len(in))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	var colErr error
	ended := 0
	for j, ch := range in {
		c, ok := <-ch
		switch {
		case !ok || errors.Is(c.err, io.EOF):
			ended++
		case c.err != nil:
			if colErr == nil {
				colErr = c.err
			}
		default:
			arrs[j], bad[j] = c.arr, c.bad
		}
	}
	if colErr != nil {
		var de *DataError
		if errors.As(colErr, &de) {
			return nil, colErr // recovered's message
		}
		return nil, errorf(p.name, "reading row %d: %v; the file is corrupt or truncated", rows+1, colErr)
	}
	if ended == len(in) {
		if rows != p.total {
			return nil, errorf(p.name, "the file ended after %d of its %d rows; it is truncated", rows, p.total)
		}
		return nil, io.EOF
	}
	if ended > 0 {
		return nil, errorf(p.name, "reading row %d: some columns end there and others do not; the file is corrupt or truncated", rows+1)
	}
	rec := array.NewRecordBatch(p.colSch, arrs, -1)
	defer rec.Release()
	if err := validateChecked(rec, bad); err != nil {
		return nil, corruptBatch(p.name, rows, err)
	}
	// Drop the schema metadata so callers see the same schema as Schema().
	return rebatch(p.schema, rec), nil
}

func (p *parquetReader) Close() error {
	if p.cur != nil {
		p.cur.Release()
		p.cur = nil
	}
	if p.ahead != nil {
		close(p.quit)
		p.stopped.Wait()
		for r := range p.ahead {
			if r.rec != nil {
				r.rec.Release()
			}
		}
		p.ahead = nil
	}
	for _, c := range p.cols {
		c.Release()
	}
	p.cols = nil
	if p.borrowed {
		return nil
	}
	return p.f.Close()
}

// checkStoredArrowSchema checks the Arrow schema that Parquet writers such
// as ours store (base64 IPC) under ARROW:schema, which pqarrow decodes with
// arrow-go's IPC reader and its unchecked sizes (see checkedStream).
func checkStoredArrowSchema(pf *file.Reader) error {
	v := pf.MetaData().KeyValueMetadata().FindValue("ARROW:schema")
	if v == nil {
		return nil
	}
	var b []byte
	err := errors.New("")
	if len(*v)%4 == 0 {
		b, err = base64.StdEncoding.DecodeString(*v)
	}
	if len(b) == 0 || err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(*v); err != nil {
			return nil // pqarrow reports it
		}
	}
	if _, err := io.Copy(io.Discard, &checkedStream{r: bytes.NewReader(b)}); err != nil {
		return fmt.Errorf("the stored Arrow schema is corrupt: %v", err)
	}
	return nil
}
