package pram

import (
	"fmt"
	"math"
	"math/bits"
)

// MaxJointSize is the largest joint alphabet size K a Domain accepts, 2^62.
// It keeps K, q = γ + K − 1 and all joint indexes far from uint64 overflow.
const MaxJointSize = 1 << 62

// Domain is the joint alphabet G = Z_{k_1} × … × Z_{k_d} of the curators'
// joined columns, with joint values numbered in mixed radix, first component
// most significant (row-major, the order of a printed contingency table):
//
//	g(x) = ((x_1·k_2 + x_2)·k_3 + x_3)·… ·k_d + x_d,   0 ≤ g < K = Π k_j.
//
// Build it with NewDomain; the zero Domain is unusable. A Domain is
// immutable and safe for concurrent use.
type Domain struct {
	ks []uint32
	// recip[j] = ⌊(2^64 − 1)/k_j⌋ + 1 (0 for k_j = 1), for division by k_j
	// through one multiplication (see divMod32).
	recip []uint64
	size  uint64
}

// NewDomain returns the domain with alphabet sizes ks (one per column). It
// rejects an empty list, any k_j < 1, and K = Π k_j > MaxJointSize.
func NewDomain(ks []uint32) (Domain, error) {
	if len(ks) == 0 {
		return Domain{}, fmt.Errorf("pram.NewDomain: no columns")
	}
	size := uint64(1)
	for j, k := range ks {
		if k < 1 {
			return Domain{}, fmt.Errorf("pram.NewDomain: column %d: alphabet size must be ≥ 1, got %d", j, k)
		}
		hi, lo := bits.Mul64(size, uint64(k))
		if hi != 0 || lo > MaxJointSize {
			return Domain{}, fmt.Errorf("pram.NewDomain: joint alphabet size Π k_j of %v exceeds 2^62", ks)
		}
		size = lo
	}
	recip := make([]uint64, len(ks))
	for j, k := range ks {
		recip[j] = math.MaxUint64/uint64(k) + 1 // wraps to 0 for k = 1
	}
	return Domain{ks: append([]uint32(nil), ks...), recip: recip, size: size}, nil
}

// Size returns K, the number of joint values.
func (d Domain) Size() uint64 { return d.size }

// Dims returns d, the number of columns (components).
func (d Domain) Dims() int { return len(d.ks) }

// Alphabets returns a copy of the alphabet sizes k_1, …, k_d.
func (d Domain) Alphabets() []uint32 { return append([]uint32(nil), d.ks...) }

// Encode returns the joint index g(x) of the components x.
func (d Domain) Encode(x []uint32) (uint64, error) {
	if len(x) != len(d.ks) {
		return 0, fmt.Errorf("pram.Domain.Encode: %d components, domain has %d", len(x), len(d.ks))
	}
	var g uint64
	for j, k := range d.ks {
		if x[j] >= k {
			return 0, fmt.Errorf("pram.Domain.Encode: component %d is %d, outside Z_%d", j, x[j], k)
		}
		g = g*uint64(k) + uint64(x[j])
	}
	return g, nil
}

// Decode writes the components of joint index g into dst (len d).
func (d Domain) Decode(g uint64, dst []uint32) error {
	if len(dst) != len(d.ks) {
		return fmt.Errorf("pram.Domain.Decode: %d components, domain has %d", len(dst), len(d.ks))
	}
	if g >= d.size {
		return fmt.Errorf("pram.Domain.Decode: index %d outside [0, %d)", g, d.size)
	}
	d.decode(g, dst)
	return nil
}

// decode is Decode without checks. It peels components off the least
// significant end; once the remaining index fits in 32 bits (always, when
// K ≤ 2^32) each step is a multiplication instead of a hardware division,
// which dominated the cost of drawing an offset.
func (d Domain) decode(g uint64, dst []uint32) {
	j := len(d.ks) - 1
	for ; j >= 0 && g > math.MaxUint32; j-- {
		k := uint64(d.ks[j])
		dst[j] = uint32(g % k)
		g /= k
	}
	g32 := uint32(g)
	for ; j >= 0; j-- {
		g32, dst[j] = divMod32(g32, d.ks[j], d.recip[j])
	}
}

// divMod32 returns a/k and a mod k using c = ⌊(2^64 − 1)/k⌋ + 1, exact for
// all 32-bit a and k (Lemire, Kaser, Kurz, "Faster Remainder by Direct
// Computation", Software: Practice and Experience 49(6), 2019, Theorem 1:
// a/k = ⌊c·a/2^64⌋ when c = ⌈2^64/k⌉). c = 0 encodes k = 1.
func divMod32(a, k uint32, c uint64) (q, r uint32) {
	if c == 0 {
		return a, 0
	}
	hi, _ := bits.Mul64(c, uint64(a))
	q = uint32(hi)
	return q, a - q*k
}

// Apply adds offset to cells component-wise, cells[j] = (cells[j] +
// offset[j]) mod k_j: the action of a PRAM offset on an (encrypted) row.
// Both must have d components, each inside its alphabet.
func (d Domain) Apply(cells, offset []uint32) error {
	if len(cells) != len(d.ks) || len(offset) != len(d.ks) {
		return fmt.Errorf("pram.Domain.Apply: %d cells and %d offsets, domain has %d components", len(cells), len(offset), len(d.ks))
	}
	for j, k := range d.ks {
		if cells[j] >= k || offset[j] >= k {
			return fmt.Errorf("pram.Domain.Apply: component %d: cell %d or offset %d outside Z_%d", j, cells[j], offset[j], k)
		}
		cells[j] = addMod(cells[j], offset[j], k)
	}
	return nil
}

// addMod returns (a + b) mod k for a, b < k, without overflow.
func addMod(a, b, k uint32) uint32 {
	s := uint64(a) + uint64(b)
	if s >= uint64(k) {
		s -= uint64(k)
	}
	return uint32(s)
}
