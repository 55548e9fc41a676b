package pad

import (
	"fmt"
	"math/rand/v2"
)

// Encrypt returns the ciphertext c = (x + v) mod k of one cell.
// It requires k ≥ 1 and x, v < k (callers validating whole columns use
// EncryptColumn); x + v is formed in 64 bits so k up to 2^32 − 1 is safe.
func Encrypt(x, v, k uint32) uint32 {
	s := uint64(x) + uint64(v)
	if s >= uint64(k) {
		s -= uint64(k)
	}
	return uint32(s)
}

// Decrypt returns the plaintext x = (c − v) mod k of one cell.
// It requires k ≥ 1 and c, v < k.
func Decrypt(c, v, k uint32) uint32 {
	// c + k − v lies in [1, 2k): one conditional subtraction, which the
	// compiler makes a conditional move. A branch on c ≥ v went either
	// way at random (the pads are uniform): its mispredictions were a
	// third of decrypt's time on one core.
	s := uint64(c) + uint64(k) - uint64(v)
	if s >= uint64(k) {
		s -= uint64(k)
	}
	return uint32(s)
}

// DrawPads fills dst with independent pads uniform on Z_k.
// rand.Uint32N is unbiased (Lemire's multiply-and-reject), so every residue
// has probability exactly 1/k given a uniform source.
func DrawPads(r *rand.Rand, k uint32, dst []uint32) error {
	if r == nil {
		return fmt.Errorf("pad.DrawPads: nil random source")
	}
	if k < 1 {
		return fmt.Errorf("pad.DrawPads: alphabet size k must be ≥ 1, got %d", k)
	}
	for i := range dst {
		dst[i] = r.Uint32N(k)
	}
	return nil
}

// EncryptColumn sets c[i] = (x[i] + v[i]) mod k for a whole column after
// checking that the slices have equal length and every value lies in Z_k.
// c may alias x.
func EncryptColumn(c, x, v []uint32, k uint32) error {
	if err := checkColumn(x, v, c, k); err != nil {
		return fmt.Errorf("pad.EncryptColumn: %w", err)
	}
	for i := range x {
		c[i] = Encrypt(x[i], v[i], k)
	}
	return nil
}

// DecryptColumn sets x[i] = (c[i] − v[i]) mod k for a whole column after
// checking that the slices have equal length and every value lies in Z_k.
// x may alias c.
func DecryptColumn(x, c, v []uint32, k uint32) error {
	if err := checkColumn(c, v, x, k); err != nil {
		return fmt.Errorf("pad.DecryptColumn: %w", err)
	}
	v, x = v[:len(c)], x[:len(c)] // lengths checked: no bounds check per cell
	for i := range c {
		x[i] = Decrypt(c[i], v[i], k)
	}
	return nil
}

// checkColumn validates an input column, its pads and the output slice.
func checkColumn(in, v, out []uint32, k uint32) error {
	if k < 1 {
		return fmt.Errorf("alphabet size k must be ≥ 1, got %d", k)
	}
	if len(in) != len(v) || len(out) != len(in) {
		return fmt.Errorf("length mismatch: %d values, %d pads, %d outputs", len(in), len(v), len(out))
	}
	for i := range in {
		if in[i] >= k {
			return fmt.Errorf("row %d: value %d outside Z_%d", i, in[i], k)
		}
		if v[i] >= k {
			return fmt.Errorf("row %d: pad %d outside Z_%d", i, v[i], k)
		}
	}
	return nil
}
