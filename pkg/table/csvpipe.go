package table

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// maxCSVRecord bounds one CSV record: a chunk that has grown this long
// without a record boundary is parsed as it is, which reports the record's
// error (a stray quote makes the rest of a file look like one quoted value).
var maxCSVRecord = 64 << 20

// maxCSVChunk is the size of the chunks a CSV input is cut into, at the
// default batch size: a batch's worth of typical rows, large enough to
// amortise the hand-offs between goroutines.
const maxCSVChunk = 1 << 20

// csvChunkBytes, when positive, replaces the chunk size (tests).
var csvChunkBytes int

// csvChunkTarget is the chunk size for batches of batch rows: 64 bytes a
// row, at most maxCSVChunk, so that small batch sizes (ReadOptions,
// PRAMKIT_BATCH_ROWS) also make chunk boundaries fall between few rows.
func csvChunkTarget(batch int) int {
	if csvChunkBytes > 0 {
		return csvChunkBytes
	}
	return min(max(batch*64, 1), maxCSVChunk)
}

// csvPipeline reads a CSV input on all cores, in bounded memory, and hands
// out its batches in input order. One goroutine (split) reads the bytes
// and cuts them into chunks of whole records — quote-aware, see recordEnd
// — workers parse chunks into batches in parallel, and Next takes the
// chunks in order; at most inFlight chunks exist at once. When a sidecar
// binds the data, one more goroutine hashes the bytes in order (SHA-256
// runs beside the parsing, not before it).
//
// Errors name the file, row and line exactly as a sequential reading does:
// a worker reports a record's error relative to its chunk, and Next, which
// knows the rows and lines of the chunks before, makes them absolute.
// A chunk always starts at a record boundary, so a record fails in a chunk
// exactly as it fails in the whole input.
type csvPipeline struct {
	order  chan *csvChunk // chunks in input order
	work   chan *csvChunk
	quit   chan struct{}
	once   sync.Once
	hash   chan hashPiece // bytes to hash, in order; nil without a sidecar
	hashed chan struct{}  // closed when every byte is hashed
	bufs   bufPool        // read buffers to reuse
	target int            // the chunk size (csvChunkTarget)
	fresh  int            // read buffers allocated (split's; tests)

	// Next's state.
	cur      *csvChunk
	pending  []arrow.RecordBatch
	texts    []*RowText // pending's texts (row-text mode)
	chunkRow int64      // rows before cur
	line     int        // lines before cur
}

// chunkBuf is a read buffer that chunks (and the hasher) share: the
// last of them to be done with it gives it back for split to fill again.
// Buffers are about a chunk's size and split always needs one: making
// each afresh (zeroed, then collected) was a tenth of a CSV reading
// stage's CPU, and put the collector to work for nothing.
type chunkBuf struct {
	b    []byte
	refs atomic.Int32
	pool *bufPool
}

// release drops one reference to b; the last one gives it back, unless
// split has read the whole input (or enough are kept already).
func (b *chunkBuf) release() {
	if b.refs.Add(-1) == 0 && !b.pool.done.Load() {
		select {
		case b.pool.free <- b:
		default: // enough kept: let the collector have it
		}
	}
}

// bufPool keeps a few read buffers for split. Kept buffers are live heap
// under the tools' soft memory limit, and a stage that reads the whole
// input before its output work (anonymize's shuffle) would hold them
// past the reading: so at most freeBuffers, none once the input is read.
type bufPool struct {
	free chan *chunkBuf
	done atomic.Bool
}

// freeBuffers is the number of read buffers kept. A buffer holds about
// two chunks and comes back when both are parsed, often together with the
// one before it: with 2 kept, one buffer in ten was dropped and a fresh
// one allocated for a later read (TestCSVSplitReusesItsReadBuffers).
const freeBuffers = 3

// drain drops the kept buffers for good (split is done reading).
func (p *bufPool) drain() {
	p.done.Store(true)
	for {
		select {
		case <-p.free:
		default:
			return
		}
	}
}

// hashPiece is bytes of the input for the hasher, in b's memory.
type hashPiece struct {
	data []byte
	buf  *chunkBuf
}

