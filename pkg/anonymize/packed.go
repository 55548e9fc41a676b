package anonymize

import "encoding/binary"

// words is an array of unsigned integers of 32 bits, or of 24 when all fit
// (3 bytes each instead of 4): the Dealer's pairs and sets, which at 1M
// sensitive values are most of anonymize's live heap (2.5M pairs and as
// many set members at ℓ′ = 5, 491k set types). A 24-bit word is read as
// the 4 bytes from its first, masked, so the array ends with a byte of
// padding.
type words struct {
	u32 []uint32 // 4 bytes a word, or nil
	u24 []byte   // 3 bytes a word (and one of padding)
}

// maxU24 is the largest word of 24 bits.
const maxU24 = 1<<24 - 1

// newWords returns n zero words of 24 bits when narrow, else of 32.
func newWords(n int, narrow bool) words {
	if narrow {
		return words{u24: make([]byte, 3*n+1)}
	}
	return words{u32: make([]uint32, n)}
}

// len returns the number of words.
func (w *words) len() int {
	if w.u24 != nil {
		return len(w.u24) / 3
	}
	return len(w.u32)
}

// at returns word i.
func (w *words) at(i int) uint32 {
	if w.u24 != nil {
		return binary.LittleEndian.Uint32(w.u24[3*i:]) & maxU24
	}
	return w.u32[i]
}

// put sets word i to x (< 2^24 if the words are of 24 bits).
func (w *words) put(i int, x uint32) {
	if w.u24 != nil {
		b := w.u24[3*i : 3*i+3 : 3*i+3]
		b[0], b[1], b[2] = byte(x), byte(x>>8), byte(x>>16)
		return
	}
	w.u32[i] = x
}

// uint32s returns the words as a []uint32: the array itself for words of
// 32 bits, else a copy.
func (w *words) uint32s() []uint32 {
	if w.u24 == nil {
		return w.u32
	}
	out := make([]uint32, w.len())
	for i := range out {
		out[i] = w.at(i)
	}
	return out
}

// offsets is a nondecreasing array of uint32 (a Dealer's pair offsets,
// one per value and one past the last), kept as a 32-bit base per block
// of offsetBlock entries and a 16-bit difference per entry when every
// block spans fewer than 2^16: 2 bytes an entry instead of 4 (2 MB at 1M
// values, 2.5 pairs a value), else as it is (few values with many pairs
// each, where the array is small anyway).
type offsets struct {
	all  []uint32 // the offsets, or nil
	base []uint32 // entry i is base[i/offsetBlock] + rel[i]
	rel  []uint16
}

// offsetBlock is the entries of one base of offsets.
const offsetBlock = 64

// newOffsets returns off as offsets (off is not kept if compressed).
func newOffsets(off []uint32) offsets {
	for i, x := range off {
		if x-off[i&^(offsetBlock-1)] > 1<<16-1 {
			return offsets{all: off}
		}
	}
	o := offsets{base: make([]uint32, (len(off)+offsetBlock-1)/offsetBlock), rel: make([]uint16, len(off))}
	for i, x := range off {
		if i%offsetBlock == 0 {
			o.base[i/offsetBlock] = x
		}
		o.rel[i] = uint16(x - o.base[i/offsetBlock])
	}
	return o
}

// values is the number of values, one less than the offsets.
func (o *offsets) values() int {
	if o.all != nil {
		return len(o.all) - 1
	}
	return len(o.rel) - 1
}

// at returns offset i.
func (o *offsets) at(i uint32) uint32 {
	if o.all != nil {
		return o.all[i]
	}
	return o.base[i/offsetBlock] + uint32(o.rel[i])
}
