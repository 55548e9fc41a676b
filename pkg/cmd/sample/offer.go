package sample

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/pipeline"
	"github.com/pramkit/pramkit/pkg/sample"
	"github.com/pramkit/pramkit/pkg/table"
)

// A row's priority is a PRF of the secret and the row's id or position
// (pkg/sample): it depends on that row alone, so the priorities — an AES
// block per row by position, a CBC-MAC per row by id, the costly part of
// sampling after parsing — are computed in parallel, one batch per worker
// (pkg/pipeline). The sampler then takes the batches' rows in input order,
// as the sequential loop did: most rows cost it one comparison with the
// m-th best priority (Wants), and since it sees the same rows with the same
// priorities in the same order, the sample, the rows noticed as repeated
// ids and every message are those of the sequential loop, whatever
// GOMAXPROCS and the chunk size.

// offerSerial makes offerRows compute priorities on one goroutine (the
// path before the parallel one): tests compare the two.
var offerSerial = false

// errEmptyID is the error for a row without an id.
var errEmptyID = errors.New("the row id is empty; every row needs an id, or omit --id to sample by position")

// offerChunk is one batch of input rows on its way through the pipeline.
type offerChunk struct {
	rec  arrow.RecordBatch  // retained by next, released by emit
	pos  uint64             // 0-based position of its first row over all inputs
	file string             // the file it comes from, and
	row  int64              // the 1-based row of its first row there
	pri  []sample.Priority  // set by work
	pris *[]sample.Priority // pri's memory, back to the pool once emitted
	text *table.RowText     // the rows' text (row-text mode), released by emit
}

// offerRowText makes offerRowsParallel read a CSV input in row-text mode
// (table.LendRowText): the reader builds the id column alone (no column
// when sampling by position), and the cells of a row the sampler keeps
// are read from the text of its record. Most rows are dropped at a
// comparison of their priority, and building every cell of every row was
// most of sample's time. Tests turn it off to compare.
var offerRowText = true

// release releases the chunk's batch and text.
func (c *offerChunk) release() {
	c.rec.Release()
	if c.text != nil {
		c.text.Release()
	}
}

// offerRowsParallel is offerRows with the priorities computed in parallel.
func (o *Options) offerRowsParallel(in table.Reader, secret []byte, idCol int, keep []int, k keeper) (int64, error) {
	meter := o.Streams.Progress("sample: read")
	defer meter.Done()
	var build []string // in row-text mode, the batches hold the id column alone
	if idCol >= 0 {
		build = []string{in.Schema().Field(idCol).Name}
	}
	text := offerRowText && table.LendRowText(in, build)
	idAt := idCol // the id column in the batches
	if text && idCol >= 0 {
		idAt = 0
	}
	cols := keep // a kept row's cells: the kept columns, then the id
	if idCol >= 0 {
		cols = append(slices.Clone(keep), idCol)
	}
	var pos uint64
	next := func() (*offerChunk, bool, error) {
		rec, err := in.Next()
		if errors.Is(err, io.EOF) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		rec.Retain()
		// The reader may move on to the next file before the chunk is
		// emitted: name the chunk's file and rows now.
		c := &offerChunk{rec: rec, pos: pos, file: in.Name(), row: rowOf(in, int64(pos))}
		if text {
			c.text = table.RowTextOf(in)
		}
		pos += uint64(rec.NumRows())
		return c, true, nil
	}
	prfs := sync.Pool{New: func() any {
		p, err := sample.NewPRF(secret)
		if err != nil {
			panic(err) // runSample made one from this secret already
		}
		return p
	}}
	// The chunks' priority slices, reused: at most InFlight are out.
	pris := sync.Pool{New: func() any { return new([]sample.Priority) }}
	work := func(c *offerChunk) (*offerChunk, error) {
		prf := prfs.Get().(*sample.PRF)
		defer prfs.Put(prf)
		n := int(c.rec.NumRows())
		p := pris.Get().(*[]sample.Priority)
		if cap(*p) < n {
			*p = make([]sample.Priority, n)
		}
		c.pri, c.pris = (*p)[:n], p
		if idCol < 0 {
			prf.Positions(c.pri, c.pos)
			return c, nil
		}
		ids := table.ValuesOf(c.rec.Column(idAt))
		for i := range c.pri {
			id := ids.String(i)
			if id == "" {
				c.release()
				return nil, &table.DataError{File: c.file, Row: c.row + int64(i), Column: o.ID, Err: errEmptyID}
			}
			c.pri[i] = prf.ID(id)
		}
		return c, nil
	}
	emit := func(c *offerChunk) error {
		defer c.release()
		defer pris.Put(c.pris)
		var row int
		var rowErr error
		// One closure per chunk: Offer calls it only for a kept row.
		var copyRow func() []string
		if c.text != nil {
			copyRow = func() []string {
				cells, err := c.text.Row(row, cols)
				if err != nil {
					rowErr = err
				}
				return cells
			}
		} else {
			kc := newKeptCells(c.rec, keep, idCol)
			copyRow = func() []string { return kc.row(row) }
		}
		for i, p := range c.pri {
			row = i
			if err := k.Offer(p, copyRow); err != nil {
				return err
			}
			if rowErr != nil {
				return &table.DataError{File: c.file, Row: c.row + int64(i), Err: rowErr}
			}
		}
		meter.Add(int64(len(c.pri)))
		return nil
	}
	if err := pipeline.Run(context.Background(), pipeline.Options{}, next, work, emit); err != nil {
		return 0, err
	}
	return int64(pos), nil
}
