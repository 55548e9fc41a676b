package perturb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/pipeline"
	"github.com/pramkit/pramkit/pkg/rng"
	"github.com/pramkit/pramkit/pkg/shuffle"
	"github.com/pramkit/pramkit/pkg/table"
)

// The local mechanisms (bitflip, ddps) randomize each row on its own, so
// they run in parallel, one chunk of rows per worker (pkg/pipeline), and
// write the chunks' reports in input order. A row's randomness is its own
// stream of the run's row-keyed generator (pkg/rng.Keyed: AES-256 of the
// run key, a tag and the row's position), never a generator shared by the
// rows: a seeded run gives the same reports at any GOMAXPROCS and chunk
// size. The run key is drawn from the run's source (--seed, else
// crypto/rand), which then shuffles the reports as before.

// localChunk is a chunk of input rows and, once worked, its reports.
type localChunk struct {
	rec   arrow.RecordBatch // retained by next, released by emit
	first int64             // 1-based row number of its first row
	out   arrow.RecordBatch // the reports, set by work
	// packed, set by work instead of out when the reports go to a
	// bit-mode shuffle (shuffle.Writer.Packed), holds them packed.
	packed []uint64
	// free, if work sets it, is called once out is written: out's memory
	// may then be reused (a table.Writer keeps nothing of a batch).
	free func()
}

// localKey draws the run's row-keyed generator from its source r.
func localKey(r *rand.Rand) *rng.Keyed {
	var k rng.Key
	for i := 0; i < len(k); i += 8 {
		w := r.Uint64()
		for b := range 8 {
			k[i+b] = byte(w >> (8 * b))
		}
	}
	return rng.NewKeyed(k)
}

// runLocal cuts in into chunks of at most chunkRows rows, calls work on
// each (concurrently: work must keep its state per call or per worker)
// and writes the chunks' reports to w in input order, in batches of
// batchRows rows whatever the chunks (a Parquet file's layout follows the
// batches written). It refuses an input
// without data rows, as eachBatch does.
func runLocal(o *Options, in table.Reader, chunkRows, batchRows int, w table.Writer, work func(c *localChunk) error) error {
	full := batchRows
	meter := o.Streams.Progress("perturb: rows")
	defer meter.Done()
	var cur arrow.RecordBatch // the reader's batch being cut
	var off, rows int64
	next := func() (*localChunk, bool, error) {
		for cur == nil || off == cur.NumRows() {
			rec, err := in.Next()
			if errors.Is(err, io.EOF) {
				return nil, false, nil
			}
			if err != nil {
				return nil, false, err
			}
			cur, off = rec, 0
		}
		end := min(off+int64(chunkRows), cur.NumRows())
		c := &localChunk{rec: cur.NewSlice(off, end), first: rows + 1}
		rows += end - off
		off = end
		return c, true, nil
	}
	do := func(c *localChunk) (*localChunk, error) {
		if err := work(c); err != nil {
			c.rec.Release()
			return nil, err
		}
		return c, nil
	}
	// A shuffle's output does not depend on the batches it is given
	// (shuffle.Shuffler.Write), so the chunks go to it as they are; a
	// Parquet or Arrow file's bytes do, so under --keep-order they are
	// rebatched.
	var out batchWriter = pipeline.NewRebatcher(w, full)
	if _, shuffled := w.(*shuffle.Writer); shuffled {
		out = direct{w}
	}
	defer out.Release()
	emit := func(c *localChunk) error {
		defer c.rec.Release()
		if c.free != nil {
			defer c.free()
		}
		if c.out == nil {
			if err := w.(*shuffle.Writer).WritePacked(c.packed); err != nil {
				return err
			}
			meter.Add(c.rec.NumRows())
			return nil
		}
		defer c.out.Release()
		if err := out.Write(c.out); err != nil {
			return err
		}
		meter.Add(c.out.NumRows())
		return nil
	}
	// One chunk per worker and one being written: more would hold more
	// memory (each chunk pins its input batch) for no more speed.
	opts := pipeline.Options{Workers: runtime.GOMAXPROCS(0)}
	opts.InFlight = opts.Workers + 1
	if err := pipeline.Run(context.Background(), opts, next, do, emit); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if in.RowsRead() == 0 {
		return fmt.Errorf("%s has no data rows: nothing to randomize", in.Name())
	}
	return nil
}

// packedShuffle tells whether w takes packed rows (shuffle.Writer.WritePacked).
func packedShuffle(w table.Writer) bool {
	sw, ok := w.(*shuffle.Writer)
	return ok && sw.Packed()
}

// batchWriter is where runLocal writes the chunks' reports: a
// pipeline.Rebatcher, or direct.
type batchWriter interface {
	Write(arrow.RecordBatch) error
	Flush() error
	Release()
}

// direct writes each batch as it is.
type direct struct{ w table.Writer }

func (d direct) Write(rec arrow.RecordBatch) error { return d.w.Write(rec) }
func (direct) Flush() error                        { return nil }
func (direct) Release()                            {}

// firstBad keeps the first bad cell of a chunk in the order a row-by-row
// loop meets them: by row, then by column.
type firstBad struct {
	row, col int
	err      error
}

func (b *firstBad) add(row, col int, err error) {
	if b.err == nil || row < b.row || (row == b.row && col < b.col) {
		*b = firstBad{row, col, err}
	}
}
