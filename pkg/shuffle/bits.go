package shuffle

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Bit mode (Options.Bits): every column is an int32 column of 0/1 cells,
// bitflip's reports. A row is then its cells packed one bit per column
// into ⌈columns/64⌉ words, held in memory as such and written to the spill
// files as its ⌈columns/8⌉ low bytes: 3 bytes for bitflip's 17 bits, where
// the row codec of the other columns takes 18 (a varint per cell and a
// length) and a type switch per cell. Rows are packed and unpacked a
// column at a time, over whole batches. The algorithm — scatter to random
// buckets, Fisher–Yates each — and hence the uniformity argument of the
// package doc are the same; only the row's representation differs.

// bitChunkRows is the number of rows in one chunk of held rows: every
// chunk but the last holds exactly this many (row k is in chunk
// k/bitChunkRows), so that growing the held rows never copies more than
// one chunk nor holds twice their size.
const bitChunkRows = 1 << 15

// bitRows is the state of a Shuffler in bit mode.
type bitRows struct {
	cols  int // bits per row
	words int // uint64 words per row, ⌈cols/64⌉
	bytes int // bytes per row in a spill file, ⌈cols/8⌉

	chunks [][]uint64 // rows held in memory, bitChunkRows rows per chunk
	n      int        // rows held
	pack   []uint64   // scratch: a batch's rows, packed
	spill  []byte     // scratch: a row's spill bytes

	draws uint64 // unused bucket draws (power-of-two bucket counts)
	left  int    // draws left in draws

	// Column buffers of emitted batches that fn is done with (Emit's
	// contract: fn keeps nothing), for the next batches: a batch's
	// columns are fresh memory otherwise, 4 bytes a cell, which fed the
	// collector as much as the rest of perturb bitflip.
	free chan [][]int32
	// Packed batches unpacked already, for the next batches to be built
	// in (emitBitsOverlapped).
	spare chan []uint64
}

// newBitRows is the bit-mode state for cols columns, or an error when a
// column is not int32.
func newBitRows(schema *arrow.Schema) (*bitRows, error) {
	for _, f := range schema.Fields() {
		if f.Type.ID() != arrow.INT32 {
			return nil, fmt.Errorf("shuffle.New: column %q has type %s; in bit mode (Options.Bits) every column must be int32 0/1", f.Name, f.Type)
		}
	}
	c := schema.NumFields()
	return &bitRows{cols: c, words: (c + 63) / 64, bytes: (c + 7) / 8, free: make(chan [][]int32, 2), spare: make(chan []uint64, 2)}, nil
}

// bucketOf draws a bucket uniformly from 0..n−1. For n = 2^k (the default
// 128) one 64-bit word gives ⌊64/k⌋ independent uniform draws, its k-bit
// pieces; otherwise one r.IntN(n) per draw.
func (b *bitRows) bucketOf(r *rand.Rand, n int) int {
	if n&(n-1) != 0 {
		return r.IntN(n)
	}
	k := bits.TrailingZeros(uint(n))
	if b.left == 0 {
		b.draws, b.left = r.Uint64(), 64/k
	}
	x := int(b.draws & uint64(n-1))
	b.draws >>= uint(k)
	b.left--
	return x
}

// writeBits adds the rows of cols (n rows, no nulls, checked by Write).
func (s *Shuffler) writeBits(cols []arrow.Array, n int) error {
	b := s.bits
	W := b.words
	p := slices.Grow(b.pack[:0], n*W)[:n*W]
	clear(p)
	b.pack = p
	for j, c := range cols {
		v := c.(*array.Int32).Int32Values()
		var or uint32
		sh := uint(j & 63)
		if W == 1 {
			for i, x := range v {
				or |= uint32(x)
				p[i] |= uint64(uint32(x)) << sh
			}
		} else {
			w := j >> 6
			for i, x := range v {
				or |= uint32(x)
				p[i*W+w] |= uint64(uint32(x)) << sh
			}
		}
		if or > 1 {
			i := slices.IndexFunc(v, func(x int32) bool { return x != 0 && x != 1 })
			return fmt.Errorf("shuffle: column %q holds %d, and bit mode (Options.Bits) takes only 0 and 1", s.schema.Field(j).Name, v[i])
		}
	}
	return s.addPacked(p, n)
}

