// Package shuffle puts a stream of Arrow record batches in a uniformly
// random order with bounded memory.
//
// A published table must not leak through its row order: a table sorted by
// a sensitive column and published row by row, with each value randomized
// independently, still tells each row's true value from the values of its
// neighbours (on UCI Adult sorted by occupation, the majority published
// occupation among a row's 200 neighbours is the true one 98.9 % of the
// time at retention 1/5). Every tool that publishes rows passes them
// through a Shuffler, so that the output's order is independent of the
// input's.
//
// # Algorithm: scatter-shuffle (Rao 1961; Sandelius 1962)
//
// Rows are held in memory up to a budget (Options.Budget) and, if the
// whole stream fits, Fisher–Yates shuffled there. Otherwise every row goes
// to one of B bucket files chosen uniformly at random and independently of
// everything else; at the end the buckets are read one by one, in the fixed
// order 0..B−1, each shuffled in memory by Fisher–Yates and emitted. A
// bucket larger than the budget is scattered again, the same way, into B
// sub-buckets (at most maxDepth levels).
//
// Why the result is a uniform permutation: fix any order π of the n rows.
// The output is π exactly when, for the bucket sizes n_0, …, n_{B−1} it
// implies, the first n_0 rows of π went to bucket 0, the next n_1 to
// bucket 1, and so on, and each bucket's shuffle put them in π's order.
// For each composition (n_0, …, n_{B−1}) of n there is exactly one such
// assignment, of probability B^−n, and then the independent uniform
// in-bucket shuffles agree with π with probability ∏ 1/n_b!. So
//
//	P(π) = Σ_{n_0+…+n_{B−1}=n} B^−n ∏_b 1/n_b!  =  B^−n · B^n / n!  =  1/n!
//
// by the multinomial theorem, the same for every π. A bucket scattered
// again is shuffled uniformly by the same argument, by induction on the
// depth. Fisher–Yates with unbiased draws (rand.Rand.IntN) is uniform.
//
// # Randomness
//
// The bucket draws and the shuffles come from the caller's source, so a
// seeded run is reproducible (for a given budget) and a production run
// draws from its CSPRNG. Every row gets its bucket draw in input order,
// whichever row makes the rows spill, so the output depends on the rows,
// the source and whether they spilled, not on the batches.
//
// # Memory: O(1) in N
//
// With budget M (Options.Budget, 16 MiB by default), B buckets (128) and
// w = min(32 KiB, max(4 KiB, M/B)) bytes of write buffer per spill file,
// a Shuffler holds at any time, whatever the number of rows N and the
// cells' values:
//
//   - rows in memory: at most M + 64 KiB bytes allocated. A row costs its
//     encoding (a string its length plus a varint, an integer a varint, a
//     float64 8 bytes, a dictionary code a varint; in bit mode ⌈c/64⌉
//     words for c columns and nothing else, see bits.go) plus a varint
//     length and 8 bytes for its position; positions are allocated in
//     blocks of 64 KiB (refBlock), the one slack over M. No chunk is made
//     that would take the rows past M: the rows spill instead. While
//     emitting, a bucket is read into memory only if its bytes plus 8 per
//     row fit in M (the same measure); a larger one is scattered again
//     into B sub-buckets, at any depth (a bucket at depth d holds about
//     N/B^(d+1) rows; maxDepth is a safety stop that needs N·row bytes
//     past M·B^64). A bucket of one row is emitted whatever its size: a
//     single row larger than M is the only way past the bound.
//   - write buffers: at most B·w bytes (4 MiB by default), those of the
//     files being written: the level-0 buckets while rows come in, or the
//     B sub-buckets of one re-scatter. A file's buffer is dropped once it
//     is written, and a released file is forgotten, so neither grows with
//     the number of re-scatters. Plus one 32 KiB read buffer while
//     re-scattering.
//   - open files: B per level of the bucket being emitted, B·(d+1) at
//     depth d; with the defaults d ≤ 1 up to N·row ≈ M·B² = 256 GiB.
//   - output: batches of at most Options.BatchRows rows, one being
//     decoded per core and up to 2 + GOMAXPROCS waiting for or in fn (the
//     caller's writer); bit mode, two (emit.go, bits.go).
//   - while emitting, the buckets being decoded are held in at most M
//     bytes all together (emit.go's rowSets), however many are in flight.
//
// None of these grows with N; TestMemoryBound checks the first three
// through the Shuffler's accounting at N spanning every regime (in
// memory, spilled, re-scattered once and twice), with a small budget.
//
// # Files
//
// Spill files hold the rows that are about to be published, nothing else,
// in a private directory (mode 0700, files 0600). Each is unlinked as soon
// as it is open and read back through its descriptor, so that even a killed
// process leaves only an empty directory; Emit removes the directory when
// it ends, and Close whatever happens: the caller defers Close. The
// default budget is small (16 MiB) because Go's collector lets the heap
// grow to about twice what is live: a 64 MiB budget cost 100 MB of peak
// RSS on a 1M-row table, 16 MiB about 20 MB.
package shuffle

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/pramkit/pramkit/pkg/table"
)

