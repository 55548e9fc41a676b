package shuffle

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/pramkit/pramkit/pkg/table"
)

// Emitting the row codec on every core.
//
// Decoding the shuffled rows into columns was most of Emit's time, on one
// goroutine (anonymize on 10M rows: 6.6 of its 11 s on 2 cores, 9 of 17 on
// one). Only the order of the rows needs one goroutine: the planner (the
// caller of Emit) reads each bucket, draws its Fisher–Yates shuffle from
// the source exactly as before, and cuts the shuffled rows into jobs of at
// most Options.BatchRows; workers decode jobs into batches in parallel,
// and a consumer hands them to fn in the planner's order. The source's
// draws, hence the rows' order, are those of one goroutine whatever
// GOMAXPROCS: a seeded run gives the same output on any number of cores.
// A batch never spans two buckets (its last batch may be short): writers
// rebatch, so only the order of the rows reaches the output.
//
// Memory: the buckets being decoded come from a rowSets pool that holds at
// most Options.Budget bytes (data, and 8 bytes of position per row: the
// measure by which a bucket is emitted whole or scattered again; and the
// copy of the rows in their shuffled order, made only when it fits too),
// so the package doc's bound on rows in memory holds with any number of
// buckets in flight; it keeps their buffers for the next buckets instead
// of allocating (and zeroing) a fresh one each. Plus the decoded batches
// in flight: one per worker and the consumer's queue.

// rowSet is rows to decode in their shuffled order: row k is the encoded
// row whose length prefix is at ref k (chunk<<40 | offset) in chunks.
// Rows held in memory keep their refs in blocks (refs); a bucket read from
// its file has one chunk and flat refs, with buffers from the pool.
type rowSet struct {
	chunks [][]byte
	blocks *refs    // rows held in memory
	flat   []uint64 // a bucket's rows
	n      int

	data    []byte       // a bucket's buffer, as read
	gather  []byte       // its rows in their shuffled order, when they fit (chunks[0])
	pending atomic.Int32 // jobs not yet decoded, plus one while the planner cuts them
	pool    *rowSets     // nil for rows held in memory
}

func (rs *rowSet) ref(k int) uint64 {
	if rs.flat != nil {
		return rs.flat[k]
	}
	return *rs.blocks.at(k)
}

// bytes is what the set's buffers take.
func (rs *rowSet) bytes() int64 {
	return int64(cap(rs.data)) + int64(cap(rs.gather)) + 8*int64(cap(rs.flat))
}

// done records that one more job of rs is decoded (or dropped); the last
// one gives the set's buffers back to its pool.
func (rs *rowSet) done() {
	if rs.pending.Add(-1) == 0 && rs.pool != nil {
		rs.pool.put(rs)
	}
}

// rowSets hands out buffers for buckets, holding at most budget bytes in
// all, in use or kept for reuse. A request that does not fit waits until
// buckets being decoded give theirs back; one larger than the budget (a
// bucket of a single row, which is never scattered again) is served once
// nothing else is in use.
type rowSets struct {
	mu     sync.Mutex
	cond   sync.Cond
	budget int64
	live   int64 // bytes of sets in use
	idle   int64 // bytes of sets kept in free
	free   []*rowSet
	acct   *accounting
}

func newRowSets(budget int64, acct *accounting) *rowSets {
	p := &rowSets{budget: budget, acct: acct}
	p.cond.L = &p.mu
	return p
}