// buffer returns a buffer holding at least size bytes, with one reference
// (split's), reused when one is free.
func (p *csvPipeline) buffer(size int) *chunkBuf {
	select {
	case b := <-p.bufs.free:
		if cap(b.b) >= size {
			b.refs.Store(1)
			return b
		}
	default:
	}
	// Every buffer of a run has one size, 2·target, when that holds the
	// request: split asks for the unsent bytes (under want) plus want, so
	// under 2·target as long as want is the target, and a kept buffer
	// then always fits the next request. (Sized to each request, a kept
	// buffer was nearly always a few bytes short, so every read took a
	// fresh one, zeroed and page-faulted in on the reading core, then
	// parsed on another.)
	p.fresh++
	b := &chunkBuf{b: make([]byte, 0, max(size, 2*p.target)), pool: &p.bufs}
	b.refs.Store(1)
	return b
}

// csvChunk is whole records of the input, and what a worker made of them.
type csvChunk struct {
	buf     *chunkBuf // data's memory
	data    []byte
	last    bool  // data ends where the input ends
	probe   bool  // data ends without a record boundary (maxCSVRecord)
	readErr error // reading the input failed after data
	done    chan struct{}

	batches []arrow.RecordBatch
	texts   []*RowText // per batch, in row-text mode (LendRowText)
	lines   int        // newlines in data
	perr    error      // the first record that failed
	errRow  int64      // rows of the chunk before it
}

func (c *csvReader) startPipeline() *csvPipeline {
	workers := runtime.GOMAXPROCS(0)
	inFlight := workers + 2
	p := &csvPipeline{
		order: make(chan *csvChunk, inFlight),
		work:  make(chan *csvChunk, inFlight),
		quit:  make(chan struct{}),
		bufs:  bufPool{free: make(chan *chunkBuf, freeBuffers)},
		line:  c.first,
	}
	// What br holds was hashed as it was read; the rest is hashed by the
	// hasher, from the chunks.
	pre := make([]byte, c.br.Buffered())
	io.ReadFull(c.br, pre)
	if c.bind != nil {
		c.hr.d = nil
		p.hash = make(chan hashPiece, inFlight)
		p.hashed = make(chan struct{})
		go func(d *digester) {
			for h := range p.hash {
				d.Write(h.data)
				h.buf.release()
			}
			close(p.hashed)
		}(c.bind.got)
	}
	p.target = csvChunkTarget(c.batch)
	var src io.Reader = c.br // drained: pre holds what it had read
	if pr := newParallelReader(c.file, workers); pr != nil && workers > 1 {
		src = pr
	}
	go p.split(src, pre, p.target)
	sel, labels, schema := c.sel, c.labels, c.schema
	if c.text != nil {
		sel, labels, schema = c.text.sel, nil, c.text.schema
	}
	for range workers {
		go p.worker(c.ncols, sel, labels, c.batch, schema, c.reuse, c.text)
	}
	return p
}

// split reads src (after the bytes pre) and sends chunks of whole records
// to the workers and to Next, in order.
func (p *csvPipeline) split(src io.Reader, pre []byte, target int) {
	defer close(p.work)
	defer close(p.order)
	if p.hash != nil {
		defer close(p.hash)
	}
	avail := pre      // read, not yet sent; starts at a record boundary
	var cur *chunkBuf // avail's memory (nil for pre)
	defer func() {
		p.bufs.drain()
		if cur != nil {
			cur.release()
		}
	}()
	want := target
	var err error // of the last read; io.EOF at the end
	for {
		if len(avail) < want && err == nil {
			nb := p.buffer(len(avail) + want)
			buf := append(nb.b[:0], avail...)
			if cur != nil {
				cur.release()
			}
			cur = nb
			fresh := len(buf) // avail was hashed with the read that brought it
			for len(buf) < cap(buf) && err == nil {
				var n int
				n, err = src.Read(buf[len(buf):cap(buf)])
				buf = buf[:len(buf)+n]
			}
			if p.hash != nil && len(buf) > fresh {
				cur.refs.Add(1)
				select {
				case p.hash <- hashPiece{buf[fresh:], cur}:
				case <-p.quit:
					return
				}
			}
			avail = buf
		}
		if err != nil && len(avail) <= want {
			ch := &csvChunk{data: avail, last: true}
			if !errors.Is(err, io.EOF) {
				ch.readErr = err
			}
			p.dispatch(ch, cur)
			return
		}
		window := avail[:min(want, len(avail))]
		cut := recordEnd(window)
		if cut < 0 {
			if len(window) >= maxCSVRecord {
				// No record ends within maxCSVRecord bytes: the first
				// record is broken or huge; its worker says which.
				p.dispatch(&csvChunk{data: window, probe: true}, cur)
				return
			}
			want = min(2*want, maxCSVRecord)
			continue
		}
		if !p.dispatch(&csvChunk{data: avail[:cut]}, cur) {
			return
		}
		avail, want = avail[cut:], target
	}
}