// Defaults of Options.
const (
	DefaultBudget  = 16 << 20 // bytes of rows held in memory
	DefaultBuckets = 128      // spill files per level
	maxDepth       = 64       // levels of re-scattering: a safety stop, never reached (see the package doc)
	chunkSize      = 1 << 20  // in-memory rows are appended to chunks of this size
	refBlock       = 1 << 13  // row positions per block of refs (64 KiB)
	spillBuffer    = 32 << 10 // write buffer per spill file
)

// Options tune a Shuffler; the zero value gives the defaults.
type Options struct {
	// Budget is how many bytes of rows are held in memory (encoded rows
	// plus 8 bytes per row). Default DefaultBudget.
	Budget int64
	// Buckets is the number of spill files per level, B ≥ 2. Default
	// DefaultBuckets.
	Buckets int
	// Dir is where the private spill directory is made. Default
	// os.TempDir().
	Dir string
	// BatchRows is the number of rows per emitted batch. Default
	// table.DefaultBatchSize/2, or as many rows as fit in
	// table.GroupBytes/2 when fewer (table.RowsWithin): the batches being decoded, handed over and
	// encoded (a Parquet writer copies one) are most of what an emitting
	// shuffle holds, and half-size batches took anonymize's and bitflip's
	// peak RSS from about 100 to 91 MB on 1M rows, at no cost in time.
	BatchRows int
	// Relabel, when set, is called once by Emit for each dictionary
	// column j with the last dictionary its batches had: it returns the
	// dictionary to emit the column over and, for each code of the old
	// one, its code in the new one (nil codes: emit over dict as it is).
	// A caller whose dictionary grew in order of first appearance sorts
	// the labels so that their order does not tell the input's.
	Relabel func(j int, dict arrow.Array) (arrow.Array, []int32)
	// Bits says that every column is int32 and holds only 0 and 1
	// (bitflip's reports): rows are then packed one bit per column (see
	// bits.go), several times cheaper to hold, spill and emit. Write
	// refuses any other value.
	Bits bool
}

// Shuffler collects batches with Write and emits their rows in a uniformly
// random order with Emit. Close releases it and removes its spill files.
type Shuffler struct {
	schema *arrow.Schema
	kinds  []arrow.Type
	dicts  []arrow.Array // of the dictionary columns: the last batch's dictionary
	remap  [][]int32     // of the dictionary columns, from Options.Relabel: old code → emitted code
	r      *rand.Rand
	opt    Options

	// In memory: rows as uvarint(length) ‖ encoded cells, in chunks.
	chunks [][]byte
	refs   refs  // chunk<<40 | offset of each held row
	held   int64 // bytes counted against the budget

	// Spilled: the private directory and the level-0 bucket files.
	dir     string
	forget  func()       // unregisters dir from table.TrackTemp
	prep    *spillPrep   // dir and the level-0 files, being made ahead
	buckets []*spillFile // level 0
	files   []*spillFile // every spill file made, to release
	seq     int          // the last spill file's name
	row     []byte       // scratch encoding of one row
	views   []colView    // the columns of the batch being written

	rows    int64
	emitted bool

	bits *bitRows // Options.Bits: the rows, packed

	acct accounting
}

// accounting is what a Shuffler holds, as it goes and at its peak, so
// that a test can check the package doc's bound without a huge table.
type accounting struct {
	held, peakHeld int64 // bytes allocated for rows held in memory
	bufs, peakBufs int64 // bytes of spill-file write buffers
	open, peakOpen int   // spill files open
	depth          int   // deepest level of re-scattering reached
}

// hold records that the rows held in memory now take n bytes.
func (a *accounting) hold(n int64) {
	a.held = n
	a.peakHeld = max(a.peakHeld, n)
}

// refs is the positions of held rows, in blocks of refBlock: a slice grown
// by append would hold up to twice what it needs, and both copies while
// it grows.
type refs struct {
	blocks [][]uint64
	n      int
}