// get returns a set whose data holds size bytes and whose flat refs hold
// rows positions, and with gather, a second buffer of size bytes.
func (p *rowSets) get(size int64, rows int, gather bool) *rowSet {
	need := size + 8*int64(rows)
	if gather {
		need += size
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for {
		for i, rs := range p.free {
			if int64(cap(rs.data)) >= size && cap(rs.flat) >= rows && (!gather || int64(cap(rs.gather)) >= size) {
				p.free = append(p.free[:i], p.free[i+1:]...)
				p.idle -= rs.bytes()
				p.live += rs.bytes()
				rs.data, rs.flat = rs.data[:size], rs.flat[:0]
				return rs
			}
		}
		if p.live+p.idle+need > p.budget && p.idle > 0 {
			// Buffers too small for this bucket make room for it.
			p.idle = 0
			clear(p.free)
			p.free = p.free[:0]
			p.acct.hold(p.live)
		}
		if p.live+need <= p.budget || p.live == 0 {
			break
		}
		p.cond.Wait()
	}
	// A little room over the request, when the budget has it, so that
	// the next buckets, of about the same size, reuse the buffers.
	dataCap, rowsCap := size, rows
	if p.live+need+need/16 <= p.budget {
		dataCap, rowsCap = size+size/16, rows+rows/16
	}
	rs := &rowSet{data: make([]byte, size, dataCap), flat: make([]uint64, 0, rowsCap), pool: p}
	if gather {
		rs.gather = make([]byte, 0, dataCap)
	}
	p.live += rs.bytes()
	p.acct.hold(p.live + p.idle)
	return rs
}

// put takes back a set whose jobs are all decoded.
func (p *rowSets) put(rs *rowSet) {
	p.mu.Lock()
	defer p.mu.Unlock()
	rs.chunks = nil
	p.live -= rs.bytes()
	p.idle += rs.bytes()
	p.free = append(p.free, rs)
	p.cond.Broadcast()
}

// drop forgets the kept buffers once Emit is over.
func (p *rowSets) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free, p.idle = nil, 0
	p.acct.hold(p.live)
}

// emitJob is rows [lo, hi) of a set, to decode into one batch.
type emitJob struct {
	set    *rowSet
	lo, hi int
	rec    arrow.RecordBatch
	err    error
	done   chan struct{}
}

// rowEmitter runs the planner's jobs on the workers and hands the batches
// to fn in order.
type rowEmitter struct {
	s       *Shuffler
	work    chan *emitJob
	order   chan *emitJob
	failed  chan struct{} // closed once fn has failed, with ferr set
	ferr    error
	workers sync.WaitGroup
	out     chan struct{} // closed when the consumer is done
	sets    *rowSets
}

// emitRowsParallel is Emit for the row codec.
func (s *Shuffler) emitRowsParallel(fn func(arrow.RecordBatch) error) error {
	workers := runtime.GOMAXPROCS(0)
	e := &rowEmitter{
		s:      s,
		work:   make(chan *emitJob, workers),
		order:  make(chan *emitJob, workers+2), // decoded batches in flight
		failed: make(chan struct{}),
		out:    make(chan struct{}),
		sets:   newRowSets(s.opt.Budget, &s.acct),
	}
	for range workers {
		e.workers.Add(1)
		go e.worker()
	}
	go e.consume(fn)
	err := e.plan()
	close(e.work)
	close(e.order)
	e.workers.Wait()
	<-e.out
	e.sets.drop()
	if err == nil {
		err = e.ferr
	}
	return err
}

// plan emits the rows held in memory, or the buckets one after another:
// every draw from the source happens here, in the serial code's order.
func (e *rowEmitter) plan() error {
	s := e.s
	if s.dir == "" {
		held := s.refs
		rs := &rowSet{chunks: s.chunks, blocks: &held, n: held.n}
		fisherYates(s.r, rs.n, func(i, j int) {
			a, b := held.at(i), held.at(j)
			*a, *b = *b, *a
		})
		err := e.submit(rs)
		s.chunks, s.refs = nil, refs{}
		return err
	}
	if err := s.flushBuckets(s.buckets); err != nil {
		return err
	}
	for _, sf := range s.buckets {
		if err := e.bucket(sf, 0); err != nil {
			return err
		}
	}
	return nil
}

// fisherYates shuffles n items with swap, drawing r.IntN(i+1) for
// i = n−1 … 1.
func fisherYates(r interface{ IntN(int) int }, n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, r.IntN(i+1))
	}
}