// WritePacked adds n rows given packed, as bit mode holds them: row i is
// words [i·W, (i+1)·W) of rows, W = ⌈columns/64⌉, column j its bit j%64 of
// word j/64. It is Write without the columns, for a caller that has its
// rows packed already (perturb bitflip: L ≤ 64 bits a word); the order
// emitted is the same as for the same rows written with Write. A bit past
// the last column is refused. rows is not kept.
func (s *Shuffler) WritePacked(rows []uint64) error {
	b := s.bits
	switch {
	case s.emitted:
		return errors.New("shuffle: Write after Emit")
	case b == nil:
		return errors.New("shuffle: WritePacked needs bit mode (Options.Bits)")
	case len(rows)%b.words != 0:
		return fmt.Errorf("shuffle: %d words are not whole rows of %d words", len(rows), b.words)
	}
	if r := b.cols % 64; r != 0 {
		var over uint64
		for i := b.words - 1; i < len(rows); i += b.words {
			over |= rows[i] >> uint(r)
		}
		if over != 0 {
			return fmt.Errorf("shuffle: a packed row has a bit past its %d columns", b.cols)
		}
	}
	return s.addPacked(rows, len(rows)/b.words)
}

// addPacked holds or scatters n packed rows p.
func (s *Shuffler) addPacked(p []uint64, n int) error {
	b := s.bits
	W := b.words
	s.rows += int64(n)
	if s.dir != "" {
		return b.scatter(s, s.buckets, p)
	}
	full := bitChunkRows * W
	for off := 0; off < len(p); {
		// The first chunk small, so that a small table costs little; it
		// grows by doubling up to a full chunk. Its size does not depend
		// on the batches, so neither does whether the rows spill (held
		// after k rows is a function of k), nor, since every row gets
		// its bucket draw in order whenever the spill happens, the
		// output.
		last := len(b.chunks) - 1
		var grow int
		switch {
		case last < 0:
			grow = min(full, 1024*W)
		case len(b.chunks[last]) < cap(b.chunks[last]):
		case cap(b.chunks[last]) < full: // only the first chunk
			grow = min(full, 2*cap(b.chunks[last])) - cap(b.chunks[last])
		default:
			grow = full
		}
		if s.held+int64(8*grow) > s.opt.Budget {
			// Spill rather than hold more than the budget.
			if err := s.spillDir(); err != nil {
				return err
			}
			for _, c := range b.chunks {
				if err := b.scatter(s, s.buckets, c); err != nil {
					return err
				}
			}
			b.chunks, b.n, s.held = nil, 0, 0
			s.acct.hold(0)
			return b.scatter(s, s.buckets, p[off:])
		}
		switch {
		case grow == 0:
		case last < 0:
			b.chunks = append(b.chunks, make([]uint64, 0, grow))
			last++
		case cap(b.chunks[last]) < full:
			c := make([]uint64, len(b.chunks[last]), cap(b.chunks[last])+grow)
			copy(c, b.chunks[last])
			b.chunks[last] = c
		default:
			b.chunks = append(b.chunks, make([]uint64, 0, full))
			last++
		}
		s.held += int64(8 * grow)
		s.acct.hold(s.held)
		if 2*s.held > s.opt.Budget && s.prep == nil {
			s.prepareSpill()
		}
		c := b.chunks[last]
		k := min(cap(c)-len(c), len(p)-off)
		b.chunks[last] = append(c, p[off:off+k]...)
		b.n += k / W
		off += k
	}
	return nil
}

// scatter writes each row of p (packed, words each) to a random one of
// files.
func (b *bitRows) scatter(s *Shuffler, files []*spillFile, p []uint64) error {
	W := b.words
	for off := 0; off < len(p); off += W {
		b.spill = appendRowBytes(b.spill[:0], p[off:off+W], b.bytes)
		if _, err := files[b.bucketOf(s.r, len(files))].w.Write(b.spill); err != nil {
			return spillError(err)
		}
	}
	return nil
}

// appendRowBytes appends the nb low bytes of a row's words, little-endian.
func appendRowBytes(dst []byte, row []uint64, nb int) []byte {
	for _, w := range row {
		for range min(8, nb) {
			dst = append(dst, byte(w))
			w >>= 8
		}
		nb -= 8
	}
	return dst
}