// add appends one position. The first block grows by doubling from 64
// positions, so that a small table costs little; the others are made full.
func (r *refs) add(v uint64) {
	last := len(r.blocks) - 1
	switch {
	case last < 0:
		r.blocks = [][]uint64{make([]uint64, 0, 64)}
		last = 0
	case len(r.blocks[last]) < cap(r.blocks[last]):
	case cap(r.blocks[last]) < refBlock: // only the first block
		r.blocks[last] = append(make([]uint64, 0, min(refBlock, 2*cap(r.blocks[last]))), r.blocks[last]...)
	default:
		r.blocks = append(r.blocks, make([]uint64, 0, refBlock))
		last++
	}
	r.blocks[last] = append(r.blocks[last], v)
	r.n++
}

// at is the k-th position.
func (r *refs) at(k int) *uint64 { return &r.blocks[k/refBlock][k%refBlock] }

// bytes is what the blocks take.
func (r *refs) bytes() int64 {
	if len(r.blocks) == 0 {
		return 0
	}
	return int64(len(r.blocks)-1)*refBlock*8 + int64(8*cap(r.blocks[0]))
}

// spillFile is one bucket: an open file, read back through the same
// descriptor. path is "" once the file is unlinked.
type spillFile struct {
	path string
	f    *os.File
	w    *bufio.Writer // nil once the file is written
	rows int64         // rows written (the row codec; bit mode counts bytes)
}

// New returns a Shuffler for batches of schema, drawing from r. The columns
// must be utf8, int32, int64, float64 (what the tools publish) or
// table.DictType (categorical columns held as codes, table.Labels): such a
// column travels as its codes, a varint each, and comes out over the
// dictionary of the first batch written, which every batch must share.
func New(schema *arrow.Schema, r *rand.Rand, opt Options) (*Shuffler, error) {
	if r == nil {
		return nil, errors.New("shuffle.New: no random source")
	}
	if opt.Budget == 0 {
		opt.Budget = DefaultBudget
	}
	if opt.Buckets == 0 {
		opt.Buckets = DefaultBuckets
	}
	if opt.BatchRows == 0 {
		// Fewer rows for a wide table (bitflip's one-hot reports, an
		// int32 column a bit): a batch is decoded, handed over and
		// copied by the writer, so its cells, not its rows, are bounded.
		opt.BatchRows = table.RowsWithin(schema, table.GroupBytes/2, table.DefaultBatchSize/2)
	}
	switch {
	case opt.Budget < 0:
		return nil, fmt.Errorf("shuffle.New: budget %d bytes is negative", opt.Budget)
	case opt.Buckets < 2:
		return nil, fmt.Errorf("shuffle.New: %d buckets: need at least 2", opt.Buckets)
	case opt.BatchRows < 1:
		return nil, fmt.Errorf("shuffle.New: %d rows per batch: need at least 1", opt.BatchRows)
	}
	s := &Shuffler{schema: schema, r: r, opt: opt, kinds: make([]arrow.Type, schema.NumFields())}
	if opt.Bits {
		b, err := newBitRows(schema)
		if err != nil {
			return nil, err
		}
		s.bits = b
	}
	for j, f := range schema.Fields() {
		switch id := f.Type.ID(); id {
		case arrow.STRING, arrow.INT32, arrow.INT64, arrow.FLOAT64:
			s.kinds[j] = id
		case arrow.DICTIONARY:
			if !arrow.TypeEqual(f.Type, table.DictType) {
				return nil, fmt.Errorf("shuffle.New: column %q has type %s; a dictionary column must be %s", f.Name, f.Type, table.DictType)
			}
			s.kinds[j] = id
		default:
			return nil, fmt.Errorf("shuffle.New: column %q has type %s; only utf8, int32, int64, float64 and %s columns can be shuffled", f.Name, f.Type, table.DictType)
		}
	}
	return s, nil
}

// Rows is the number of rows written so far.
func (s *Shuffler) Rows() int64 { return s.rows }

// Spilled tells whether the rows outgrew the budget and went to files.
func (s *Shuffler) Spilled() bool { return s.dir != "" }

// Dir is the private spill directory, or "" when nothing was spilled.
func (s *Shuffler) Dir() string { return s.dir }

// Write adds the rows of rec, which the caller still owns. What Emit gives
// depends on the rows written and the source only, not on how they were
// cut into batches (the budget is checked row by row, and in bit mode held
// memory is a function of the row count), so a caller need not rebatch.
func (s *Shuffler) Write(rec arrow.RecordBatch) error {
	if err := s.check(rec); err != nil {
		return err
	}
	cols := rec.Columns()
	for j, c := range cols {
		if s.kinds[j] == arrow.DICTIONARY {
			if err := s.checkDict(j, c.(*array.Dictionary)); err != nil {
				return err
			}
			if err := s.checkCodes(j, c.(*array.Dictionary)); err != nil {
				return err
			}
		}
	}
	if s.bits != nil {
		return s.writeBits(cols, int(rec.NumRows()))
	}
	s.views = s.viewsOf(s.views[:0], cols)
	for i := range int(rec.NumRows()) {
		s.row = s.encode(s.row[:0], s.views, i)
		if err := s.add(s.row); err != nil {
			return err
		}
	}
	return nil
}

