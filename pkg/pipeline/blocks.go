package pipeline

import "github.com/apache/arrow-go/v18/arrow"

// Blocks is a Rebatcher for stages whose chunks are blocks of uint32
// codes (table.Block): it writes batches of exactly Size rows (the last one
// shorter), whatever the chunks' sizes, so that the output's bytes do not
// depend on the chunk size — the same batches a Rebatcher writes from the
// same rows.
//
// Why not a Rebatcher: it keeps the rows of a partial batch as Arrow
// copies and joins them with a second copy (array.Concatenate), two
// allocations and two copies of every cell; in encrypt they were a tenth
// of the CPU, mostly in allocating and zeroing large buffers. Blocks
// copies each row once, into buffers of its own reused for every batch: a
// table.Writer is done with a batch when Write returns (it encodes or
// copies it), so the buffers may be filled again at once.
type Blocks struct {
	w     BatchWriter
	size  int
	batch func(cols [][]uint32, n int) arrow.RecordBatch
	buf   [][]uint32 // size rows of each column
	rows  int        // rows in buf
	views [][]uint32 // the caller's columns, for a whole batch written from them
}

// BatchChunkRows is the rows of a chunk that Blocks writes from its own
// memory: an output batch (table.DefaultBatchSize) by default, four times
// ChunkRows in tests that change it. perturb's gamma-diagonal and decrypt
// cut their inputs so: the copy into a batch was on the goroutine every
// chunk waits on. A chunk of them is 4 bytes a row and a column, and pins
// its inputs' batches until its worker copies them (table.Cursor.Defer).
func BatchChunkRows() int { return 4 * ChunkRows }

// NewBlocks returns Blocks writing batches of size rows of d columns to w;
// batch makes a batch of the first n rows of cols, sharing their memory
// (table.Int32Batch, table.CodesBatch).
func NewBlocks(w BatchWriter, d, size int, batch func(cols [][]uint32, n int) arrow.RecordBatch) *Blocks {
	buf := make([][]uint32, d)
	for j := range buf {
		buf[j] = make([]uint32, size)
	}
	return &Blocks{w: w, size: size, batch: batch, buf: buf}
}

// Write adds rows [lo, hi) of cols (one slice per column) after those
// already given. It keeps no reference to cols.
func (b *Blocks) Write(cols [][]uint32, lo, hi int) error {
	if b.rows == 0 && hi-lo == b.size {
		// A whole batch at a batch boundary: written from the caller's
		// memory, which the writer is done with when Write returns.
		b.views = b.views[:0]
		for _, c := range cols {
			b.views = append(b.views, c[lo:hi])
		}
		rec := b.batch(b.views, b.size)
		err := b.w.Write(rec)
		rec.Release()
		return err
	}
	for lo < hi {
		take := min(b.size-b.rows, hi-lo)
		for j, c := range cols {
			copy(b.buf[j][b.rows:], c[lo:lo+take])
		}
		b.rows += take
		lo += take
		if b.rows == b.size {
			if err := b.write(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Flush writes the rows still pending as one (short) batch.
func (b *Blocks) Flush() error {
	if b.rows == 0 {
		return nil
	}
	return b.write()
}

func (b *Blocks) write() error {
	rec := b.batch(b.buf, b.rows)
	err := b.w.Write(rec)
	rec.Release()
	b.rows = 0
	return err
}
