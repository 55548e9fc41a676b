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