// check refuses a batch after Emit, of another schema, or with nulls.
func (s *Shuffler) check(rec arrow.RecordBatch) error {
	if s.emitted {
		return errors.New("shuffle: Write after Emit")
	}
	if !rec.Schema().Equal(s.schema) {
		return fmt.Errorf("shuffle: batch schema %s differs from %s", rec.Schema(), s.schema)
	}
	for j, c := range rec.Columns() {
		if c.NullN() > 0 {
			return fmt.Errorf("shuffle: column %q has null cells, which cannot be shuffled", s.schema.Field(j).Name)
		}
	}
	return nil
}

// Encoded is a batch's rows in the shuffle's row encoding, made by Encode
// for WriteEncoded. Its buffers are reused by the next Encode into it.
type Encoded struct {
	rec   arrow.RecordBatch // the batch encoded, not retained
	data  []byte            // the rows, one after another
	ends  []int             // the end of each row in data
	views []colView
}

// Encode encodes the rows of rec into e, for WriteEncoded. It reads only
// what New fixed (the schema), so that several goroutines may encode
// batches at once: encoding was half of what Write costs, and a stage
// whose workers randomize rows in parallel gave it all to the one
// goroutine writing to the shuffle (anonymize --mechanism global: the
// goroutine the run waited on). It makes no random draw: what Emit gives
// is the same as after Write. Not in bit mode (Options.Bits).
func (s *Shuffler) Encode(rec arrow.RecordBatch, e *Encoded) error {
	if s.bits != nil {
		return errors.New("shuffle: Encode in bit mode (Options.Bits); use WritePacked")
	}
	e.rec, e.data, e.ends = nil, e.data[:0], e.ends[:0]
	cols := rec.Columns()
	for j, c := range cols {
		if c.NullN() > 0 {
			return fmt.Errorf("shuffle: column %q has null cells, which cannot be shuffled", s.schema.Field(j).Name)
		}
		if s.kinds[j] == arrow.DICTIONARY {
			if err := s.checkCodes(j, c.(*array.Dictionary)); err != nil {
				return err
			}
		}
	}
	e.views = s.viewsOf(e.views[:0], cols)
	for i := range int(rec.NumRows()) {
		e.data = s.encode(e.data, e.views, i)
		e.ends = append(e.ends, len(e.data))
	}
	e.rec = rec
	return nil
}

