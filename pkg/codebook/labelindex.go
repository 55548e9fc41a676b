package codebook

import (
	"hash/maphash"
	"math/bits"
	"sync"
	"weak"
)

// largeIndex is the most labels a categorical column indexes with a Go
// map; above, labelIndex uses its open-addressing table.
const largeIndex = 1024

// labelSeed seeds every table's hash: one seed for all columns, so that two
// columns built from the same labels are equal, field for field.
var labelSeed = maphash.MakeSeed()

// labelIndex maps a categorical column's labels to their indexes. A Go
// map[string]uint32 costs about 50 bytes a label on top of the labels
// (measured at 300k labels: 15 MB), which a high-cardinality column pays
// in every tool that holds its codebook (issue 11: anonymize's peak RSS
// ≤ 100 MB whatever the cardinality). Above largeIndex labels the index is
// instead a table of label indexes (plus one, 0 = empty) over the column's
// own labels, linear probing, two thirds full: 6 bytes a label (a table
// of a power of two of slots at most half full took 8 to 16).
// Small codebooks (census columns) keep the map, whose lookups are as fast.
//
// A slot holds the label index plus one in its low idxBits bits, and
// above them as many bits of the label's hash as are left (11 at 2M
// labels): a probe compares the label's bytes only when those bits agree. Linear probing two thirds full passes ~3 full slots on the way
// to an empty one, and each comparison read the label's offset and bytes
// from two random places of a large column: at 2M labels building the
// table (the duplicate check) took 150–190 ns a label and a lookup
// 330–390; with the tags, 55–61 and 250–256 (BenchmarkLargeColumn).
type labelIndex struct {
	small   map[string]uint32
	slots   []uint32
	idxBits uint8 // bits.Len32(k): the bits of a slot that hold index+1
}

// lazyIndex is a column's labelIndex, built on the first lookup rather
// than when the column is built: decrypt holds codebooks of 1M labels
// whose labels it only reads by index (Label, Dictionary), and the table
// is 6 bytes a label (5.7 MB at 1M labels, held for nothing: issue 11,
// peak RSS ≤ 100 MB per stage). Copies of a Column share one lazyIndex,
// so a codebook's Select and New do not build it again; sync.Once makes
// the first lookup safe from several goroutines at once.
//
// A categorical column is built with a table of its labels all the same,
// to refuse a repeated category (newCategorical). It is handed over
// through a weak pointer: a lookup that comes before the next collection
// (encrypt, estimate and anonymize look labels up right after loading
// the codebook) takes that table, and only one after it builds the table
// again (~50 ms at 1M labels), while a tool that never looks up lets the
// collector free it.
type lazyIndex struct {
	once   sync.Once
	labels labelList                // the column's (sharing its memory), all distinct
	built  weak.Pointer[labelIndex] // the table the column was checked with, if still there
	x      labelIndex
}

func newLazyIndex(labels labelList, built *labelIndex) *lazyIndex {
	l := &lazyIndex{labels: labels}
	if built != nil {
		l.built = weak.Make(built)
	}
	return l
}

// get returns the index, building it on the first call.
func (l *lazyIndex) get() *labelIndex {
	l.once.Do(func() {
		if x := l.built.Value(); x != nil {
			l.x = *x
		} else {
			l.x = indexLabels(&l.labels)
		}
		l.built = weak.Pointer[labelIndex]{}
	})
	return &l.x
}

// forget drops the table, built or handed over; the next get builds it
// again. Not safe while get runs.
func (l *lazyIndex) forget() {
	l.once = sync.Once{}
	l.built = weak.Pointer[labelIndex]{}
	l.x = labelIndex{}
}

// indexLabels indexes every label of labels, which are distinct, by its
// position.
func indexLabels(labels *labelList) labelIndex {
	k := labels.len()
	x := newLabelIndex(k)
	for i := range k {
		x.put(labels.at(i), uint32(i))
	}
	return x
}

func newLabelIndex(k int) labelIndex {
	if k <= largeIndex {
		return labelIndex{small: make(map[string]uint32, k)}
	}
	return labelIndex{slots: make([]uint32, k+k/2+1), idxBits: uint8(bits.Len32(uint32(k)))}
}

