package table

import (
	"context"
	"fmt"
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
//
// A group whose bits would pass wideHeldBytes (past 256 bit columns)
// holds them a block of rows at a time: each full block goes to a
// temporary file, unlinked at once, where column j's blocks follow one
// another at j·stride, so that its bits are one read when its chunk is
// encoded (columnBits). At L = 4,000 bits a group is 32 MB of bits, with
// the shuffle's and the binary's memory 124 MB of peak RSS held; written
// out, it is the system's page cache, not the process's.
type wideGroup struct {
	schema  *arrow.Schema
	memos   []dictMemo
	capRows int
	rows    int
	cols    []wideCol
	// The blocks: blockRows rows each (a multiple of 8, so that a block
	// is whole bytes; capRows when the group is held whole), blocks of
	// them in spill so far, a column's bytes in spill.
	blockRows, blocks int
	spill             *scratchFile
	stride            int64
}

// wideCol is one column of a wideGroup: full, or else bits.
type wideCol struct {
	bits []byte  // the block's cells: cell i is bit i%8 of byte i/8
	full *colBuf // the column's cells, when they are not (all) bits
}

// wideHeldBytes bounds the bits a wideGroup holds in memory (a variable:
// tests lower it to make small tables spill).
var wideHeldBytes = 2 << 20

func newWideGroup(schema *arrow.Schema, capRows int, memos []dictMemo) (*wideGroup, error) {
	g := &wideGroup{schema: schema, memos: memos, capRows: capRows, cols: make([]wideCol, schema.NumFields()), blockRows: capRows}
	bitCols := 0
	for _, f := range schema.Fields() {
		if f.Type.ID() == arrow.INT32 {
			bitCols++
		}
	}
	if bitCols*((capRows+7)/8) > wideHeldBytes {
		g.blockRows = max(8, wideHeldBytes/bitCols*8)
		blocks := (capRows + g.blockRows - 1) / g.blockRows
		g.stride = int64(blocks * g.blockRows / 8)
		var err error
		if g.spill, err = newScratchFile(true); err != nil {
			return nil, fmt.Errorf("a temporary file for the bits of a row group (%d columns): %w (set TMPDIR to a folder with room)", bitCols, err)
		}
	}
	g.reset()
	return g, nil
}

// reset empties the group for the next row group: an int32 column starts
// as bits again.
func (g *wideGroup) reset() {
	g.rows, g.blocks = 0, 0
	for j, f := range g.schema.Fields() {
		c := &g.cols[j]
		c.full = nil
		switch {
		case f.Type.ID() != arrow.INT32:
		case c.bits == nil:
			c.bits = make([]byte, (g.blockRows+7)/8)
		default:
			clear(c.bits)
		}
	}
}

// close lets go of the temporary file.
func (g *wideGroup) close() {
	g.spill.close()
	g.spill = nil
}

// blockLeft is the number of rows that the block being gathered still
// takes.
func (g *wideGroup) blockLeft() int { return (g.blocks+1)*g.blockRows - g.rows }

// flushBlock writes the full block of each column held as bits to spill.
func (g *wideGroup) flushBlock() error {
	n := g.blockRows / 8
	for j := range g.cols {
		c := &g.cols[j]
		if c.full != nil || c.bits == nil {
			continue
		}
		if _, err := g.spill.WriteAt(c.bits[:n], int64(j)*g.stride+int64(g.blocks*n)); err != nil {
			return fmt.Errorf("writing the bits of a row group to a temporary file: %w (set TMPDIR to a folder with room)", err)
		}
		clear(c.bits)
	}
	g.blocks++
	return nil
}

// columnBits returns the group's cells of column j, held as bits, as
// bits: its block itself, or else the blocks in spill read into buf
// (grown as needed) followed by the block's.
func (g *wideGroup) columnBits(j int, buf []byte) ([]byte, error) {
	c := &g.cols[j]
	if g.blocks == 0 {
		return c.bits, nil
	}
	n := g.blocks * g.blockRows / 8
	buf = slices.Grow(buf[:0], n+len(c.bits))[:n]
	if _, err := g.spill.ReadAt(buf, int64(j)*g.stride); err != nil {
		return nil, fmt.Errorf("reading the bits of a row group from a temporary file: %w", err)
	}
	return append(buf, c.bits...), nil
}

// newColBuf starts gathering column j as rowGroupBuf does.
func (g *wideGroup) newColBuf(j int) *colBuf {
	f := g.schema.Field(j)
	c := &colBuf{name: f.Name, memo: &g.memos[j]}
	c.init(f.Type, g.capRows)
	return c
}

// appendRows copies rows [off, off+n) of rec, at most blockLeft.
func (g *wideGroup) appendRows(rec arrow.RecordBatch, off, n int) error {
	for j, a := range rec.Columns() {
		c := &g.cols[j]
		if c.full == nil {
			v, ok := a.(*array.Int32)
			if ok && c.bits != nil && v.NullN() == 0 && packBits(c.bits, g.rows-g.blocks*g.blockRows, v.Int32Values()[off:off+n]) {
				continue
			}
			// Not bits: the cells so far become a colBuf's.
			c.full = g.newColBuf(j)
			if g.rows > 0 && c.bits != nil {
				bits, err := g.columnBits(j, nil)
				if err != nil {
					return err
				}
				prev := int32Bits(bits, g.rows)
				err = c.full.appendSlice(prev, 0, g.rows)
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
		k := min(n-off, p.groupRows-p.wide.rows, p.wide.blockLeft())
		if err := p.wide.appendRows(rec, off, k); err != nil {
			return err
		}
		off += k
		if p.wide.blockLeft() == 0 && p.wide.rows < p.groupRows {
			if err := p.wide.flushBlock(); err != nil {
				return err
			}
		}
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
			var buf []byte // a column's bits read from spill
			for j := range jobs {
				switch col := cols[j]; {
				case p.failed.Load() != nil:
					if col != nil {
						col.Release()
					}
					done[j] <- nil
				case col == nil:
					bits, err := g.columnBits(j, buf)
					if err == nil {
						buf = bits
						err = p.writeBits(rg, j, bits, g.rows)
					}
					done[j] <- err
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
