package table

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Cursor reads some integer columns of a table in blocks of rows of the
// caller's choosing, whatever the batch boundaries of the underlying
// reader, so that several tables (curators' ciphertexts, a release and its
// keys) can be read in lockstep. Every value is checked to lie in its
// alphabet Z_k. Memory is one reader batch plus the caller's block.
type Cursor struct {
	r     Reader
	idx   []int
	ks    []uint32
	names []string
	// secret: the values are pads, so errors never quote them.
	secret bool
	rec    arrow.RecordBatch
	off    int
	// coders read columns that are not plain int32: text (CSV) and
	// dictionaries (Parquet read with DictColumns), whose entries are parsed
	// once per batch rather than once per row.
	coders []*Coder
	rows   int64
	eof    bool
}

// NewCursor returns a cursor over the columns called names of r, whose
// values must lie in Z_{ks[j]}. secret marks key material (pads), which
// errors never quote.
func NewCursor(r Reader, names []string, ks []uint32, secret bool) (*Cursor, error) {
	if len(names) != len(ks) || len(names) == 0 {
		return nil, fmt.Errorf("table.NewCursor: %d names and %d alphabet sizes", len(names), len(ks))
	}
	schema := r.Schema()
	idx := make([]int, len(names))
	for j, name := range names {
		ix := schema.FieldIndices(name)
		if len(ix) == 0 {
			have := make([]string, schema.NumFields())
			for i, f := range schema.Fields() {
				have[i] = f.Name
			}
			return nil, fmt.Errorf("%s: the metadata lists column %q but the table has no such column (columns: %s); the file was edited: re-create it", r.Name(), name, strings.Join(have, ", "))
		}
		idx[j] = ix[0]
	}
	coders := make([]*Coder, len(ks))
	for j, k := range ks {
		coders[j] = NewCoder(func(s string) (uint32, error) {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil || v < 0 || v >= int64(k) {
				return 0, errNotInAlphabet
			}
			return uint32(v), nil
		})
	}
	return &Cursor{r: r, idx: idx, ks: ks, names: names, secret: secret, coders: coders}, nil
}

// Rows is the number of rows delivered so far.
func (c *Cursor) Rows() int64 { return c.rows }

// Read fills dst[j][:n] with the next n rows of column j, n = len(dst[0])
// unless the table ends first; it returns n (0 at the end, with a nil
// error).
func (c *Cursor) Read(dst [][]uint32) (int, error) {
	return c.advance(len(dst[0]), func(filled, t int) error {
		for j, ci := range c.idx {
			if err := c.copyColumn(dst[j][filled:filled+t], c.rec.Column(ci), j); err != nil {
				return err
			}
		}
		return nil
	})
}

// advance moves the cursor on by want rows, unless the table ends first,
// batch by batch: take gets each run of t rows of the current batch from
// c.off on, for the block's rows [filled, filled+t). It returns the rows
// moved over.
func (c *Cursor) advance(want int, take func(filled, t int) error) (int, error) {
	filled := 0
	for filled < want {
		if c.rec == nil || c.off == int(c.rec.NumRows()) {
			if c.eof {
				break
			}
			rec, err := c.r.Next()
			if errors.Is(err, io.EOF) {
				c.eof, c.rec = true, nil
				break
			}
			if err != nil {
				return filled, err
			}
			c.rec, c.off = rec, 0
			continue
		}
		t := min(want-filled, int(c.rec.NumRows())-c.off)
		if err := take(filled, t); err != nil {
			return filled, err
		}
		c.off += t
		c.rows += int64(t)
		filled += t
	}
	return filled, nil
}

// Defer is Read that leaves the copy of the int32 columns (what encrypt
// and perturb write) to a later Pending.Fill, on any goroutine: it moves
// the cursor on by the rows Read would deliver and keeps the batches they
// are in (retained) in p; the cells of other columns (text, dictionaries,
// whose coders are the cursor's own) are coded into dst now, as Read does.
// p.Fill(dst) then copies and checks the rest, with the errors Read would
// give (the cells of the columns coded now are checked first).
//
// Why: the goroutine that reads a table for a parallel stage (perturb,
// decrypt) is on every chunk's path, and the copy was a third of its work;
// a worker copies its own chunk instead.
func (c *Cursor) Defer(dst [][]uint32, p *Pending) (int, error) {
	p.Release()
	p.cur = c
	return c.advance(len(dst[0]), func(filled, t int) error {
		for j, ci := range c.idx {
			if a := c.rec.Column(ci); !plainInt32(a) {
				if err := c.copyColumn(dst[j][filled:filled+t], a, j); err != nil {
					return err
				}
			}
		}
		c.rec.Retain()
		p.pieces = append(p.pieces, pendingPiece{rec: c.rec, off: c.off, n: t, at: filled, rows: c.rows, file: c.r.Name()})
		return nil
	})
}

// Pending is the rows of a Cursor.Defer still to be copied.
type Pending struct {
	cur    *Cursor // for its columns, alphabets and names only
	pieces []pendingPiece
}

// pendingPiece is rows [off, off+n) of rec, for dst rows [at, at+n); rows
// is the rows the cursor had delivered before them, file the file they
// are in (a reader may have moved on to the next when Fill runs).
type pendingPiece struct {
	rec        arrow.RecordBatch
	off, n, at int
	rows       int64
	file       string
}

