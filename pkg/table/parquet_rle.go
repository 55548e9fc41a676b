package table

import (
	"encoding/binary"
	"slices"
)

// maxRLEWidth is the widest dictionary index appendRLEHybrid encodes: the
// indices of smallIntDict's dictionaries (0..maxSmallInt-1) take 12 bits,
// those of a dictionary of labels up to 16 (65,536 labels; wider columns
// are left to arrow-go's encoder).
const maxRLEWidth = 16

// appendRLEHybrid appends vals, each in [0, 1<<width), to dst in Parquet's
// RLE/bit-packed hybrid encoding (the dictionary indices of a data page,
// without the leading bit-width byte) and returns the extended slice. The
// bytes are those arrow-go's RleEncoder writes for the same values — the
// same choice of runs and literal groups — so files keep their bytes; only
// the work per value is less. width is 1..maxRLEWidth.
//
// Why: arrow-go encodes a dictionary page's indices by one RleEncoder.Put
// call per value (buffering each value, testing it, and bit-writing
// literals one value at a time): a third of perturb --mechanism bitflip's
// CPU, 17 columns of 0/1. Here a group of 8 values is tested and packed at
// once.
//
// arrow-go's encoder (after Impala's) cuts the values into groups of 8
// from the start and again right after each repeated run. A group whose 8
// values are equal starts a repeated run, which takes in every following
// equal value; other groups are bit-packed into literal runs of at most 63
// groups, each preceded by a byte (groups<<1 | 1). A repeated run is the
// ULEB128 varint count<<1, then the value in ceil(width/8) little-endian
// bytes. At the end, a tail of fewer than 8 values is a repeated run if no
// literal run is open and its values are all equal, else a last literal
// group padded with zeros.
func appendRLEHybrid(dst []byte, vals []int32, width int) []byte {
	vb := (width + 7) / 8 // bytes of a repeated run's value
	lit := -1             // index in dst of the open literal run's indicator byte
	groups := 0           // groups in the open literal run
	closeLit := func() {
		if lit >= 0 {
			dst[lit] = byte(groups<<1 | 1)
			lit, groups = -1, 0
		}
	}
	run := func(v int32, n int) {
		dst = binary.AppendUvarint(dst, uint64(n)<<1)
		for k := range vb {
			dst = append(dst, byte(v>>(8*k)))
		}
	}
	i, n := 0, len(vals)
	for n-i >= 8 {
		g := vals[i : i+8 : i+8]
		v := g[0]
		if width == 1 {
			// One-hot bits: the group's byte tells a run (0x00, 0xff) from
			// a literal group, and is the literal group.
			b := byte(g[0] | g[1]<<1 | g[2]<<2 | g[3]<<3 | g[4]<<4 | g[5]<<5 | g[6]<<6 | g[7]<<7)
			if b != 0 && b != 0xff {
				if lit < 0 {
					lit = len(dst)
					dst = append(dst, 0)
				}
				dst = append(dst, b)
				if groups++; groups >= 63 {
					closeLit()
				}
				i += 8
				continue
			}
		}
		if g[1] == v && g[2] == v && g[3] == v && g[4] == v && g[5] == v && g[6] == v && g[7] == v {
			closeLit()
			j := i + 8
			for j < n && vals[j] == v {
				j++
			}
			run(v, j-i)
			i = j
			continue
		}
		if lit < 0 {
			lit = len(dst)
			dst = append(dst, 0)
		}
		dst = packGroup(dst, g, width)
		groups++
		if groups >= 63 {
			closeLit()
		}
		i += 8
	}
	if tail := vals[i:]; len(tail) > 0 {
		same := true
		for _, v := range tail[1:] {
			same = same && v == tail[0]
		}
		if lit < 0 && same {
			run(tail[0], len(tail))
		} else {
			var g [8]int32
			copy(g[:], tail)
			if lit < 0 {
				lit = len(dst)
				dst = append(dst, 0)
			}
			dst = packGroup(dst, g[:], width)
			groups++
		}
	}
	closeLit()
	return dst
}

// rleWriter appends runs to an RLE/bit-packed hybrid stream, dst: a
// literal run is open from its first group's openLit until closeLit
// (at 63 groups, or before a repeated run).
type rleWriter struct {
	dst    []byte
	lit    int // index in dst of the open literal run's indicator byte, or -1
	groups int // groups in the open literal run
}

// openLit opens a literal run unless one is open.
func (w *rleWriter) openLit() {
	if w.lit < 0 {
		w.lit = len(w.dst)
		w.dst = append(w.dst, 0)
	}
}

// endGroup counts a group appended to the open literal run.
func (w *rleWriter) endGroup() {
	if w.groups++; w.groups >= 63 {
		w.closeLit()
	}
}

