package bitflip

import (
	"encoding/binary"
	"fmt"

	"github.com/pramkit/pramkit/pkg/rng"
)

// RandomizeKeyed replaces each row of rows (L ≤ 64 bits, one word each)
// by R(row), row i's flips drawn from its own stream of k under tag,
// (tag, row0 + i): a function of the row's position alone, as RandomizeRow
// with a stream reset per row, so a parallel run gives the same reports at
// any chunk size. blocks is scratch space, returned for the next call.
//
// The flips are those of the Randomizer's bit-sliced comparison U_i < t
// (see Randomizer), lane i deciding at the first bit where U_i and t
// differ, but a level takes only the row's L lanes: L fresh bits, an
// L-bit piece of a 64-bit word (⌊64/L⌋ pieces a word), instead of a whole
// word per level. Every bit of U_i is still a fresh fair bit, independent
// of the others, so each flip is Ber(t/2^64) and the flips are
// independent, exactly as before; what changes is only which random bits
// serve which lane. The first two words of every row's stream (its
// counter-0 AES block) are computed for the whole batch at once with
// rng.Keyed.Blocks, which pipelines AES; for L = 17 they hold 6 levels,
// enough to decide all 17 lanes in 3 rows out of 4 ((1 − 2^−6)^17), and
// the others go on with the row's stream (rng.Keyed.Resume). Before, a row took a whole word per
// level and about 3.5 AES blocks one by one.
func (m *Mechanism) RandomizeKeyed(rows []uint64, k *rng.Keyed, tag uint32, row0 uint64, blocks []byte) ([]byte, error) {
	L := m.bits
	if L > 64 {
		return blocks, fmt.Errorf("bitflip.Mechanism.RandomizeKeyed: L = %d bits, at most 64", L)
	}
	n := len(rows)
	if cap(blocks) < 16*n {
		blocks = make([]byte, 16*n)
	}
	blocks = blocks[:16*n]
	if err := k.Blocks(blocks, tag, row0); err != nil {
		return blocks, err
	}
	mask := ^uint64(0) >> (64 - uint(L))
	per := 64 / L // pieces per word
	t, low := m.thresh, m.low
	var st rng.Stream
	for i := range rows {
		b := blocks[16*i : 16*i+16]
		// Words in the order of the row's stream (rng.Stream.Uint64).
		w0, w1 := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
		used := 0 // words of the row's stream taken so far
		var word uint64
		left := 0 // pieces left in word
		undecided, less := mask, uint64(0)
		for bit := 63; bit >= low; bit-- {
			if left == 0 {
				switch used {
				case 0:
					word = w0
				case 1:
					word = w1
				case 2:
					k.Resume(&st, tag, row0+uint64(i), b, 2)
					word = st.Uint64()
				default:
					word = st.Uint64()
				}
				used++
				left = per
			}
			u := word & mask
			if L < 64 {
				word >>= uint(L)
			}
			left--
			if t>>uint(bit)&1 == 1 {
				less |= undecided &^ u // U_i's bit 0 < t's bit 1
				undecided &= u
			} else {
				undecided &^= u // U_i's bit 1 > t's bit 0
			}
			if undecided == 0 {
				break
			}
		}
		rows[i] ^= less
	}
	return blocks, nil
}