// Fill copies the deferred cells into dst (the block given to Defer, or
// one of the same shape), checking each against its alphabet, and
// releases the batches. The cursor's fields it reads are fixed at
// NewCursor, so Fill may run while the cursor reads on.
func (p *Pending) Fill(dst [][]uint32) error {
	defer p.Release()
	c := p.cur
	for _, pc := range p.pieces {
		for j, ci := range c.idx {
			a := pc.rec.Column(ci)
			if !plainInt32(a) {
				continue
			}
			if i, v, bad := copyInt32(dst[j][pc.at:pc.at+pc.n], a.(*array.Int32).Int32Values()[pc.off:pc.off+pc.n], c.ks[j]); bad {
				return c.valueErrorAt(pc.file, pc.rows, j, i, int64(v), true)
			}
		}
	}
	return nil
}

// Release releases the batches of rows not filled (Fill does it).
func (p *Pending) Release() {
	for _, pc := range p.pieces {
		pc.rec.Release()
	}
	clear(p.pieces)
	p.pieces = p.pieces[:0]
}

// plainInt32 tells whether a is an int32 column without nulls, which
// copyInt32 reads.
func plainInt32(a arrow.Array) bool {
	ints, ok := a.(*array.Int32)
	return ok && ints.NullN() == 0
}

// copyInt32 copies vals into dst, stopping at the first value outside
// Z_k: its index and value, and true.
func copyInt32(dst []uint32, vals []int32, k uint32) (int, int32, bool) {
	for i, v := range vals {
		// A negative int32 becomes ≥ 2^31 ≥ k as uint32: one compare.
		if uint32(v) >= k {
			return i, v, true
		}
		dst[i] = uint32(v)
	}
	return 0, 0, false
}

// copyColumn copies len(dst) cells of column j from the current offset,
// with a fast path for int32 columns (what encrypt and perturb write).
func (c *Cursor) copyColumn(dst []uint32, a arrow.Array, j int) error {
	if plainInt32(a) {
		if i, v, bad := copyInt32(dst, a.(*array.Int32).Int32Values()[c.off:c.off+len(dst)], c.ks[j]); bad {
			return c.valueError(j, i, int64(v), true)
		}
		return nil
	}
	if bad, _ := c.coders[j].Codes(dst, a, c.off); bad >= 0 {
		v, ok := ValuesOf(a).Int(c.off + bad)
		return c.valueError(j, bad, v, ok)
	}
	return nil
}

// errNotInAlphabet is the Cursor coders' error; valueError words it.
var errNotInAlphabet = errors.New("not an integer in the alphabet")

// valueError reports cell i of the current block in column j: value v, or
// isInt false when the cell is empty or not an integer.
func (c *Cursor) valueError(j, i int, v int64, isInt bool) error {
	return c.valueErrorAt(c.r.Name(), c.rows, j, i, v, isInt)
}

// valueErrorAt is valueError for a block of file that starts after row
// rows.
func (c *Cursor) valueErrorAt(file string, rows int64, j, i int, v int64, isInt bool) error {
	e := &DataError{File: file, Row: rows + int64(i) + 1, Column: c.names[j]}
	k := c.ks[j]
	switch {
	case c.secret:
		// Never quote a pad, not even a damaged one.
		e.Err = fmt.Errorf("the pad is not an integer in 0..%d (value not shown: it is key material); the key file is damaged: use the key file encrypt wrote", k-1)
	case !isInt:
		e.Err = fmt.Errorf("the cell is empty or not an integer, but ciphertext cells are integers in 0..%d; the file was damaged or not written by encrypt: re-create it with encrypt", k-1)
	default:
		e.Err = fmt.Errorf("ciphertext value %d is outside 0..%d (k = %d in the metadata); the file was damaged or not written by encrypt for this codebook: re-create it with encrypt", v, k-1, k)
	}
	return e
}

// Int32Schema returns a schema of int32 columns with the given names: the
// shape of encrypted tables, releases and key files.
func Int32Schema(names []string) *arrow.Schema {
	fields := make([]arrow.Field, len(names))
	for i, n := range names {
		fields[i] = arrow.Field{Name: n, Type: arrow.PrimitiveTypes.Int32}
	}
	return arrow.NewSchema(fields, nil)
}

// Int32Batch returns the first n values of each of cols as a batch of
// schema's int32 columns, sharing cols' memory (no copy). Values must be
// below 2^31, which every k ≤ codebook.MaxK guarantees, so a uint32 reads
// as the same int32. cols must not change until the batch is written and
// released.
func Int32Batch(schema *arrow.Schema, cols [][]uint32, n int) arrow.RecordBatch {
	arrs := make([]arrow.Array, len(cols))
	for j, col := range cols {
		arrs[j] = int32Column(col[:n])
	}
	rec := array.NewRecordBatch(schema, arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	return rec
}

// int32Column is col as an int32 column sharing its memory (no copy): the
// values are below 2^31 (Int32Batch), so each uint32 reads as the same
// int32.
func int32Column(col []uint32) arrow.Array {
	buf := memory.NewBufferBytes(arrow.Uint32Traits.CastToBytes(col))
	data := array.NewData(arrow.PrimitiveTypes.Int32, len(col), []*memory.Buffer{nil, buf}, nil, 0, 0)
	defer data.Release()
	return array.NewInt32Data(data)
}

// Block is a reusable block of rows of d uint32 columns.
func Block(d, rows int) [][]uint32 {
	b := make([][]uint32, d)
	for j := range b {
		b[j] = make([]uint32, rows)
	}
	return b
}
