package estimate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/pramkit/pramkit/pkg/pipeline"
	"github.com/pramkit/pramkit/pkg/table"
)

// Counting a release's rows is per-row work: the joint value g(x) of a row
// depends on that row alone, and counts add up in any order. So the rows
// are counted in parallel, one batch per worker (pkg/pipeline), and the
// batches' joint values are added to the tally in input order: the counts
// are exactly those of one sequential pass, and the first bad cell reported
// is the first in the file, whatever GOMAXPROCS and the batch size.

// pramCountSerial makes count read rows on one goroutine, cell by cell (the
// path before the parallel one): tests compare the two.
var pramCountSerial = false

// pramChunk is one batch of released rows on its way through the pipeline.
type pramChunk struct {
	rec   arrow.RecordBatch // retained by next, released by emit
	lines int64             // rows before the batch
}

// pramCounted is a counted batch: its counts by joint value (counts, a
// dense tally with K ≤ pramChunkCounts) or the joint value of each row
// (gs: for a dense tally of a larger K in row order, for a sparse one
// sorted), or the first bad cell's error. scratch goes back to the pool
// once emitted.
type pramCounted struct {
	rec     arrow.RecordBatch
	gs      []uint64
	counts  []int64
	err     error
	scratch *pramScratch
}

// pramScratch is a worker's buffers for one batch, reused batch after
// batch: at 10M rows allocating them anew was ~110 MB of garbage.
type pramScratch struct {
	codes  []uint32
	gs     []uint64
	counts []int64
}

// pramChunkCounts is the largest K for which a worker counts its batch
// into K counters, which the ordered emit step adds to the tally (K adds
// per batch instead of one per row, ≤ the rows of a dictionary batch).
// Tests set it to 0 to count row by row in emit, as a larger K is.
var pramChunkCounts = pramDictBatch

