package table

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// decodeDictAdd is decodeDictValues adding instead of storing: it decodes
// len(dst) dictionary indices from data (a data page's bit width byte and
// RLE / bit-packed hybrid runs), checks each against the dictionary's
// len(lut) entries and adds lut[index] to dst. A caller that sums a
// row's columns (estimate's joint value Σ_j x_j·w_j) so reads each chunk
// once, with no index buffer between the decoder and the sum: on a
// 10M-row release of 4 columns the separate passes over the indices and
// the sums were a third of estimate's count. It returns decodeDict's
// errors for the same data.
func decodeDictAdd(dst []uint32, data []byte, lut []uint32) error {
	if len(dst) == 0 {
		return nil
	}
	if len(data) < 1 {
		return errors.New("a data page has no bit width")
	}
	n := len(lut)
	w := int(data[0])
	if w > 32 {
		return fmt.Errorf("a data page's indices are %d bits wide", w)
	}
	data = data[1:]
	mask := uint64(1)<<w - 1
	var pad [48]byte
	var lut256 *[256]uint32
	for len(dst) > 0 {
		h, k := binary.Uvarint(data)
		if k <= 0 || h > 1<<33 {
			return errors.New("a data page's run header is corrupt")
		}
		data = data[k:]
		if h&1 == 0 { // a run of one value
			count, vb := int(h>>1), (w+7)/8
			if len(data) < vb {
				return errors.New("a data page ends inside a run")
			}
			var v uint64
			for i := range vb {
				v |= uint64(data[i]) << (8 * i)
			}
			data = data[vb:]
			if count > len(dst) {
				count = len(dst) // (runs may cover padding past the page's values)
			}
			if count > 0 {
				if v >= uint64(n) {
					return fmt.Errorf("an index %d points past the dictionary's %d entries", v, n)
				}
				add := lut[v]
				for i := range dst[:count] {
					dst[i] += add
				}
			}
			dst = dst[count:]
			continue
		}
		groups := int(h >> 1) // bit-packed: groups of 8 values, w bytes each
		// As in decodeDict: whole groups of up to 8-bit indices, one
		// load and one check of the largest index per group.
		check := uint64(n) <= mask
		if w <= 8 && groups > 0 && len(dst) >= 8 && len(data) >= 8 {
			// lut padded to 256 entries, indexed by a byte: no bounds
			// checks (an index past the dictionary is refused by check
			// before it is used; with check off, every index is in it).
			if lut256 == nil {
				lut256 = new([256]uint32)
				copy(lut256[:], lut)
			}
			t := lut256
			for ; groups > 0 && len(dst) >= 8 && len(data) >= 8; groups-- {
				word, s := binary.LittleEndian.Uint64(data), uint(w)
				v0, v1, v2, v3 := word&mask, word>>s&mask, word>>(2*s)&mask, word>>(3*s)&mask
				v4, v5, v6, v7 := word>>(4*s)&mask, word>>(5*s)&mask, word>>(6*s)&mask, word>>(7*s)&mask
				if check {
					if v := max(v0, v1, v2, v3, v4, v5, v6, v7); v >= uint64(n) {
						return fmt.Errorf("an index %d points past the dictionary's %d entries", v, n)
					}
				}
				d := dst[:8:8]
				d[0] += t[uint8(v0)]
				d[1] += t[uint8(v1)]
				d[2] += t[uint8(v2)]
				d[3] += t[uint8(v3)]
				d[4] += t[uint8(v4)]
				d[5] += t[uint8(v5)]
				d[6] += t[uint8(v6)]
				d[7] += t[uint8(v7)]
				data, dst = data[w:], dst[8:]
			}
		}
		for ; groups > 0 && len(dst) > 0; groups-- {
			m := min(8, len(dst))
			if len(data) < (m*w+7)/8 {
				return errors.New("a data page ends inside a bit-packed run")
			}
			g := data
			if len(g) < w+8 {
				clear(pad[:])
				copy(pad[:], data)
				g = pad[:]
			}
			data = data[min(w, len(data)):]
			for i := range m {
				bit := i * w
				v := binary.LittleEndian.Uint64(g[bit>>3:]) >> (bit & 7) & mask
				if v >= uint64(n) {
					return fmt.Errorf("an index %d points past the dictionary's %d entries", v, n)
				}
				dst[i] += lut[v]
			}
			dst = dst[m:]
		}
	}
	return nil
}
