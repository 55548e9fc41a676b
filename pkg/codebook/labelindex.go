package codebook

import (
	"hash/maphash"
	"math/bits"
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
type labelIndex struct {
	small map[string]uint32
	slots []uint32
}

func newLabelIndex(k int) labelIndex {
	if k <= largeIndex {
		return labelIndex{small: make(map[string]uint32, k)}
	}
	return labelIndex{slots: make([]uint32, k+k/2+1)}
}

// start is the slot where the probe for s starts: its hash scaled to the
// table's size (Lemire's multiply-shift, as the size is no power of two).
func (x *labelIndex) start(s string) int {
	hi, _ := bits.Mul64(maphash.String(labelSeed, s), uint64(len(x.slots)))
	return int(hi)
}

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
	for h := x.start(s); ; h = x.next(h) {
		i := x.slots[h]
		if i == 0 {
			return 0, false
		}
		if labels.at(int(i-1)) == s {
			return i - 1, true
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
	h := x.start(s)
	for x.slots[h] != 0 {
		h = x.next(h)
	}
	x.slots[h] = i + 1
}
