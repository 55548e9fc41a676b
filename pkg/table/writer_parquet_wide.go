package table

import (
	"context"
	"runtime"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// wideGroup gathers a row group of a wide table (parquetWriter.sem set):
// bitflip's one-hot reports, an int32 column of 0/1 per bit. Such a
// column is held as bits while its cells are all 0 or 1 — 8 KiB a column
// for a 64Ki-row group instead of rowGroupBuf's 256 KiB: 8 MB at L =
// 1,000 bits, where rowGroupBuf took 262 MB — and unpacked to int32 only
// while its chunk is encoded (int32Bits), so the chunk's pages are those
// of the same cells gathered by rowGroupBuf. A column of another type, or
// once a cell is neither 0 nor 1 (or null), is gathered as rowGroupBuf
// gathers it (colBuf). The group is reused from one row group to the
// next.
type wideGroup struct {
	schema  *arrow.Schema
	memos   []dictMemo
	capRows int
	rows    int
	cols    []wideCol
}

// wideCol is one column of a wideGroup: full, or else bits.
type wideCol struct {
	bits []byte  // cell i is bit i%8 of byte i/8
	full *colBuf // the column's cells, when they are not (all) bits
}

func newWideGroup(schema *arrow.Schema, capRows int, memos []dictMemo) *wideGroup {
	g := &wideGroup{schema: schema, memos: memos, capRows: capRows, cols: make([]wideCol, schema.NumFields())}
	g.reset()
	return g
}

// reset empties the group for the next row group: an int32 column starts
// as bits again.
func (g *wideGroup) reset() {
	g.rows = 0
	for j, f := range g.schema.Fields() {
		c := &g.cols[j]
		c.full = nil
		switch {
		case f.Type.ID() != arrow.INT32:
		case c.bits == nil:
			c.bits = make([]byte, (g.capRows+7)/8)
		default:
			clear(c.bits)
		}
	}
}

// newColBuf starts gathering column j as rowGroupBuf does.
func (g *wideGroup) newColBuf(j int) *colBuf {
	f := g.schema.Field(j)
	c := &colBuf{name: f.Name, memo: &g.memos[j]}
	c.init(f.Type, g.capRows)
	return c
}

// appendRows copies rows [off, off+n) of rec.
func (g *wideGroup) appendRows(rec arrow.RecordBatch, off, n int) error {
	for j, a := range rec.Columns() {
		c := &g.cols[j]
		if c.full == nil {
			v, ok := a.(*array.Int32)
			if ok && c.bits != nil && v.NullN() == 0 && packBits(c.bits, g.rows, v.Int32Values()[off:off+n]) {
				continue
			}
			// Not bits: the cells so far become a colBuf's.
			c.full = g.newColBuf(j)
			if g.rows > 0 && c.bits != nil {
				prev := int32Bits(c.bits, g.rows)
				err := c.full.appendSlice(prev, 0, g.rows)
				prev.Release()
				if err != nil {
					return err
				}
			}
		}
		if err := c.full.appendSlice(a, off, n); err != nil {
			return err
		}
	}
	g.rows += n
	return nil
}

// packBits sets bits [at, at+len(v)) of bits to v, which must be clear,
// and reports whether every value of v is 0 or 1 (if not, bits is left
// in part written; the caller then drops them).
func packBits(bits []byte, at int, v []int32) bool {
	i := 0
	for ; i < len(v) && (at+i)&7 != 0; i++ {
		if uint32(v[i]) > 1 {
			return false
		}
		bits[(at+i)>>3] |= byte(v[i]) << ((at + i) & 7)
	}
	for ; i+8 <= len(v); i += 8 {
		g := v[i : i+8 : i+8]
		if uint32(g[0]|g[1]|g[2]|g[3]|g[4]|g[5]|g[6]|g[7]) > 1 {
			return false
		}
		bits[(at+i)>>3] = byte(g[0] | g[1]<<1 | g[2]<<2 | g[3]<<3 | g[4]<<4 | g[5]<<5 | g[6]<<6 | g[7]<<7)
	}
	for ; i < len(v); i++ {
		if uint32(v[i]) > 1 {
			return false
		}
		bits[(at+i)>>3] |= byte(v[i]) << ((at + i) & 7)
	}
	return true
}

// int32Bits returns the first n bits of bits as an int32 column of 0/1, in
// a buffer of bufferPool that goes back to it when the column is released.
func int32Bits(bits []byte, n int) arrow.Array {
	b := bufferPool.allocate(4*n, false)
	vals := arrow.Int32Traits.CastFromBytes(b)
	i := 0
	for ; i+8 <= n; i += 8 {
		x, g := int32(bits[i>>3]), vals[i:i+8:i+8]
		g[0], g[1], g[2], g[3] = x&1, x>>1&1, x>>2&1, x>>3&1
		g[4], g[5], g[6], g[7] = x>>4&1, x>>5&1, x>>6&1, x>>7&1
	}
	for ; i < n; i++ {
		vals[i] = int32(bits[i>>3] >> (i & 7) & 1)
	}
	buf := memory.NewBufferWithAllocator(b, bufferPool)
	defer buf.Release()
	d := array.NewData(arrow.PrimitiveTypes.Int32, n, []*memory.Buffer{nil, buf}, nil, 0, 0)
	defer d.Release()
	return array.MakeFromData(d)
}

// writeWide copies rec's rows into the wide group, writing each row group
// once full.
func (p *parquetWriter) writeWide(rec arrow.RecordBatch) error {
	n := int(rec.NumRows())
	for off := 0; off < n; {
		if p.wide == nil {
			p.wide = newWideGroup(p.schema, p.groupRows, p.memos)
		}
		k := min(n-off, p.groupRows-p.wide.rows)
		if err := p.wide.appendRows(rec, off, k); err != nil {
			return err
		}
		off += k
		if p.wide.rows == p.groupRows {
			if err := p.writeWideGroup(); err != nil {
				return err
			}
		}
	}
	return nil
}

// wideWindow is how many columns of a wide row group, per core, may be
// encoded ahead of the chunk being copied to the file.
const wideWindow = 4

// writeWideGroup writes the wide group as a row group and empties it. The
// columns are encoded in order, one per core at a time, and each chunk
// goes to the file (pqRowGroup.closeColumn) once it and those before it
// are encoded: at most wideWindow chunks a core are held encoded, where
// startGroup holds the whole row group's until it closes (at L = 1,000
// bits of 64Ki rows, ~8 MB of pages).
func (p *parquetWriter) writeWideGroup() (err error) {
	g := p.wide
	defer g.reset()
	defer func() {
		if err != nil {
			p.failed.Store(&err)
		}
	}()
	rg, err := p.fw.appendRowGroup()
	if err != nil {
		return err
	}
	// Gathered columns are finished here, in order (stringDicts' maps are
	// shared by the row groups); bit columns are unpacked by their
	// encoder.
	n := len(g.cols)
	cols := make([]arrow.Array, n)
	wide := make([]bool, n)
	release := func(from int) {
		for _, a := range cols[from:] {
			if a != nil {
				a.Release()
			}
		}
	}
	for j := range g.cols {
		if c := g.cols[j].full; c != nil {
			a, err := c.finish()
			if err != nil {
				release(0)
				return err
			}
			cols[j], wide[j] = p.strs.forColumn(j, a, int(rg.ordinal)%openGroups)
		}
	}
	procs := runtime.GOMAXPROCS(0)
	jobs := make(chan int, wideWindow*procs)
	done := make([]chan error, n)
	for j := range done {
		done[j] = make(chan error, 1)
	}
	var wg sync.WaitGroup
	for range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				switch col := cols[j]; {
				case p.failed.Load() != nil:
					if col != nil {
						col.Release()
					}
					done[j] <- nil
				case col == nil:
					done[j] <- p.writeBits(rg, j, g.cols[j].bits, g.rows)
				default:
					ctx := pqarrow.NewArrowWriteContext(context.Background(), nil)
					done[j] <- p.writeColumn(ctx, rg, j, col, wide[j])
				}
			}
		}()
	}
	sent := 0
	for j := 0; j < n && err == nil; j++ {
		for ; sent < n && sent < j+cap(jobs); sent++ {
			jobs <- sent
		}
		if err = <-done[j]; err == nil {
			err = rg.closeColumn(j)
		}
	}
	close(jobs)
	wg.Wait()
	release(sent)
	if err != nil {
		return err
	}
	return rg.close()
}

// writeBits writes the n cells of a column held as bits into column chunk
// j of rg: as intPages would the same cells (bitPages), or else through
// writeColumn, unpacked.
func (p *parquetWriter) writeBits(rg *pqRowGroup, j int, bits []byte, n int) error {
	hi := int32(0)
	// The bits past cell n are clear (packBits sets cells only).
	if slices.ContainsFunc(bits[:(n+7)/8], func(b byte) bool { return b != 0 }) {
		hi = 1
	}
	if ownIntPages && rg.canWriteIntPages(j, hi) {
		return rg.bitPages(j, bits, n, hi)
	}
	return p.writeColumn(pqarrow.NewArrowWriteContext(context.Background(), nil), rg, j, int32Bits(bits, n), false)
}