// WriteEncoded adds the rows of rec, encoded by Encode into e, as Write
// adds them: the same rows, the same random draws, in the same order.
func (s *Shuffler) WriteEncoded(rec arrow.RecordBatch, e *Encoded) error {
	if e.rec != rec || len(e.ends) != int(rec.NumRows()) {
		return errors.New("shuffle: WriteEncoded of a batch other than the one encoded")
	}
	if err := s.check(rec); err != nil {
		return err
	}
	for j, c := range rec.Columns() {
		if s.kinds[j] == arrow.DICTIONARY {
			if err := s.checkDict(j, c.(*array.Dictionary)); err != nil {
				return err
			}
		}
	}
	start := 0
	for _, end := range e.ends {
		if err := s.add(e.data[start:end]); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// colView is a batch column as encode reads it: a string column, or the
// values of a fixed-width one (a dictionary column's indices).
type colView struct {
	str *array.String
	i32 []int32
	i64 []int64
	f64 []float64
}

// viewsOf types the columns of a batch once, so that encode reads a cell
// with no interface call (GetValueIndex switched on the index type for
// every dictionary cell: a tenth of anonymize's shuffle).
func (s *Shuffler) viewsOf(v []colView, cols []arrow.Array) []colView {
	for j, c := range cols {
		var cv colView
		switch s.kinds[j] {
		case arrow.STRING:
			cv.str = c.(*array.String)
		case arrow.INT32:
			cv.i32 = c.(*array.Int32).Int32Values()
		case arrow.INT64:
			cv.i64 = c.(*array.Int64).Int64Values()
		case arrow.FLOAT64:
			cv.f64 = c.(*array.Float64).Float64Values()
		case arrow.DICTIONARY:
			cv.i32 = c.(*array.Dictionary).Indices().(*array.Int32).Int32Values()
		}
		v = append(v, cv)
	}
	return v
}

// checkDict keeps the dictionary of column j's batches, and checks that
// d's is the same (the same labels; a dictionary shared by every batch, as
// table.Labels makes them, costs one pointer comparison) or extends it: a
// dictionary may grow between batches by labels appended at its end (a
// stage numbering values as they come, anonymize's codes for values a
// codebook lacks), since a code keeps its label; the rows come out over
// the last, longest one (checkCodes checks the batch's indices).
func (s *Shuffler) checkDict(j int, d *array.Dictionary) error {
	if s.dicts == nil {
		s.dicts = make([]arrow.Array, len(s.kinds))
	}
	dict := d.Dictionary()
	switch prev := s.dicts[j]; {
	case prev == nil:
		dict.Retain()
		s.dicts[j] = dict
	case prev.Data() == dict.Data():
	case dict.Len() >= prev.Len() && array.SliceEqual(prev, 0, int64(prev.Len()), dict, 0, int64(prev.Len())):
		if dict.Len() > prev.Len() {
			dict.Retain()
			prev.Release()
			s.dicts[j] = dict
		}
	default:
		return fmt.Errorf("shuffle: column %q changes its dictionary between batches (other than by labels added at its end)", s.schema.Field(j).Name)
	}
	return nil
}

// checkCodes checks that column j's codes are within its batch's
// dictionary (which checkDict finds the same as the batches' before, or
// extending it), so that Emit never builds an index past it.
func (s *Shuffler) checkCodes(j int, d *array.Dictionary) error {
	n := int32(d.Dictionary().Len())
	for _, k := range d.Indices().(*array.Int32).Int32Values() {
		if k < 0 || k >= n {
			return fmt.Errorf("shuffle: column %q has code %d past its dictionary of %d entries", s.schema.Field(j).Name, k, n)
		}
	}
	return nil
}

// encode appends row i of the columns to b.
func (s *Shuffler) encode(b []byte, cols []colView, i int) []byte {
	for j, c := range cols {
		switch s.kinds[j] {
		case arrow.STRING:
			v := c.str.Value(i)
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		case arrow.INT32:
			b = binary.AppendVarint(b, int64(c.i32[i]))
		case arrow.INT64:
			b = binary.AppendVarint(b, c.i64[i])
		case arrow.FLOAT64:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(c.f64[i]))
		case arrow.DICTIONARY:
			b = binary.AppendUvarint(b, uint64(uint32(c.i32[i])))
		}
	}
	return b
}

// add holds one encoded row in memory, or sends it to a random bucket once
// the rows outgrew the budget.
func (s *Shuffler) add(row []byte) error {
	s.rows++
	if s.dir != "" {
		if err := writeRow(s.buckets[s.r.IntN(len(s.buckets))], row); err != nil {
			return spillError(err)
		}
		return nil
	}
	need := binary.MaxVarintLen64 + len(row)
	last := len(s.chunks) - 1
	if last < 0 || cap(s.chunks[last])-len(s.chunks[last]) < need {
		// Chunks double from 4 KiB to chunkSize, so that a small table
		// costs little.
		size := 4 << 10
		if last >= 0 {
			size = min(chunkSize, 2*cap(s.chunks[last]))
		}
		size = max(size, need)
		if s.held+int64(size)+8 > s.opt.Budget {
			// The chunk would take the rows past the budget: spill
			// instead of making it. The rows get the bucket draws, in
			// order, that they would get if the chunk were made and the
			// rows then spilled, so the output is the same; only the
			// memory is not taken.
			if err := s.spill(); err != nil {
				return err
			}
			if err := writeRow(s.buckets[s.r.IntN(len(s.buckets))], row); err != nil {
				return spillError(err)
			}
			return nil
		}
		c := make([]byte, 0, size)
		s.chunks = append(s.chunks, c)
		s.held += int64(cap(c))
		last++
	}
	c := s.chunks[last]
	s.refs.add(uint64(last)<<40 | uint64(len(c)))
	c = binary.AppendUvarint(c, uint64(len(row)))
	s.chunks[last] = append(c, row...)
	s.held += 8
	s.acct.hold(s.held - 8*int64(s.refs.n) + s.refs.bytes())
	if s.held > s.opt.Budget {
		return s.spill()
	}
	if 2*s.held > s.opt.Budget && s.prep == nil {
		s.prepareSpill()
	}
	return nil
}

// spillError says what to do when a temporary file cannot be written.
func spillError(err error) error {
	return fmt.Errorf("shuffling the rows: writing a temporary file: %w (free space, or set TMPDIR to a folder with room for the output)", err)
}

// writeRow writes one length-prefixed row to sf.
func writeRow(sf *spillFile, row []byte) error {
	// The length goes straight into the writer's buffer: a local array
	// passed to Write escaped, 16 bytes of garbage a row (130 MB on
	// anonymize's 10M-row bench table).
	if _, err := sf.w.Write(binary.AppendUvarint(sf.w.AvailableBuffer(), uint64(len(row)))); err != nil {
		return err
	}
	sf.rows++
	_, err := sf.w.Write(row)
	return err
}

// spill makes the private directory and the buckets, and scatters the held
// rows to them.
func (s *Shuffler) spill() error {
	if err := s.spillDir(); err != nil {
		return err
	}
	for k := range s.refs.n {
		ref := *s.refs.at(k)
		if err := writeRow(s.buckets[s.r.IntN(len(s.buckets))], rowAt(s.chunks[ref>>40], int(ref&(1<<40-1)))); err != nil {
			return spillError(err)
		}
	}
	s.chunks, s.refs, s.held = nil, refs{}, 0
	s.acct.hold(0)
	return nil
}

// spillDir makes the private directory and the level-0 buckets, or takes
// them from prepareSpill.
func (s *Shuffler) spillDir() error {
	if s.prep == nil {
		s.prepareSpill()
	}
	p := s.prep
	<-p.done
	s.prep = nil
	s.dir, s.forget = p.dir, p.forget // removed by Close, even after an error
	if p.err != nil {
		return p.err
	}
	s.seq = len(p.files)
	s.buckets = p.files
	s.adopt(p.files)
	return nil
}

// spillPrep is the spill directory and the level-0 files, being made on a
// goroutine of their own.
type spillPrep struct {
	done   chan struct{} // closed when made, or failed
	cancel atomic.Bool   // set by Close: stop making files
	dir    string
	forget func()
	files  []*spillFile // open, without write buffers
	err    error
}

// prepareSpill starts making the spill directory and the level-0 files on
// a goroutine, for spillDir to take. Add and addPacked call it once the
// held rows pass half the budget, so that the rows do not wait for the
// files when they spill: creating 128 files took 60 to 90 ms of system
// time on this project's 2-core VMs (ext4), during which perturb
// bitflip's workers all stood still behind the goroutine writing to the
// Shuffler. A table that ends before it spills has the files removed by
// Close (which stops the goroutine first).
func (s *Shuffler) prepareSpill() {
	p := &spillPrep{done: make(chan struct{})}
	s.prep = p
	dir, budget, n := s.opt.Dir, s.opt.Budget, s.opt.Buckets
	go func() {
		defer close(p.done)
		if p.dir, p.forget, p.err = makeSpillDir(dir, budget); p.err != nil {
			return
		}
		p.files, p.err = openSpillFiles(p.dir, 1, n, p.cancel.Load)
	}()
}

// makeSpillDir makes a private directory for spill files in dir (""
// for the default temporary folder), tracked by table.TrackTemp so that
// a signal that ends the run removes it; forget untracks it.
func makeSpillDir(dir string, budget int64) (path string, forget func(), err error) {
	path, err = os.MkdirTemp(dir, "pramkit-shuffle-")
	if err != nil {
		return "", nil, fmt.Errorf("shuffling the rows: they outgrew %d MiB of memory, and no folder for temporary files could be made (%w): set TMPDIR to a writable folder with room for the output", budget>>20, err)
	}
	// The files in it are unlinked as they are made; the folder would
	// stay.
	if forget, err = table.TrackTemp(path); err != nil {
		os.RemoveAll(path)
		return "", nil, err
	}
	if err := os.Chmod(path, 0o700); err != nil {
		forget()
		os.RemoveAll(path)
		return "", nil, fmt.Errorf("shuffling the rows: %w", err)
	}
	return path, forget, nil
}

// openSpillFiles creates n empty files in dir, named first, first+1, …
// Each file is unlinked as soon as it is open (where the system allows
// it), so that a process killed before Close leaves only an empty
// directory behind. It stops early, with the files made, once stop (if
// not nil) reports true; after an error, it closes and removes them.
func openSpillFiles(dir string, first, n int, stop func() bool) ([]*spillFile, error) {
	out := make([]*spillFile, 0, n)
	for k := range n {
		if stop != nil && stop() {
			break
		}
		path := filepath.Join(dir, strconv.Itoa(first+k))
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			for _, sf := range out {
				sf.discard()
			}
			return nil, spillError(err)
		}
		sf := &spillFile{path: path, f: f}
		if os.Remove(path) == nil {
			sf.path = ""
		}
		out = append(out, sf)
	}
	return out, nil
}