// probe is where the probe for s starts, its hash scaled to the table's
// size (Lemire's multiply-shift, as the size is no power of two), and
// the tag its slot holds: the hash's low bits above idxBits (none when
// the index needs all 32; a shift by 32 or more gives 0 in Go).
func (x *labelIndex) probe(s string) (start int, tag uint32) {
	h := maphash.String(labelSeed, s)
	hi, _ := bits.Mul64(h, uint64(len(x.slots)))
	return int(hi), uint32(h) << x.idxBits
}

// mask is the bits of a slot that hold index+1.
func (x *labelIndex) mask() uint32 { return 1<<x.idxBits - 1 }

// next is the slot after h, wrapping around.
func (x *labelIndex) next(h int) int {
	if h++; h == len(x.slots) {
		return 0
	}
	return h
}

// get returns the index of label s among labels (the labels put so far).
func (x *labelIndex) get(labels *labelList, s string) (uint32, bool) {
	if x.small != nil {
		i, ok := x.small[s]
		return i, ok
	}
	if len(x.slots) == 0 {
		return 0, false // an empty index
	}
	h, tag := x.probe(s)
	mask := x.mask()
	for ; ; h = x.next(h) {
		v := x.slots[h]
		if v == 0 {
			return 0, false
		}
		if v&^mask == tag && labels.at(int(v&mask-1)) == s {
			return v&mask - 1, true
		}
	}
}

// put records that labels[i] = s has index i; s must not be in the index
// yet, and the index holds at most the k labels it was made for.
func (x *labelIndex) put(s string, i uint32) {
	if x.small != nil {
		x.small[s] = i
		return
	}
	h, tag := x.probe(s)
	for x.slots[h] != 0 {
		h = x.next(h)
	}
	x.slots[h] = tag | (i + 1)
}

// lookupBlock is the labels getAll looks up together.
const lookupBlock = 16

// getAll sets out[i], ok[i] to get(labels, ss[i]) for every i. In a large
// column each lookup waits on two or three cache misses (its slot, then
// the label's offset and bytes); one at a time, the processor overlaps
// few of them. Here each block of labels is hashed first, then its first
// slots are loaded, then the candidates' offsets, all independent loads
// the processor issues together, and only then compared.
func (x *labelIndex) getAll(labels *labelList, ss []string, out []uint32, ok []bool) {
	if x.small != nil || len(x.slots) == 0 {
		for i, s := range ss {
			out[i], ok[i] = x.get(labels, s)
		}
		return
	}
	mask := x.mask()
	var (
		h    [lookupBlock]int
		tag  [lookupBlock]uint32
		v    [lookupBlock]uint32
		from [lookupBlock]int32
	)
	for base := 0; base < len(ss); base += lookupBlock {
		blk := ss[base:min(base+lookupBlock, len(ss))]
		for i, s := range blk {
			h[i], tag[i] = x.probe(s)
		}
		for i := range blk {
			v[i] = x.slots[h[i]]
		}
		for i := range blk {
			// The candidate's offset: the label a matching tag names.
			if v[i] != 0 && v[i]&^mask == tag[i] {
				from[i] = labels.offs[v[i]&mask-1]
			}
		}
		for i, s := range blk {
			if v[i] != 0 && v[i]&^mask == tag[i] {
				j := v[i]&mask - 1
				if labels.text[from[i]:labels.offs[j+1]] == s {
					out[base+i], ok[base+i] = j, true
					continue
				}
			}
			if v[i] == 0 {
				out[base+i], ok[base+i] = 0, false
				continue
			}
			out[base+i], ok[base+i] = x.get(labels, s) // past the first slot
		}
	}
}

// LabelIndexes is LabelIndex of every label of ss, into out and ok (of
// len(ss) each), faster than one at a time in a large column (getAll).
func (c *Column) LabelIndexes(ss []string, out []uint32, ok []bool) {
	if c.index == nil {
		clear(ok) // the zero Column
		return
	}
	c.index.get().getAll(&c.labels, ss, out, ok)
}
