package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/progress"
	"github.com/pramkit/pramkit/pkg/shuffle"
	"github.com/pramkit/pramkit/pkg/table"
)

// The local mechanisms (perturb's bitflip and ddps, anonymize's global)
// randomize each row on its own, so they run in parallel, one chunk of
// rows per worker, and write the chunks' output in input order. A row's
// randomness is its own stream of the run's row-keyed generator
// (rng.Keyed: AES-256 of the run key, a tag and the row's position),
// never a generator shared by the rows: a seeded run gives the same output
// at any GOMAXPROCS and chunk size.

// LocalChunk is a chunk of input rows and, once worked, its output.
type LocalChunk struct {
	Rec   arrow.RecordBatch // retained by RunLocal, released once emitted
	First int64             // 1-based row number of its first row
	Out   arrow.RecordBatch // the output rows, set by work
	// Packed, set by work instead of Out when the output goes to a
	// bit-mode shuffle (shuffle.Writer.Packed), holds the rows packed.
	Packed []uint64
	// Free, if work sets it, is called once Out is written: Out's memory
	// may then be reused (a table.Writer keeps nothing of a batch).
	Free func()

	// enc is Out in a shuffle's row encoding, made on the worker
	// (shuffle.Writer.Encode) when the output goes to a shuffle.
	enc *shuffle.Encoded
}

// LocalOptions tune RunLocal.
type LocalOptions struct {
	// ChunkRows is the most rows a chunk holds.
	ChunkRows int
	// BatchRows is the rows of each batch written when w is not a shuffle
	// (a Parquet or Arrow file's layout follows the batches written).
	BatchRows int
	// Meter, when set, counts the rows written; RunLocal ends it.
	Meter *progress.Meter
	// Task names what the run does, for the error about an input without
	// data rows ("… has no data rows: nothing to <Task>").
	Task string
}

// RunLocal cuts in into chunks of at most opt.ChunkRows rows, calls work
// on each (concurrently: work must keep its state per call or per
// worker) and writes the chunks' output to w in input order: as they are
// to a shuffle, whose output does not depend on the batches it is given
// (shuffle.Shuffler.Write), else in batches of opt.BatchRows rows
// whatever the chunks. It refuses an input without data rows. Memory:
// one chunk per worker and one being written, each pinning its input
// batch.
func RunLocal(in table.Reader, w table.Writer, opt LocalOptions, work func(c *LocalChunk) error) error {
	defer opt.Meter.Done()
	var cur arrow.RecordBatch // the reader's batch being cut
	var off, rows int64
	next := func() (*LocalChunk, bool, error) {
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
		end := min(off+int64(opt.ChunkRows), cur.NumRows())
		c := &LocalChunk{Rec: cur.NewSlice(off, end), First: rows + 1}
		rows += end - off
		off = end
		return c, true, nil
	}
	sw, shuffled := w.(*shuffle.Writer)
	// The chunks' encodings, reused: at most InFlight chunks are out.
	encs := sync.Pool{New: func() any { return new(shuffle.Encoded) }}
	do := func(c *LocalChunk) (*LocalChunk, error) {
		err := work(c)
		if err == nil && shuffled && c.Out != nil {
			// Encoded here, on all cores: on the one goroutine that
			// writes to the shuffle it was that goroutine's largest
			// cost, and the run waited on it.
			c.enc = encs.Get().(*shuffle.Encoded)
			err = sw.Encode(c.Out, c.enc)
		}
		if err != nil {
			c.release(&encs)
			return nil, err
		}
		return c, nil
	}
	var out interface {
		Write(arrow.RecordBatch) error
		Flush() error
		Release()
	} = NewRebatcher(w, opt.BatchRows)
	if shuffled {
		out = direct{w}
	}
	defer out.Release()
	emit := func(c *LocalChunk) error {
		defer c.release(&encs)
		switch {
		case c.Out == nil:
			if err := sw.WritePacked(c.Packed); err != nil {
				return err
			}
			opt.Meter.Add(c.Rec.NumRows())
			return nil
		case c.enc != nil:
			if err := sw.WriteEncoded(c.Out, c.enc); err != nil {
				return err
			}
		default:
			if err := out.Write(c.Out); err != nil {
				return err
			}
		}
		opt.Meter.Add(c.Out.NumRows())
		return nil
	}
	// One chunk per worker and one being written: more would hold more
	// memory (each chunk pins its input batch) for no more speed.
	ro := Options{Workers: runtime.GOMAXPROCS(0)}
	ro.InFlight = ro.Workers + 1
	if err := Run(context.Background(), ro, next, do, emit); err != nil {
		return err
	}
	if err := out.Flush(); err != nil {
		return err
	}
	if in.RowsRead() == 0 {
		return fmt.Errorf("%s has no data rows: nothing to %s", in.Name(), opt.Task)
	}
	return nil
}

// release releases what the chunk holds once it is written or dropped: its
// input and output batches, and its encoding back to encs.
func (c *LocalChunk) release(encs *sync.Pool) {
	if c.Out != nil {
		c.Out.Release()
	}
	if c.Free != nil {
		c.Free()
	}
	c.Rec.Release()
	if c.enc != nil {
		encs.Put(c.enc)
		c.enc = nil
	}
}

// PackedShuffle tells whether w takes packed rows (shuffle.Writer.WritePacked).
func PackedShuffle(w table.Writer) bool {
	sw, ok := w.(*shuffle.Writer)
	return ok && sw.Packed()
}

// direct writes each batch as it is.
type direct struct{ w table.Writer }

func (d direct) Write(rec arrow.RecordBatch) error { return d.w.Write(rec) }
func (direct) Flush() error                        { return nil }
func (direct) Release()                            {}