// countRows counts the rows of a release row file (not a count table) into
// t, in parallel; index[j] maps column j's labels to their codes.
func (rel *pramRelease) countRows(o *Options, in table.Reader, t *pramTally, index []labelCode, stride []uint64) (int64, error) {
	// A Parquet release whose columns are all dictionary-encoded is
	// counted row group by row group from the reader open already; only
	// when that fails is it opened again to be read batch by batch.
	grouped := false
	if dg := table.ParquetDictGroupsOf(in, rel.fileCol); dg != nil && t.dense != nil && !pramCountSerial {
		meter := o.Streams.Progress("estimate: read")
		restore := collectNot()
		rows, ok := rel.countGroups(dg, t, index, stride, meter)
		restore()
		meter.Done()
		if ok {
			return rows, nil
		}
		grouped = true
	}
	if d, err := rel.reopenWithDictionaries(o, in); err != nil {
		return 0, err
	} else if d != nil {
		defer d.Close()
		in = d
		defer collectLess()()
	}
	meter := o.Streams.Progress("estimate: read")
	defer meter.Done()
	if dg := table.ParquetDictGroups(in); dg != nil && t.dense != nil && !pramCountSerial && !grouped {
		if rows, ok := rel.countGroups(dg, t, index, stride, meter); ok {
			return rows, nil
		}
	}
	// Each chunk retains its batch until counted, and cells are only
	// coded (MapCoder's cache and errors copy what they keep): a CSV
	// release's batches can lend their buffers to later ones.
	table.ReuseCSVBuffers(in)
	// A CSV release's columns come coded from the parsing goroutines
	// (one label lookup per cell there, ~2× cheaper than the Coder's
	// string cache); the Coder then maps the batch's dictionary, which
	// is the codebook's labels but for cells that are no label.
	table.CodeCSVColumns(in, rel.cb.ReadLabels(rel.names))
	var lines int64
	next := func() (pramChunk, bool, error) {
		rec, err := in.Next()
		if errors.Is(err, io.EOF) {
			return pramChunk{}, false, nil
		}
		if err != nil {
			return pramChunk{}, false, err
		}
		rec.Retain()
		c := pramChunk{rec, lines}
		lines += rec.NumRows()
		return c, true, nil
	}
	// A dictionary in code order (an Arrow release's is the codebook's
	// labels) is mapped without the label index (Coder.InOrder).
	// Coders keep a batch's dictionary mapped: one set per worker, kept
	// for the run. (A sync.Pool lost its sets at each collection, and a
	// new set mapped a 1M-label dictionary again: ~4 MB and 1M lookups,
	// with up to three sets alive at once.)
	coders := make(chan []*table.Coder, runtime.GOMAXPROCS(0)+1)
	getCoders := func() []*table.Coder {
		select {
		case cs := <-coders:
			return cs
		default:
		}
		cs := make([]*table.Coder, len(index))
		for j := range cs {
			// Entries not in code order are looked up in blocks
			// (a row group's dictionary of a large column).
			cs[j] = table.LookupCoder(index[j]).InOrder(rel.labelOf(j)).Batch(rel.cb.Columns[j].LabelIndexes)
		}
		return cs
	}
	putCoders := func(cs []*table.Coder) {
		select {
		case coders <- cs:
		default:
		}
	}
	scratch := sync.Pool{New: func() any { return new(pramScratch) }}
	chunkCounts := t.dense != nil && len(t.dense) <= pramChunkCounts
	work := func(c pramChunk) (pramCounted, error) {
		sc := scratch.Get().(*pramScratch)
		out := pramCounted{rec: c.rec, scratch: sc}
		cs := getCoders()
		out.gs, out.err = rel.jointValues(c, cs, stride, sc)
		putCoders(cs)
		switch {
		case out.err != nil:
		case chunkCounts:
			if len(sc.counts) != len(t.dense) {
				sc.counts = make([]int64, len(t.dense))
			}
			clear(sc.counts)
			for _, g := range out.gs {
				sc.counts[g]++
			}
			out.counts, out.gs = sc.counts, nil
		case t.dense == nil:
			// Sorted, so that emit adds each distinct value once with its
			// run's length: a map per batch was 70 MB of garbage alive at
			// once at 4M distinct values.
			slices.Sort(out.gs)
		}
		return out, nil
	}
	var rows int64
	emit := func(c pramCounted) error {
		defer c.rec.Release()
		defer scratch.Put(c.scratch)
		if c.err != nil {
			return c.err
		}
		n := c.rec.NumRows()
		if c.counts != nil {
			for g, k := range c.counts {
				t.dense[g] += k
			}
		} else if t.dense != nil {
			for _, g := range c.gs {
				t.dense[g]++
			}
		} else {
			for i := 0; i < len(c.gs); {
				j := i + 1
				for j < len(c.gs) && c.gs[j] == c.gs[i] {
					j++
				}
				t.sparse[c.gs[i]] += int64(j - i)
				i = j
			}
			if err := t.maybeSpill(); err != nil {
				return err
			}
		}
		t.total += n
		rows += n
		meter.Add(n)
		return nil
	}
	err := pipeline.Run(context.Background(), pipeline.Options{}, next, work, emit)
	return rows, err
}

// jointValues returns the joint value g = Σ_j x_j·w_j of every row of the
// chunk (in sc.gs), or the error for its first cell (in row order, then
// column order, as the sequential path finds it) that is not a label of
// its column.
func (rel *pramRelease) jointValues(c pramChunk, coders []*table.Coder, stride []uint64, sc *pramScratch) ([]uint64, error) {
	n := int(c.rec.NumRows())
	if cap(sc.gs) < n {
		sc.gs, sc.codes = make([]uint64, n), make([]uint32, n)
	}
	gs, codes := sc.gs[:n], sc.codes[:n]
	clear(gs)
	bad, badCol := n, -1
	for j, cd := range coders {
		if i, _ := cd.Codes(codes, c.rec.Column(rel.fileCol[j]), 0); i >= 0 {
			if i < bad { // (an equal row in a later column comes after)
				bad, badCol = i, j
			}
			continue
		}
		w := stride[j]
		for i, x := range codes {
			gs[i] += uint64(x) * w
		}
	}
	if badCol >= 0 {
		s := table.ValuesOf(c.rec.Column(rel.fileCol[badCol])).String(bad)
		return nil, &table.DataError{File: rel.name, Row: c.lines + int64(bad) + 1, Column: rel.names[badCol],
			Err: fmt.Errorf("value %s is not one of the column's %d codebook labels: the file is not decrypt's output for this codebook; decrypt the release again, or pass the --codebook it was made with", table.QuoteCell(s), rel.cb.Columns[badCol].K())}
	}
	return gs, nil
}