// dispatch sends ch, whose data is in buf's memory (nil: pre's), to the
// workers and to Next.
func (p *csvPipeline) dispatch(ch *csvChunk, buf *chunkBuf) bool {
	if buf != nil {
		buf.refs.Add(1)
		ch.buf = buf
	}
	ch.done = make(chan struct{})
	select {
	case p.order <- ch:
	case <-p.quit:
		return false
	}
	select {
	case p.work <- ch:
		return true
	case <-p.quit:
		return false
	}
}

// recordEnd returns the end of the last whole record in buf: just past
// the last newline outside quotes, or -1. buf starts at a record boundary,
// so a newline is outside quotes when an even number of quotes precede it
// (RFC 4180: a quoted field's inner quotes are doubled). Where the input
// breaks that rule, the worker reports the broken record before reaching
// a wrong boundary, since chunks are cut only after records that parse.
func recordEnd(buf []byte) int {
	odd := bytes.Count(buf, []byte{'"'})&1 == 1
	end := len(buf)
	for {
		i := bytes.LastIndexByte(buf[:end], '\n')
		if i < 0 {
			return -1
		}
		if bytes.Count(buf[i+1:end], []byte{'"'})&1 == 1 {
			odd = !odd
		}
		if !odd {
			return i + 1
		}
		end = i
	}
}

func (p *csvPipeline) worker(ncols int, sel []int, labels []*Labels, batch int, schema *arrow.Schema, reuse bool, text *textMode) {
	s := newCSVScanner(ncols)
	if reuse {
		s.pool = &bufferPool
	}
	s.project(sel)
	s.code(labels)
	for ch := range p.work {
		select {
		case <-p.quit:
		default:
			p.parse(s, ch, batch, schema, text)
		}
		// The batches hold copies of the cells: the chunk's bytes can go
		// (the scanner's reference too) while the chunk waits its turn.
		// In row-text mode each batch's RowText holds a reference of its
		// own.
		ch.data = nil
		s.setInput(nil, false)
		if ch.buf != nil {
			ch.buf.release()
			ch.buf = nil
		}
		close(ch.done)
	}
}

// parse turns a chunk into batches of at most batch rows (with, in
// row-text mode, their records' text).
func (p *csvPipeline) parse(s *csvScanner, ch *csvChunk, batch int, schema *arrow.Schema, text *textMode) {
	ch.lines = bytes.Count(ch.data, []byte{'\n'})
	s.setInput(ch.data, ch.last)
	var rows int64
	n := 0
	var starts []int32 // row-text mode: where each record starts
	fail := func(err error, row int64) {
		s.reset()
		ch.perr, ch.errRow = err, row
	}
	flush := func() bool {
		cols, err := s.batch(n)
		if err != nil {
			fail(err, rows)
			return false
		}
		ch.batches = append(ch.batches, array.NewRecordBatch(schema, cols, int64(n)))
		for _, a := range cols {
			a.Release()
		}
		if text != nil {
			t := &RowText{data: ch.data, starts: starts[len(starts)-n:], end: int32(s.pos), cols: text.cols, ncols: s.ncols}
			if ch.buf != nil {
				ch.buf.refs.Add(1)
				t.buf = ch.buf
			}
			ch.texts = append(ch.texts, t)
		}
		rows += int64(n)
		n = 0
		return true
	}
	for {
		start := s.pos
		err := s.readRecord()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fail(err, rows+int64(n))
			return
		}
		if text != nil {
			starts = append(starts, int32(start))
		}
		n++
		if n == batch && !flush() {
			return
		}
	}
	if ch.probe {
		fail(&csv.ParseError{StartLine: s.numLine + 1, Line: s.numLine + 1, Column: 1, Err: errChunkCut}, rows+int64(n))
		return
	}
	if n > 0 {
		flush()
	}
}