// discard closes and removes a spill file that no Shuffler counts.
func (sf *spillFile) discard() {
	sf.f.Close()
	if sf.path != "" {
		os.Remove(sf.path)
	}
}

// createBuckets creates B empty spill files in the spill directory, with
// their write buffers.
func (s *Shuffler) createBuckets() ([]*spillFile, error) {
	// Forget the files released (emitted or scattered again), so that
	// what the Shuffler keeps does not grow with the number of
	// re-scatters, hence with N.
	s.files = slices.DeleteFunc(s.files, func(sf *spillFile) bool { return sf.f == nil })
	out, err := openSpillFiles(s.dir, s.seq+1, s.opt.Buckets, nil)
	if err != nil {
		return nil, err
	}
	s.seq += len(out)
	s.adopt(out)
	return out, nil
}

// adopt gives new bucket files their write buffers, of spillBuffer bytes
// (less for a small budget), and counts them as the Shuffler's.
func (s *Shuffler) adopt(files []*spillFile) {
	buf := int(min(spillBuffer, max(4<<10, s.opt.Budget/int64(s.opt.Buckets))))
	a := &s.acct
	for _, sf := range files {
		sf.w = bufio.NewWriterSize(sf.f, buf)
		s.files = append(s.files, sf)
		a.open++
		a.bufs += int64(buf)
		a.peakOpen, a.peakBufs = max(a.peakOpen, a.open), max(a.peakBufs, a.bufs)
	}
}

