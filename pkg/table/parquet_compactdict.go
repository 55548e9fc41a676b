package table

import (
	"runtime"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// compactDicts turns compactDict on; tests turn it off to show what a
// large dictionary cost without it.
var compactDicts = true

// compactDictScratch holds compactDict's hash table and buffers, reused
// across columns and row groups.
var compactDictScratch = newScratchList[dictCompactor]()

// scratchList keeps up to GOMAXPROCS+1 scratch values for reuse. Unlike a
// sync.Pool, whose values the collector drops at every cycle, it keeps
// them across collections: under a tight memory limit (a decrypt of a
// 1M-label column runs ~200 cycles) a pool handed out fresh scratch again
// and again, ~250 MB of garbage in decrypt → Parquet's run, which made
// the collections it then needed (issue 11).
type scratchList[T any] struct{ free chan *T }

func newScratchList[T any]() *scratchList[T] {
	return &scratchList[T]{free: make(chan *T, runtime.GOMAXPROCS(0)+1)}
}

// get returns a kept value, or a new one.
func (l *scratchList[T]) get() *T {
	select {
	case x := <-l.free:
		return x
	default:
		return new(T)
	}
}

// put keeps x for a later get, unless the list is full.
func (l *scratchList[T]) put(x *T) {
	select {
	case l.free <- x:
	default:
	}
}

// compactDict returns a dictionary column whose dictionary is only the
// labels d's rows use, in d's dictionary order, with the indices
// renumbered, when d's dictionary would make a dictionary page of more
// than maxDictPage bytes; otherwise (or when d is not a dictionary of
// strings over int32 indices, or holds an index out of its range, which
// the column writer then reports) it returns nil, false.
//
// Why: a Parquet column chunk carries its own dictionary page, and the
// writers write a dictionary column's whole dictionary into every row
// group (pqarrow's PutDictionary, labelPages after it). A codebook column
// of 1M labels — anonymize with a near-unique sensitive column, decrypt
// with a large codebook — then wrote ~8 MB of labels per row group of
// 64 Ki rows: a 4M-row table of 74 MB as CSV came out as 378 MB of
// Parquet, in 83 s and 360 MB of memory. A row group uses at most as many
// labels as it has rows. Small dictionaries, every codebook of categories,
// stay whole: the file is then the one arrow-go writes, dictionary equal
// to the codebook's labels.
//
// Memory: 4 bytes an index and 8 a table slot, twice the row group's rows
// at most, reused (compactDictScratch).
func compactDict(d *array.Dictionary) (*array.Dictionary, bool) {
	if !compactDicts || d.Len() == 0 {
		return nil, false
	}
	labels, ok := d.Dictionary().(*array.String)
	if !ok || labels.NullN() != 0 {
		return nil, false
	}
	n := labels.Len()
	// The PLAIN dictionary page: a 4-byte length and the bytes per label.
	offs := labels.ValueOffsets() // n+1 of them
	if size := 4*n + int(offs[n]-offs[0]); size <= maxDictPage {
		return nil, false
	}
	idx, ok := d.Indices().(*array.Int32)
	if !ok {
		return nil, false
	}
	c := compactDictScratch.get()
	defer compactDictScratch.put(c)
	used, ok := c.distinct(idx, int32(n))
	if !ok || len(used) == n {
		return nil, false
	}
	lb := array.NewStringBuilder(memory.DefaultAllocator)
	defer lb.Release()
	bytes := 0
	for _, k := range used {
		bytes += len(labels.Value(int(k)))
	}
	lb.ReserveData(bytes)
	lb.Reserve(len(used))
	for _, k := range used {
		lb.Append(labels.Value(int(k)))
	}
	dict := lb.NewArray()
	defer dict.Release()
	ib := array.NewInt32Builder(memory.DefaultAllocator)
	defer ib.Release()
	ib.Reserve(idx.Len())
	for i, v := range idx.Int32Values() {
		if idx.IsNull(i) {
			ib.AppendNull()
			continue
		}
		ib.UnsafeAppend(c.rank(v))
	}
	ia := ib.NewArray()
	defer ia.Release()
	return array.NewDictionaryArray(d.DataType(), ia, dict), true
}

// dictCompactor finds the distinct indices of a column chunk and
// renumbers them: an open-addressing hash table of int32 keys, sized to
// the chunk, not to the dictionary.
type dictCompactor struct {
	keys  []int32 // -1: empty
	ranks []int32
	mask  uint32
	used  []int32
}

// slot returns the table slot of key k: where it is, or the empty slot
// where it would go.
func (c *dictCompactor) slot(k int32) uint32 {
	// Fibonacci hashing: consecutive codes spread over the table.
	for s := (uint32(k) * 0x9E3779B1) & c.mask; ; s = (s + 1) & c.mask {
		if c.keys[s] == k || c.keys[s] < 0 {
			return s
		}
	}
}

// distinct returns the distinct non-null indices of idx in increasing
// order, each given its rank (rank), or false when one is outside
// [0, n).
func (c *dictCompactor) distinct(idx *array.Int32, n int32) ([]int32, bool) {
	size := 16
	for size < 2*idx.Len() {
		size *= 2
	}
	if cap(c.keys) < size {
		c.keys, c.ranks = make([]int32, size), make([]int32, size)
	}
	c.keys, c.ranks, c.mask = c.keys[:size], c.ranks[:size], uint32(size-1)
	for i := range c.keys {
		c.keys[i] = -1
	}
	c.used = c.used[:0]
	for i, v := range idx.Int32Values() {
		if idx.IsNull(i) {
			continue
		}
		if v < 0 || v >= n {
			return nil, false
		}
		if s := c.slot(v); c.keys[s] < 0 {
			c.keys[s] = v
			c.used = append(c.used, v)
		}
	}
	slices.Sort(c.used)
	for r, v := range c.used {
		c.ranks[c.slot(v)] = int32(r)
	}
	return c.used, true
}

// rank returns index k's new index (k is one that distinct found).
func (c *dictCompactor) rank(k int32) int32 { return c.ranks[c.slot(k)] }