// next returns the next batch in input order, or the error of the first
// record that failed, or io.EOF.
func (p *csvPipeline) next(c *csvReader) (arrow.RecordBatch, *RowText, error) {
	for len(p.pending) == 0 {
		if ch := p.cur; ch != nil {
			p.cur = nil
			if ch.perr != nil {
				var pe *csv.ParseError
				if errors.As(ch.perr, &pe) {
					return nil, nil, csvError(c.name, ch.perr, p.chunkRow+ch.errRow+1, p.line)
				}
				return nil, nil, &DataError{File: c.name, Row: p.chunkRow + ch.errRow + 1, Err: ch.perr}
			}
			if ch.readErr != nil {
				return nil, nil, fmt.Errorf("%s: %w", c.name, ch.readErr)
			}
			p.line += ch.lines
		}
		ch, ok := <-p.order
		if !ok {
			return nil, nil, io.EOF
		}
		<-ch.done
		p.cur, p.pending, p.texts, ch.batches, ch.texts = ch, ch.batches, ch.texts, nil, nil
		p.chunkRow = c.rows
	}
	rec := p.pending[0]
	p.pending[0] = nil
	p.pending = p.pending[1:]
	var t *RowText
	if len(p.texts) > 0 {
		t = p.texts[0]
		p.texts[0] = nil
		p.texts = p.texts[1:]
	}
	return rec, t, nil
}

// waitHashed waits until the hasher has seen every byte.
func (p *csvPipeline) waitHashed() {
	if p.hashed != nil {
		<-p.hashed
	}
}

// stop ends the goroutines (a reader closed before the end).
func (p *csvPipeline) stop() {
	p.once.Do(func() { close(p.quit) })
}

// parallelReader reads a regular file from its current offset, a large
// Read split into pieces read at once by concurrent pread(2) calls.
//
// Why: a CSV input is read by one goroutine (split), and the kernel's copy
// of the file's pages into its buffers was a third of sample's CPU on a
// 10M-row table (260 of 860 ms), all of it on that goroutine, which every
// chunk waits on: with the copy spread over the cores the stage scales
// with them. The buffers are the pipeline's own; nothing is copied twice.
type parallelReader struct {
	f      *os.File
	pos    int64
	pieces int
}

// minReadPiece is the least bytes a concurrent piece reads: below it a
// read is not worth a goroutine.
const minReadPiece = 256 << 10

// newParallelReader returns a parallelReader over f from its current
// offset, in up to pieces pieces, or nil when f is not a regular file (a
// pipe, a terminal: read in order).
func newParallelReader(f *os.File, pieces int) *parallelReader {
	if f == nil {
		return nil
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return nil
	}
	pos, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil
	}
	return &parallelReader{f: f, pos: pos, pieces: max(1, pieces)}
}

// Read fills b as far as the file goes: the bytes it returns are those of
// the file from the offset on, in order (a piece past a short one is
// dropped, and read again by the next Read).
func (r *parallelReader) Read(b []byte) (int, error) {
	k := min(r.pieces, max(1, len(b)/minReadPiece))
	if k == 1 {
		n, err := r.f.ReadAt(b, r.pos)
		r.pos += int64(n)
		return n, err
	}
	var (
		wg   sync.WaitGroup
		n    = make([]int, k)
		errs = make([]error, k)
	)
	for i := 1; i < k; i++ {
		lo, hi := len(b)*i/k, len(b)*(i+1)/k
		wg.Add(1)
		go func() {
			defer wg.Done()
			n[i], errs[i] = r.f.ReadAt(b[lo:hi], r.pos+int64(lo))
		}()
	}
	n[0], errs[0] = r.f.ReadAt(b[:len(b)/k], r.pos) // this goroutine's piece
	wg.Wait()
	total := 0
	for i := range k {
		total += n[i]
		if lo, hi := len(b)*i/k, len(b)*(i+1)/k; n[i] < hi-lo {
			r.pos += int64(total)
			return total, errs[i]
		}
	}
	r.pos += int64(total)
	return total, nil
}