// flushBuckets writes out the files' buffers, returning the first error,
// and drops the buffers: nothing more is written to these files, and the
// level-0 buffers (B of them, 4 MiB by default) would otherwise be held
// while every bucket is emitted.
func (s *Shuffler) flushBuckets(files []*spillFile) error {
	for _, sf := range files {
		if err := sf.w.Flush(); err != nil {
			return spillError(err)
		}
		s.acct.bufs -= int64(sf.w.Size())
		sf.w = nil
	}
	return nil
}

// release closes a spill file and removes it if it was not unlinked.
func (s *Shuffler) release(sf *spillFile) {
	if sf.w != nil {
		s.acct.bufs -= int64(sf.w.Size())
		sf.w = nil
	}
	if sf.f != nil {
		sf.f.Close()
		sf.f = nil
		s.acct.open--
	}
	if sf.path != "" {
		os.Remove(sf.path)
		sf.path = ""
	}
}

// rowAt returns the encoded row whose length prefix starts at off.
func rowAt(c []byte, off int) []byte {
	n, k := binary.Uvarint(c[off:])
	return c[off+k : off+k+int(n)]
}

// Emit calls fn with the rows in a uniformly random order, in batches of
// Options.BatchRows rows that fn must not keep (they are released after fn
// returns). It can be called once; the spill files are gone when it returns.
func (s *Shuffler) Emit(fn func(arrow.RecordBatch) error) error {
	if s.emitted {
		return errors.New("shuffle: Emit called twice")
	}
	s.emitted = true
	s.relabel()
	if s.bits == nil {
		if err := s.emitRowsParallel(fn); err != nil {
			return err
		}
		return s.Close()
	}
	if err := s.emitBitsOverlapped(fn); err != nil {
		return err
	}
	return s.Close()
}

// relabel applies Options.Relabel to the dictionary columns.
func (s *Shuffler) relabel() {
	if s.opt.Relabel == nil || s.dicts == nil {
		return
	}
	s.remap = make([][]int32, len(s.dicts))
	for j, d := range s.dicts {
		if d == nil {
			continue
		}
		nd, codes := s.opt.Relabel(j, d)
		if codes == nil {
			continue
		}
		nd.Retain()
		d.Release()
		s.dicts[j], s.remap[j] = nd, codes
	}
}

// emitBits decodes every row packed as bits (Shuffler.bits), shuffled,
// into batches for e.fn.
func (out *emitter) emitBits() error {
	b := out.s.bits
	return out.emitRows(func() error {
		err := out.shuffledBits(b.chunks, b.n)
		b.chunks = nil
		return err
	}, out.bucketBits, out.flushBits)
}

// emitRows emits the rows held in memory (inMemory shuffles and emits
// them, then drops them) or, once they spilled, the level-0 buckets one
// after another (bucket), and then the last, partial batch (flush).
func (out *emitter) emitRows(inMemory func() error, bucket func(sf *spillFile, depth int) error, flush func() error) error {
	s := out.s
	if s.dir == "" {
		if err := inMemory(); err != nil {
			return err
		}
		s.acct.hold(0)
	} else {
		if err := s.flushBuckets(s.buckets); err != nil {
			return err
		}
		for _, sf := range s.buckets {
			if err := bucket(sf, 0); err != nil {
				return err
			}
		}
	}
	return flush()
}