// bucket emits the rows of one spill file in a uniformly random order, and
// releases it. A file whose rows would take more than the budget in memory
// (its bytes and 8 bytes per row, as when they were written) is scattered
// again first, unless it holds a single row.
func (e *rowEmitter) bucket(sf *spillFile, depth int) error {
	s := e.s
	st, err := sf.f.Stat()
	if err != nil {
		return spillError(err)
	}
	size := st.Size()
	if size+8*sf.rows > s.opt.Budget && sf.rows > 1 && depth < maxDepth {
		subs, err := (&emitter{s: s}).rescatter(sf, size)
		if err != nil {
			return err
		}
		s.acct.depth = max(s.acct.depth, depth+1)
		for _, sub := range subs {
			if err := e.bucket(sub, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	select {
	case <-e.failed:
		s.release(sf)
		return e.ferr
	default:
	}
	// The rows are gathered in their shuffled order when two copies of
	// the bucket fit the budget (always, but for buckets near it).
	gather := 2*size+8*sf.rows <= s.opt.Budget
	rs := e.sets.get(size, int(sf.rows), gather)
	_, err = sf.f.ReadAt(rs.data, 0)
	s.release(sf)
	if err != nil && !(errors.Is(err, io.EOF) && size == 0) {
		e.sets.put(rs)
		return spillError(err)
	}
	data := rs.data
	for off := 0; off < len(data); {
		n, k := binary.Uvarint(data[off:])
		if k <= 0 || uint64(len(data)-off-k) < n {
			e.sets.put(rs)
			return fmt.Errorf("shuffling the rows: a temporary file is corrupt at byte %d", off)
		}
		rs.flat = append(rs.flat, uint64(off))
		off += k + int(n)
	}
	rs.chunks, rs.n = [][]byte{data}, len(rs.flat)
	flat := rs.flat
	fisherYates(s.r, rs.n, func(i, j int) { flat[i], flat[j] = flat[j], flat[i] })
	if gather {
		// Here, where the bucket's bytes were just read, the rows are
		// copied in their shuffled order: the workers then read them in
		// sequence. Read at random by a worker on another core, they
		// nearly doubled the decoding's CPU (BenchmarkEmitSpilled: 2
		// cores 53 -> 42 ns a row, 1 core 71 -> 75 for the copy).
		g := rs.gather[:0]
		for k, ref := range flat {
			n, w := binary.Uvarint(data[ref:])
			flat[k] = uint64(len(g))
			g = append(g, data[ref:int(ref)+w+int(n)]...)
		}
		rs.gather = g
		rs.chunks = [][]byte{g}
	}
	return e.submit(rs)
}

// submit cuts rs into jobs of at most BatchRows rows, of equal sizes, and
// queues them in order.
func (e *rowEmitter) submit(rs *rowSet) error {
	batch := e.s.opt.BatchRows
	jobs := (rs.n + batch - 1) / batch
	rs.pending.Store(int32(jobs) + 1)
	defer rs.done() // the planner's own count: the set stays until every job is queued
	for k := range jobs {
		j := &emitJob{set: rs, lo: k * rs.n / jobs, hi: (k + 1) * rs.n / jobs, done: make(chan struct{})}
		select {
		case e.order <- j:
		case <-e.failed:
			for range jobs - k {
				rs.done()
			}
			return e.ferr
		}
		e.work <- j
	}
	return nil
}

// worker decodes jobs into batches.
func (e *rowEmitter) worker() {
	defer e.workers.Done()
	d := &decoder{s: e.s}
	for j := range e.work {
		select {
		case <-e.failed:
		default:
			j.rec, j.err = d.batch(j.set, j.lo, j.hi)
		}
		j.set.done()
		close(j.done)
	}
}

// consume hands the batches to fn in order, until fn fails.
func (e *rowEmitter) consume(fn func(arrow.RecordBatch) error) {
	defer close(e.out)
	for j := range e.order {
		<-j.done
		if e.ferr == nil {
			err := j.err
			if err == nil && j.rec != nil {
				err = fn(j.rec)
			}
			if err != nil {
				e.ferr = err
				close(e.failed)
			}
		}
		if j.rec != nil {
			j.rec.Release()
		}
	}
}

// decoder builds batches from encoded rows.
//
// It appends the cells to plain slices, a column each, and makes the
// batch's arrays over them (no validity bitmaps: shuffled columns have no
// nulls); each batch gets slices of its own (fn may keep the batch past
// its return, an asyncWriter's queue), made at the size the last batch
// needed, so they do not grow by doubling. Arrow's builders cost about
// twice as much per cell (bitflip's 17 int32 columns).
type decoder struct {
	s    *Shuffler
	cols []emitCol
}

// emitCol is one column of the batch being built: ints (int32 cells and
// dictionary indices), int64s, float64s, or a string's bytes and offsets.
type emitCol struct {
	i32  []int32
	i64  []int64
	f64  []float64
	data []byte
	offs []int32
}

// reset starts a batch of rows rows.
func (d *decoder) reset(rows int) {
	if d.cols == nil {
		d.cols = make([]emitCol, len(d.s.kinds))
	}
	for j, kind := range d.s.kinds {
		c := &d.cols[j]
		switch kind {
		case arrow.STRING:
			// The last batch's text per row, plus an eighth: a batch's
			// text varies little, and a guess per cell (16 bytes) held
			// 17 MB of anonymize's peak in unused capacity.
			guess := 4 << 10
			if last := len(c.offs) - 1; last > 0 {
				guess = max(guess, len(c.data)*rows/last+len(c.data)/8)
			}
			c.data = make([]byte, 0, guess)
			c.offs = make([]int32, 1, rows+1)
		case arrow.INT32, arrow.DICTIONARY:
			c.i32 = make([]int32, 0, rows)
		case arrow.INT64:
			c.i64 = make([]int64, 0, rows)
		case arrow.FLOAT64:
			c.f64 = make([]float64, 0, rows)
		}
	}
}

// batch decodes rows [lo, hi) of rs, in their shuffled order, into a batch.
func (d *decoder) batch(rs *rowSet, lo, hi int) (arrow.RecordBatch, error) {
	d.reset(hi - lo)
	for k := lo; k < hi; k++ {
		ref := rs.ref(k)
		d.decode(rowAt(rs.chunks[ref>>40], int(ref&(1<<40-1))))
	}
	return d.flush(hi - lo)
}

// decode appends one encoded row to the batch being built.
func (d *decoder) decode(row []byte) {
	off := 0
	for j, kind := range d.s.kinds {
		c := &d.cols[j]
		switch kind {
		case arrow.STRING:
			n, k := binary.Uvarint(row[off:])
			off += k
			c.data = append(c.data, row[off:off+int(n)]...)
			c.offs = append(c.offs, int32(len(c.data)))
			off += int(n)
		case arrow.INT32:
			v, k := binary.Varint(row[off:])
			off += k
			c.i32 = append(c.i32, int32(v))
		case arrow.DICTIONARY:
			v, k := binary.Uvarint(row[off:])
			off += k
			if m := d.s.remap; m != nil && m[j] != nil {
				c.i32 = append(c.i32, m[j][v])
				continue
			}
			c.i32 = append(c.i32, int32(v))
		case arrow.INT64:
			v, k := binary.Varint(row[off:])
			off += k
			c.i64 = append(c.i64, v)
		case arrow.FLOAT64:
			c.f64 = append(c.f64, math.Float64frombits(binary.LittleEndian.Uint64(row[off:])))
			off += 8
		}
	}
}

// flush makes the batch of the n rows decoded.
func (d *decoder) flush(n int) (arrow.RecordBatch, error) {
	s := d.s
	arrs := make([]arrow.Array, len(d.cols))
	release := func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}
	for j, kind := range s.kinds {
		c := &d.cols[j]
		var data arrow.ArrayData
		switch kind {
		case arrow.STRING:
			if len(c.data) > math.MaxInt32 {
				release()
				return nil, errors.New("shuffling the rows: a batch holds more than 2 GiB of text in one column")
			}
			data = array.NewData(arrow.BinaryTypes.String, n, []*memory.Buffer{nil,
				memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(c.offs)), memory.NewBufferBytes(c.data)}, nil, 0, 0)
		case arrow.INT32:
			data = array.NewData(arrow.PrimitiveTypes.Int32, n, []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(c.i32))}, nil, 0, 0)
		case arrow.DICTIONARY:
			data = array.NewData(table.DictType, n, []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int32Traits.CastToBytes(c.i32))}, nil, 0, 0)
			data.(*array.Data).SetDictionary(s.dicts[j].Data())
		case arrow.INT64:
			data = array.NewData(arrow.PrimitiveTypes.Int64, n, []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Int64Traits.CastToBytes(c.i64))}, nil, 0, 0)
		case arrow.FLOAT64:
			data = array.NewData(arrow.PrimitiveTypes.Float64, n, []*memory.Buffer{nil, memory.NewBufferBytes(arrow.Float64Traits.CastToBytes(c.f64))}, nil, 0, 0)
		}
		arrs[j] = array.MakeFromData(data)
		data.Release()
	}
	rec := array.NewRecordBatch(s.schema, arrs, int64(n))
	release()
	return rec, nil
}