// readRowBytes unpacks rows of nb bytes each from data into words (W per
// row), which must hold len(data)/nb rows.
func readRowBytes(words []uint64, data []byte, W, nb int) {
	i := 0
	if W == 1 && nb < 8 {
		// One load a row (bitflip's 3-byte rows: a third of the byte
		// loop's time), for the rows with 8 bytes of data from their
		// start; the byte loop below does the last few.
		mask := uint64(1)<<(8*nb) - 1
		for ; i*nb+8 <= len(data); i++ {
			words[i] = binary.LittleEndian.Uint64(data[i*nb:]) & mask
		}
	}
	for data = data[i*nb:]; len(data) >= nb; i++ {
		row := words[i*W : i*W+W]
		for k := range row {
			var w uint64
			for x := range min(8, nb-8*k) {
				w |= uint64(data[8*k+x]) << (8 * x)
			}
			row[k] = w
		}
		data = data[nb:]
	}
}

// shuffledBits Fisher–Yates shuffles the n rows held in chunks of
// bitChunkRows rows (with the draws of the other rows' codec, r.IntN) and
// emits them.
func (e *emitter) shuffledBits(chunks [][]uint64, n int) error {
	r := e.s.r
	W := e.s.bits.words
	at := func(k int) []uint64 {
		c := chunks[k/bitChunkRows]
		o := (k % bitChunkRows) * W
		return c[o : o+W]
	}
	for i := n - 1; i > 0; i-- {
		j := r.IntN(i + 1)
		if W == 1 {
			a, b := &chunks[i/bitChunkRows][i%bitChunkRows], &chunks[j/bitChunkRows][j%bitChunkRows]
			*a, *b = *b, *a
			continue
		}
		a, b := at(i), at(j)
		for k := range a {
			a[k], b[k] = b[k], a[k]
		}
	}
	for _, c := range chunks {
		if err := e.appendBits(c); err != nil {
			return err
		}
	}
	return nil
}

// bucketBits emits the rows of one bit-mode spill file in a uniformly
// random order, and releases it; one whose rows would take more than the
// budget in memory is scattered again first, unless it holds one row. The
// file is read into the rows a piece at a time, so that its bytes and its
// rows are not both held.
func (e *emitter) bucketBits(sf *spillFile, depth int) error {
	s := e.s
	b := s.bits
	st, err := sf.f.Stat()
	if err != nil {
		return spillError(err)
	}
	size := st.Size()
	if size%int64(b.bytes) != 0 {
		return fmt.Errorf("shuffling the rows: a temporary file is corrupt: %d bytes, not a whole number of %d-byte rows", size, b.bytes)
	}
	n := int(size / int64(b.bytes))
	if int64(n)*int64(8*b.words) > s.opt.Budget && n > 1 && depth < maxDepth {
		return e.scatterAgain(sf, size, depth, e.rescatterBits, e.bucketBits)
	}
	W := b.words
	rows := make([]uint64, n*W)
	s.acct.hold(int64(8 * len(rows)))
	piece := make([]byte, (spillBuffer/b.bytes)*b.bytes)
	for i := 0; i < n; {
		k := min(n-i, len(piece)/b.bytes)
		if _, err := sf.f.ReadAt(piece[:k*b.bytes], int64(i)*int64(b.bytes)); err != nil {
			s.release(sf)
			return spillError(err)
		}
		readRowBytes(rows[i*W:(i+k)*W], piece[:k*b.bytes], W, b.bytes)
		i += k
	}
	s.release(sf)
	r := s.r
	for i := n - 1; i > 0; i-- {
		j := r.IntN(i + 1)
		if W == 1 {
			rows[i], rows[j] = rows[j], rows[i]
			continue
		}
		for k := range W {
			rows[i*W+k], rows[j*W+k] = rows[j*W+k], rows[i*W+k]
		}
	}
	if err := e.appendBits(rows); err != nil {
		return err
	}
	s.acct.hold(0)
	return nil
}

// rescatterBits sends every row of sf (size bytes) to one of B new files
// chosen uniformly at random, and releases sf.
func (e *emitter) rescatterBits(sf *spillFile, size int64) ([]*spillFile, error) {
	s := e.s
	b := s.bits
	subs, err := s.createBuckets()
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(io.NewSectionReader(sf.f, 0, size), spillBuffer)
	row := make([]byte, b.bytes)
	for err == nil {
		if _, err = io.ReadFull(br, row); err != nil {
			break
		}
		_, err = subs[b.bucketOf(s.r, len(subs))].w.Write(row)
	}
	s.release(sf)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	if err == nil {
		err = s.flushBuckets(subs)
	}
	if err != nil {
		return nil, spillError(err)
	}
	return subs, nil
}