// Close removes the spill directory, if any. It is safe to call more than
// once and after Emit.
func (s *Shuffler) Close() error {
	if p := s.prep; p != nil {
		p.cancel.Store(true)
		<-p.done
		s.prep = nil
		for _, sf := range p.files {
			sf.discard()
		}
		if p.dir != "" {
			s.dir, s.forget = p.dir, p.forget
		}
	}
	for _, sf := range s.files {
		s.release(sf)
	}
	s.files, s.buckets = nil, nil
	if s.dir == "" {
		return nil
	}
	err := os.RemoveAll(s.dir)
	s.dir = ""
	if s.forget != nil {
		s.forget()
		s.forget = nil
	}
	if err != nil {
		return fmt.Errorf("shuffle: removing spill files: %w", err)
	}
	return nil
}

// emitter decodes shuffled bit-mode rows into batches (the row codec's
// are emit.go's rowEmitter).
type emitter struct {
	s *Shuffler

	bitBatch []uint64        // the batch being built, packed
	appended int64           // rows put in batches so far
	packed   chan<- []uint64 // full batches, to unpack and hand to fn
	failed   <-chan struct{} // closed once fn has failed, with *werr set
	werr     *error
}

// scatterAgain emits a spill file (size bytes, at depth) too large to
// shuffle in memory: rescatter spreads its rows over new files, and bucket
// emits those, one after another, a level deeper.
func (e *emitter) scatterAgain(sf *spillFile, size int64, depth int, rescatter func(*spillFile, int64) ([]*spillFile, error), bucket func(*spillFile, int) error) error {
	subs, err := rescatter(sf, size)
	if err != nil {
		return err
	}
	e.s.acct.depth = max(e.s.acct.depth, depth+1)
	for _, sub := range subs {
		if err := bucket(sub, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// rescatter sends every row of sf (size bytes) to one of B new files
// chosen uniformly at random, and releases sf.
func (e *emitter) rescatter(sf *spillFile, size int64) ([]*spillFile, error) {
	subs, err := e.s.createBuckets()
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(io.NewSectionReader(sf.f, 0, size), spillBuffer)
	var row []byte
	for err == nil {
		var n uint64
		if n, err = binary.ReadUvarint(br); err != nil {
			break
		}
		if uint64(cap(row)) < n {
			row = make([]byte, n)
		}
		row = row[:n]
		if _, err = io.ReadFull(br, row); err != nil {
			break
		}
		err = writeRow(subs[e.s.r.IntN(len(subs))], row)
	}
	e.s.release(sf)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	if err == nil {
		err = e.s.flushBuckets(subs)
	}
	if err != nil {
		return nil, spillError(err)
	}
	return subs, nil
}

// Writer is a table.Writer that publishes its rows in a uniformly random
// order: Write collects them in a Shuffler, Commit emits them to the
// underlying writer and commits it, Abort removes the spill files and
// aborts the underlying writer.
type Writer struct {
	w table.Writer
	s *Shuffler
}

// NewWriter puts a Shuffler in front of w, whose batches have schema.
func NewWriter(w table.Writer, schema *arrow.Schema, r *rand.Rand, opt Options) (*Writer, error) {
	s, err := New(schema, r, opt)
	if err != nil {
		return nil, err
	}
	return &Writer{w: w, s: s}, nil
}

// Write collects the rows of rec.
func (sw *Writer) Write(rec arrow.RecordBatch) error { return sw.s.Write(rec) }

// Encode encodes rec for WriteEncoded (Shuffler.Encode), on any goroutine.
func (sw *Writer) Encode(rec arrow.RecordBatch, e *Encoded) error { return sw.s.Encode(rec, e) }

// WriteEncoded collects the rows of rec, encoded into e by Encode.
func (sw *Writer) WriteEncoded(rec arrow.RecordBatch, e *Encoded) error {
	return sw.s.WriteEncoded(rec, e)
}

// WritePacked collects packed rows (Shuffler.WritePacked; bit mode only).
func (sw *Writer) WritePacked(rows []uint64) error { return sw.s.WritePacked(rows) }

// Packed tells whether WritePacked can be used: the shuffle is in bit mode.
func (sw *Writer) Packed() bool { return sw.s.bits != nil }

// Commit writes the rows in a random order, then commits.
func (sw *Writer) Commit() error {
	if err := sw.s.Emit(sw.w.Write); err != nil {
		return err
	}
	return sw.w.Commit()
}

// Abort removes the spill files and what was written.
func (sw *Writer) Abort() {
	sw.s.Close()
	sw.w.Abort()
}

// Format is the underlying writer's format.
func (sw *Writer) Format() table.Format { return sw.w.Format() }