// literal appends a literal group of 8 one-bit values, b.
func (w *rleWriter) literal(b byte) {
	w.openLit()
	w.dst = append(w.dst, b)
	w.endGroup()
}

// closeLit writes the open literal run's indicator (groups<<1 | 1).
func (w *rleWriter) closeLit() {
	if w.lit >= 0 {
		w.dst[w.lit] = byte(w.groups<<1 | 1)
		w.lit, w.groups = -1, 0
	}
}

// run closes any literal run and appends a repeated run of count values
// v, v in vb bytes.
func (w *rleWriter) run(v int32, count, vb int) {
	w.closeLit()
	w.dst = binary.AppendUvarint(w.dst, uint64(count)<<1)
	for k := range vb {
		w.dst = append(w.dst, byte(v>>(8*k)))
	}
}

// packGroup appends the 8 values of g bit-packed, least significant bit
// first, in width bytes.
func packGroup(dst []byte, g []int32, width int) []byte {
	g = g[:8:8]
	if width == 1 {
		return append(dst, byte(g[0]|g[1]<<1|g[2]<<2|g[3]<<3|g[4]<<4|g[5]<<5|g[6]<<6|g[7]<<7))
	}
	if width <= 8 {
		// 8 values of at most 8 bits: one word, no test per value.
		w := uint(width)
		x := uint64(g[0]) | uint64(g[1])<<w | uint64(g[2])<<(2*w) | uint64(g[3])<<(3*w) |
			uint64(g[4])<<(4*w) | uint64(g[5])<<(5*w) | uint64(g[6])<<(6*w) | uint64(g[7])<<(7*w)
		// The word is stored whole past the end and the slice cut to its
		// width bytes: no copy of a variable length.
		n := len(dst)
		dst = slices.Grow(dst, 8)[:n+8]
		binary.LittleEndian.PutUint64(dst[n:], x)
		return dst[:n+width]
	}
	// 8 values of at most maxRLEWidth bits: 128 bits, in two words.
	var lo, hi uint64
	for k, v := range g {
		s := uint(k * width)
		if s < 64 {
			lo |= uint64(v) << s
			if s+uint(width) > 64 {
				hi |= uint64(v) >> (64 - s)
			}
		} else {
			hi |= uint64(v) << (s - 64)
		}
	}
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], lo)
	binary.LittleEndian.PutUint64(b[8:], hi)
	return append(dst, b[:width]...)
}

// appendRLEBits is appendRLEHybrid at width 1 for n cells of 0/1 held as
// bits (cell i is bit i%8 of bits[i/8]): the same bytes, with a group of
// 8 cells read as a byte (two, when the groups are cut off the bytes'
// boundaries after a repeated run) and a repeated run extended a byte at
// a time.
func appendRLEBits(dst []byte, bits []byte, n int) []byte {
	// at8 is cells [i, i+8) as a byte, cell i its lowest bit.
	at8 := func(i int) byte {
		b, s := bits[i>>3], uint(i&7)
		if s == 0 {
			return b
		}
		return b>>s | bits[i>>3+1]<<(8-s)
	}
	bit := func(i int) byte { return bits[i>>3] >> (i & 7) & 1 }
	w := rleWriter{dst: dst, lit: -1}
	i := 0
	for n-i >= 8 {
		b := at8(i)
		if b != 0 && b != 0xff {
			w.literal(b)
			i += 8
			continue
		}
		v := b & 1
		j := i + 8
		for j < n && j&7 != 0 && bit(j) == v {
			j++
		}
		if j&7 == 0 {
			for j+8 <= n && bits[j>>3] == b {
				j += 8
			}
			for j < n && bit(j) == v {
				j++
			}
		}
		w.run(int32(v), j-i, 1)
		i = j
	}
	if k := n - i; k > 0 {
		// The tail: a repeated run, or a last literal group padded with
		// zeros.
		mask := byte(1)<<k - 1
		b := at8Tail(bits, i, k) & mask
		if w.lit < 0 && (b == 0 || b == mask) {
			w.run(int32(b&1), k, 1)
		} else {
			w.literal(b)
		}
	}
	w.closeLit()
	return w.dst
}

// at8Tail is the k < 8 cells [i, i+k) of bits as the low bits of a byte
// (the bits above them unspecified), reading no byte past cell i+k−1.
func at8Tail(bits []byte, i, k int) byte {
	b, s := bits[i>>3], uint(i&7)
	if s == 0 || (i+k-1)>>3 == i>>3 {
		return b >> s
	}
	return b>>s | bits[i>>3+1]<<(8-s)
}