// appendBits adds packed rows to the batch being built, handing it on
// each time it holds Options.BatchRows rows.
func (e *emitter) appendBits(rows []uint64) error {
	W := e.s.bits.words
	full := e.s.opt.BatchRows * W
	for len(rows) > 0 {
		if e.bitBatch == nil {
			// A full batch, or the rest of the rows if fewer.
			e.bitBatch = make([]uint64, 0, min(int64(full), int64(W)*(e.s.rows-e.appended)))
		}
		k := min(full-len(e.bitBatch), len(rows))
		e.bitBatch = append(e.bitBatch, rows[:k]...)
		e.appended += int64(k / W)
		rows = rows[k:]
		if len(e.bitBatch) == full {
			if err := e.flushBits(); err != nil {
				return err
			}
		}
	}
	return nil
}

// flushBits hands the batch being built to the goroutine that unpacks
// batches and calls fn (emitBitsOverlapped), and starts the next one in a
// buffer that goroutine is done with, if any.
func (e *emitter) flushBits() error {
	if len(e.bitBatch) == 0 {
		return nil
	}
	select {
	case <-e.failed:
		return *e.werr
	case e.packed <- e.bitBatch:
	}
	e.bitBatch = nil
	select {
	case e.bitBatch = <-e.s.bits.spare:
	default:
	}
	return nil
}

// emitBitsOverlapped is Emit in bit mode. This goroutine reads each bucket
// and draws its shuffle (every draw from the source, in the serial order)
// into packed batches; a second one unpacks each batch into int32 columns
// and calls fn with it, a batch behind, so that the two overlap on two
// cores. Unpacking had been a quarter of the emitting goroutine's time in
// perturb bitflip on 10M rows, while fn (a Parquet encoder, itself on
// other goroutines) waited. The batches reach fn in order.
func (s *Shuffler) emitBitsOverlapped(fn func(arrow.RecordBatch) error) error {
	b := s.bits
	packed := make(chan []uint64, 1) // one being built, one queued, one unpacked
	failed := make(chan struct{})    // closed once fn has failed, with werr set
	done := make(chan struct{})
	var werr error
	go func() {
		defer close(done)
		for p := range packed {
			if werr == nil {
				rec := b.unpack(s.schema, p)
				if werr = fn(rec); werr != nil {
					close(failed)
				}
				b.recycle(rec) // fn keeps nothing of rec
				rec.Release()
			}
			select {
			case b.spare <- p[:0]:
			default:
			}
		}
	}()
	out := &emitter{s: s, packed: packed, failed: failed, werr: &werr}
	err := out.emitBits()
	close(packed)
	<-done
	if err == nil {
		err = werr
	}
	return err
}

// unpack makes a batch of the packed rows p, a column at a time, in the
// column buffers of a batch that fn is done with when there is one.
func (b *bitRows) unpack(schema *arrow.Schema, p []uint64) arrow.RecordBatch {
	W := b.words
	n := len(p) / W
	var bufs [][]int32
	select {
	case bufs = <-b.free:
	default:
	}
	arrs := make([]arrow.Array, b.cols)
	for j := range arrs {
		var col []int32
		if bufs != nil && cap(bufs[j]) >= n {
			col = bufs[j][:n]
		} else {
			col = make([]int32, n)
		}
		w, sh := j>>6, uint(j&63)
		if W == 1 {
			for i, x := range p {
				col[i] = int32(x >> sh & 1)
			}
		} else {
			for i := range col {
				col[i] = int32(p[i*W+w] >> sh & 1)
			}
		}
		d := array.NewData(arrow.PrimitiveTypes.Int32, n, []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(col))}, nil, 0, 0)
		arrs[j] = array.MakeFromData(d)
		d.Release()
	}
	rec := array.NewRecordBatch(schema, arrs, int64(n))
	for _, a := range arrs {
		a.Release()
	}
	return rec
}

// recycle keeps the column buffers of an emitted batch that fn is done
// with, for flushBits (at most two batches' worth: one being decoded while
// the other is written).
func (b *bitRows) recycle(rec arrow.RecordBatch) {
	bufs := make([][]int32, rec.NumCols())
	for j, c := range rec.Columns() {
		v := c.(*array.Int32).Int32Values()
		bufs[j] = v[:0:cap(v)]
	}
	select {
	case b.free <- bufs:
	default:
	}
}
