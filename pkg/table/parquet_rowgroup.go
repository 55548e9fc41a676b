package table

import (
	"fmt"
	"math"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/bitutil"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// RowGroupRows is the number of rows in each row group of a Parquet
// output, the last one holding the rest: the writer cuts and joins the
// batches it is given into groups of this size, so a file's layout, and
// thus its bytes, depend on its rows only — not on the batch size of the
// stage that wrote it ($PRAMKIT_BATCH_ROWS), its core count or how its
// blocks were cut (issue 11: a seeded run gives the same bytes at any core
// count and chunk size).
//
// Why this size: it is what the row groups were in practice when a group
// was a batch (DefaultBatchSize). Measured on a 2M-row release (4
// categorical columns; CPU = user+sys, mean of 5 alternated runs, 2 loaded
// cores), decrypt → Parquet took 0.26 s and 88 MB at 64Ki rows, 0.26 s and
// 84 MB at 128Ki, 0.34 s and 104 MB at 1Mi (the writer holds up to three
// groups: one filling, one queued, one being encoded); estimate on the
// output 0.10, 0.10 and 0.09 s. A group's fixed costs (a dictionary page
// per column, its metadata) are small next to 64Ki rows, and readers and
// workers split a file by row group: 64Ki rows keeps a 2M-row file in 31
// pieces to share out, where 1Mi would leave two.
const RowGroupRows = 64 * 1024

// rowGroupBuf gathers rows for one row group: each column's cells are
// copied from the written batches into one contiguous array (the one copy
// write makes, which the caller's freedom to reuse its batch requires), so
// the group is encoded as one batch of its rows whatever batches they came
// in.
type rowGroupBuf struct {
	schema *arrow.Schema
	cols   []colBuf
	rows   int
}

// newRowGroupBuf gathers a group of capRows rows of schema; memos, one
// per column (dictMemos), carry the dictionary copies from one group to
// the next.
func newRowGroupBuf(schema *arrow.Schema, capRows int, memos []dictMemo) *rowGroupBuf {
	b := &rowGroupBuf{schema: schema, cols: make([]colBuf, schema.NumFields())}
	for j, f := range schema.Fields() {
		b.cols[j].name = f.Name
		b.cols[j].memo = &memos[j]
		b.cols[j].init(f.Type, capRows)
	}
	return b
}

// dictMemo is a dictionary column's last dictionary, as given (src) and
// as copied (cp), so that the row groups of a file written over one
// dictionary share one copy. A Labels column's dictionary is the
// codebook's labels, the same array in every batch: copied per row
// group, a column of 1M labels took 10 MB a row group (three in flight),
// and comparing each batch's dictionary with the copy, label by label,
// most of anonymize's time writing Parquet (4M rows: 11 s against 9.6 s
// for CSV). A batch's dictionary is never changed in place (every
// dictionary is an array of its own: Labels, a Parquet row group's page,
// a shuffle's), so the same ArrayData, held by the memo, holds the same
// labels.
type dictMemo struct {
	src, cp arrow.ArrayData
}

// dictCopies counts the dictionaries dictMemo copied (for tests).
var dictCopies atomic.Int64

// dictMemos returns a memo per column of schema.
func dictMemos(schema *arrow.Schema) []dictMemo { return make([]dictMemo, schema.NumFields()) }

// copyOf returns a copy of dictionary d that owns its memory, with a
// reference for the caller: the memo's when d is the memo's source. The
// dictionary of a Labels is its own copy: its memory never changes
// (frozenDicts).
func (m *dictMemo) copyOf(d arrow.ArrayData) arrow.ArrayData {
	if m.src != d {
		m.release()
		d.Retain()
		m.src, m.cp = d, d
		if isFrozen(d) {
			d.Retain()
		} else {
			m.cp = copyData(d)
			dictCopies.Add(1)
		}
	}
	m.cp.Retain()
	return m.cp
}

// same tells whether d, given after copy cp, is known to hold cp's labels.
func (m *dictMemo) same(cp, d arrow.ArrayData) bool { return d == m.src && cp == m.cp }

// release lets go of the memo's dictionaries.
func (m *dictMemo) release() {
	if m.src != nil {
		m.src.Release()
		m.cp.Release()
		m.src, m.cp = nil, nil
	}
}

// releaseMemos lets go of every memo's dictionaries.
func releaseMemos(memos []dictMemo) {
	for j := range memos {
		memos[j].release()
	}
}

// appendRows copies rows [off, off+n) of rec.
func (b *rowGroupBuf) appendRows(rec arrow.RecordBatch, off, n int) error {
	for j, c := range rec.Columns() {
		if err := b.cols[j].appendSlice(c, off, n); err != nil {
			return err
		}
	}
	b.rows += n
	return nil
}

// batch returns the gathered rows as a batch that owns their memory; b
// must not be used after.
func (b *rowGroupBuf) batch() (arrow.RecordBatch, error) {
	arrs := make([]arrow.Array, len(b.cols))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	for j := range b.cols {
		a, err := b.cols[j].finish()
		if err != nil {
			return nil, err
		}
		arrs[j] = a
	}
	return array.NewRecordBatch(b.schema, arrs, int64(b.rows)), nil
}

// colKind is how a column's cells are gathered.
type colKind int

const (
	fixedCol    colKind = iota // values of width bytes each
	boolCol                    // values as bits
	binaryCol                  // int32 offsets and bytes (utf8, binary)
	largeBinCol                // int64 offsets and bytes
	dictCol                    // fixed-width indices over one dictionary
	otherCol                   // anything else: compact copies, concatenated
)

// colBuf gathers one column. The validity bitmap is kept only once a null
// has come (valid nil: every cell so far is valid).
type colBuf struct {
	name   string
	typ    arrow.DataType
	kind   colKind
	width  int // bytes per value (fixedCol, dictCol)
	n      int
	valid  []byte
	nulls  int
	vals   []byte // values, bits (boolCol) or the bytes of binary cells
	offs   []int32
	offs64 []int64
	// dict is the dictionary of a dictCol (a copy of the first batch's);
	// a batch with another one turns the column into an otherCol whose
	// pieces Concatenate then unifies (no stage writes such batches: a
	// Labels column has one dictionary for the whole file).
	dict   arrow.ArrayData
	memo   *dictMemo // where dict comes from
	pieces []arrow.Array
}

func (c *colBuf) init(t arrow.DataType, capRows int) {
	c.typ = t
	switch tt := t.(type) {
	case *arrow.BooleanType:
		c.kind = boolCol
	case *arrow.StringType, *arrow.BinaryType:
		c.kind = binaryCol
		c.offs = make([]int32, 1, capRows+1)
	case *arrow.LargeStringType, *arrow.LargeBinaryType:
		c.kind = largeBinCol
		c.offs64 = make([]int64, 1, capRows+1)
	case *arrow.DictionaryType:
		c.kind, c.width = dictCol, tt.IndexType.(arrow.FixedWidthDataType).BitWidth()/8
		c.vals = bufferPool.allocate(capRows*c.width, false)[:0]
	case arrow.FixedWidthDataType:
		if w := tt.BitWidth(); w%8 == 0 && len(t.Layout().Buffers) == 2 {
			c.kind, c.width = fixedCol, w/8
			c.vals = bufferPool.allocate(capRows*c.width, false)[:0]
			return
		}
		c.kind = otherCol
	default:
		c.kind = otherCol
	}
}

// appendSlice copies cells [off, off+n) of a.
func (c *colBuf) appendSlice(a arrow.Array, off, n int) error {
	if n == 0 {
		return nil
	}
	d := a.Data()
	if c.kind == dictCol {
		switch {
		case c.dict == nil:
			c.dict = c.memo.copyOf(d.Dictionary())
		case c.memo.same(c.dict, d.Dictionary()):
		case !dictEqual(c.dict, d.Dictionary()):
			if err := c.toPieces(); err != nil {
				return err
			}
		}
	}
	if c.kind == otherCol {
		s := array.NewSlice(a, int64(off), int64(off+n))
		defer s.Release()
		p, err := array.Concatenate([]arrow.Array{s}, memory.DefaultAllocator)
		if err != nil {
			return err
		}
		c.pieces = append(c.pieces, p)
		c.n += n
		return nil
	}
	start := d.Offset() + off
	c.appendValidity(d, start, n, a.NullN())
	bufs := d.Buffers()
	switch c.kind {
	case fixedCol, dictCol:
		c.vals = append(c.vals, bufs[1].Bytes()[start*c.width:(start+n)*c.width]...)
	case boolCol:
		c.vals = growBits(c.vals, c.n+n)
		bitutil.CopyBitmap(bufs[1].Bytes(), start, n, c.vals, c.n)
	case binaryCol:
		src := arrow.Int32Traits.CastFromBytes(bufs[1].Bytes())[start : start+n+1]
		if int64(len(c.vals))+int64(src[n]-src[0]) > math.MaxInt32 {
			return fmt.Errorf("a row group holds more than 2 GiB of text in column %s; use shorter cells", QuoteCell(c.name))
		}
		shift := int32(len(c.vals)) - src[0]
		for _, o := range src[1:] {
			c.offs = append(c.offs, o+shift)
		}
		c.vals = append(c.vals, bufs[2].Bytes()[src[0]:src[n]]...)
	case largeBinCol:
		src := arrow.Int64Traits.CastFromBytes(bufs[1].Bytes())[start : start+n+1]
		shift := int64(len(c.vals)) - src[0]
		for _, o := range src[1:] {
			c.offs64 = append(c.offs64, o+shift)
		}
		c.vals = append(c.vals, bufs[2].Bytes()[src[0]:src[n]]...)
	}
	c.n += n
	return nil
}

// appendValidity copies the validity of cells [start, start+n) of d,
// which has nullN nulls in all.
func (c *colBuf) appendValidity(d arrow.ArrayData, start, n, nullN int) {
	var src []byte
	nulls := 0
	if nullN > 0 && d.Buffers()[0] != nil {
		src = d.Buffers()[0].Bytes()
		nulls = n - bitutil.CountSetBits(src, start, n)
	}
	if nulls == 0 {
		if c.valid != nil {
			c.valid = growBits(c.valid, c.n+n)
			bitutil.SetBitsTo(c.valid, int64(c.n), int64(n), true)
		}
		return
	}
	if c.valid == nil {
		c.valid = growBits(nil, c.n)
		bitutil.SetBitsTo(c.valid, 0, int64(c.n), true)
	}
	c.valid = growBits(c.valid, c.n+n)
	bitutil.CopyBitmap(src, start, n, c.valid, c.n)
	c.nulls += nulls
}

// growBits returns b with room for n bits, the new ones clear.
func growBits(b []byte, n int) []byte {
	need := int(bitutil.BytesForBits(int64(n)))
	if need > len(b) {
		b = append(b, make([]byte, need-len(b))...)
	}
	return b
}

// dictEqual tells whether two dictionaries hold the same values.
func dictEqual(a, b arrow.ArrayData) bool {
	if a == b {
		return true
	}
	x, y := array.MakeFromData(a), array.MakeFromData(b)
	defer x.Release()
	defer y.Release()
	return array.Equal(x, y)
}

// toPieces turns a dictCol into an otherCol, its cells so far one piece.
func (c *colBuf) toPieces() error {
	if c.n > 0 {
		p, err := c.finish()
		if err != nil {
			return err
		}
		c.pieces = []arrow.Array{p}
	}
	c.kind = otherCol
	return nil
}

// finish returns the gathered cells as an array that owns their memory.
func (c *colBuf) finish() (arrow.Array, error) {
	if c.kind == otherCol {
		defer func() {
			for _, p := range c.pieces {
				p.Release()
			}
			c.pieces = nil
		}()
		switch len(c.pieces) {
		case 0:
			return array.MakeArrayOfNull(memory.DefaultAllocator, c.typ, 0), nil
		case 1:
			c.pieces[0].Retain()
			return c.pieces[0], nil
		}
		return array.Concatenate(c.pieces, memory.DefaultAllocator)
	}
	var valid *memory.Buffer
	if c.valid != nil {
		valid = memory.NewBufferBytes(c.valid)
	}
	bufs := []*memory.Buffer{valid, nil}
	switch c.kind {
	case fixedCol, dictCol:
		// Back to bufferPool when the batch's last holder releases it:
		// the writers release a group's batch once it is encoded
		// (Parquet) or written (Arrow IPC).
		vals := memory.NewBufferWithAllocator(c.vals, bufferPool)
		defer vals.Release() // NewData holds its own reference
		bufs[1] = vals
	case boolCol:
		bufs[1] = memory.NewBufferBytes(growBits(c.vals, c.n))
	case binaryCol:
		bufs = []*memory.Buffer{valid, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(c.offs)), memory.NewBufferBytes(c.vals)}
	case largeBinCol:
		bufs = []*memory.Buffer{valid, memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(c.offs64)), memory.NewBufferBytes(c.vals)}
	}
	d := array.NewData(c.typ, c.n, bufs, nil, c.nulls, 0)
	defer d.Release()
	if c.kind == dictCol {
		d.SetDictionary(c.dict)
		c.dict.Release()
		c.dict = nil
	}
	return array.MakeFromData(d), nil
}