// dictReadGCPercent is the collector's GOGC while a Parquet release is
// read as dictionaries. pqarrow's dictionary decoding allocates scratch per
// page and per batch (~650 MB on 10M rows, not reachable for pooling from
// here) beside a live heap of ~10 MB, so at GOGC 100 the collector ran 55
// times in a 0.3 s count — without a pause between cycles, and on 2 cores
// its fractional mark worker took a sixth of the CPU (0.43 s of CPU on
// 2 cores against 0.29 s on 1). At 200 it runs 24–29 times; the heap may
// grow to three times the live one, still under the soft memory limit
// (peak RSS 51 -> ~66 MB).
const dictReadGCPercent = 200

// collectLess sets GOGC to dictReadGCPercent, unless GOGC is set in the
// environment (it wins), and returns the function that restores it.
func collectLess() func() {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	old := debug.SetGCPercent(dictReadGCPercent)
	return func() { debug.SetGCPercent(old) }
}

// collectNot turns the collector off, unless GOGC is set in the
// environment or no memory limit is in force (cli.SoftMemoryLimit sets
// one), and returns the function that restores it. countGroups allocates
// a few buffers per worker and nothing per row group, yet at the default
// GOGC the collector ran once or twice in its ~40 ms on a 10M-row release
// (the heap goal is 4 MB), its mark phase taking a share of the two
// workers; should the heap grow, the memory limit still collects.
func collectNot() func() {
	if os.Getenv("GOGC") != "" || debug.SetMemoryLimit(-1) == math.MaxInt64 {
		return func() {}
	}
	old := debug.SetGCPercent(-1)
	return func() { debug.SetGCPercent(old) }
}

// pramDictBatch is the batch size of the dictionary read: pqarrow sizes
// each column's index scratch by the batch and allocates it anew for every
// row group, so 64 Ki-row batches made ~1 GB of garbage on 10M rows and the
// collector ran ~95 times; at 16 Ki rows a 10M-row release is counted in
// 0.49 s instead of 0.76 s (user+sys 0.47 s instead of 0.75 s) with 71 MB
// peak RSS instead of 88 (medians of 5 alternated runs on a loaded 2-core
// machine).
const pramDictBatch = 16 << 10

// reopenWithDictionaries reads a Parquet release file again with its
// release columns read as dictionaries (reopenAsDictionaries).
func (rel *pramRelease) reopenWithDictionaries(o *Options, in table.Reader) (table.Reader, error) {
	return reopenAsDictionaries(o, in, rel.names)
}

// reopenAsDictionaries reads a Parquet release file again with the columns
// names read as dictionaries (table.ReadOptions.DictColumns): Parquet
// stores categorical columns dictionary-encoded, and reading them so costs
// one label lookup per dictionary page instead of one string per cell. It
// returns nil (keep in) for other formats and standard input, which cannot
// be read twice, and for a reader that has been read.
func reopenAsDictionaries(o *Options, in table.Reader, names []string) (table.Reader, error) {
	if in.Format() != table.Parquet || table.IsStdio(in.Name()) || in.Name() == "stdin" || in.RowsRead() > 0 {
		return nil, nil
	}
	batch, err := table.BatchRows()
	if err != nil {
		return nil, err
	}
	opt := table.ReadOptions{Stdin: o.Streams.In, DictColumns: names, BatchSize: min(batch, pramDictBatch),
		ReuseBuffers: true} // (emit releases a batch once counted)
	// The file open already, its footer parsed once (table.ParquetReopen);
	// opened anew only when in does not allow it.
	if d, err := table.ParquetReopen(in, opt); d != nil || err != nil {
		return d, err
	}
	d, err := table.Open(in.Name(), opt)
	if err != nil {
		return nil, err
	}
	if !maps.Equal(d.Meta(), in.Meta()) || d.NumRows() != in.NumRows() {
		d.Close()
		return nil, fmt.Errorf("%s changed while estimate was reading it; run estimate again once it is complete", in.Name())
	}
	return d, nil
}
