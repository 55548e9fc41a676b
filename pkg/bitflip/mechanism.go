package bitflip

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
)

// MaxBits is the largest vector length L a Mechanism accepts.
const MaxBits = 1 << 24

// Options configures a Mechanism.
type Options struct {
	// LieProbability is q, the probability that a bit is flipped.
	// Required: 2^−64 ≤ q < 1/2 (q = 1/2 would make the report independent
	// of the record, Zhilyaev–Zeber §1, Remark).
	LieProbability float64
	// Bits is L, the length of a record's bit vector (Layout.Width() for an
	// encoded table). Required: 1 ≤ L ≤ MaxBits.
	Bits int
}

// Mechanism is K-randomization R of L-bit vectors with lie probability q.
// It is immutable and safe for concurrent use; draws go through a
// Randomizer, one per goroutine.
//
// Exactness. A bit flips when a uniform 64-bit integer U falls below
// t = ⌊q·2^64⌋ (q is a dyadic rational, so q·2^64 is exact), hence
//
//	q − 2^−64 < P(flip) = t/2^64 ≤ q.
type Mechanism struct {
	q      float64
	bits   int
	words  int
	thresh uint64 // t = ⌊q·2^64⌋
	low    int    // index of t's lowest set bit: below it t has only zeros
}

// New returns the K-randomization mechanism for opts.
func New(opts Options) (*Mechanism, error) {
	q := opts.LieProbability
	if math.IsNaN(q) || math.IsInf(q, 0) {
		return nil, fmt.Errorf("bitflip.New: lie probability q must be finite, got %v", q)
	}
	if !(q >= 0x1p-64 && q < 0.5) {
		return nil, fmt.Errorf("bitflip.New: lie probability q must satisfy 2^-64 ≤ q < 1/2, got %v", q)
	}
	if opts.Bits < 1 || opts.Bits > MaxBits {
		return nil, fmt.Errorf("bitflip.New: bit length L must be in [1, %d], got %d", MaxBits, opts.Bits)
	}
	t := uint64(math.Ldexp(q, 64)) // < 2^63 since q < 1/2; ≥ 1 since q ≥ 2^-64
	return &Mechanism{
		q:      q,
		bits:   opts.Bits,
		words:  (opts.Bits + 63) / 64,
		thresh: t,
		low:    bits.TrailingZeros64(t),
	}, nil
}

// LieProbability returns q.
func (m *Mechanism) LieProbability() float64 { return m.q }

// Bits returns L, the record length in bits.
func (m *Mechanism) Bits() int { return m.bits }

// Words returns the number of uint64 words of a row, ⌈L/64⌉. Bit i of a row
// is bit i%64 of word i/64; bits at positions ≥ L must be zero.
func (m *Mechanism) Words() int { return m.words }

// EpsilonBit returns the privacy loss of one bit (Zhilyaev–Zeber §2 with
// P[R(b) = s] from §1):
//
//	ε_bit = ln((1 − q)/q) = ln(1 + (1 − 2q)/q).
func (m *Mechanism) EpsilonBit() float64 {
	return math.Log1p((1 - 2*m.q) / m.q)
}

// EpsilonRecord returns the per-record privacy loss over all of {0,1}^L
// (SPEC §5): ε_record = L·ln((1 − q)/q), attained by complementary vectors.
func (m *Mechanism) EpsilonRecord() float64 {
	return float64(m.bits) * m.EpsilonBit()
}

// EpsilonEncoded returns the tight per-record privacy loss when every
// record is a valid encoding of l: D·ln((1 − q)/q) with D = l.MaxDistance(),
// the largest Hamming distance between two encodings (two records can only
// be told apart through the bits where they differ).
func (m *Mechanism) EpsilonEncoded(l *Layout) (float64, error) {
	if l == nil || l.Width() != m.bits {
		return 0, fmt.Errorf("bitflip.Mechanism.EpsilonEncoded: layout width must equal L = %d", m.bits)
	}
	return float64(l.MaxDistance()) * m.EpsilonBit(), nil
}

// ReportProbability returns P[R(v) = s] = q^d (1 − q)^(L − d) for two
// records at Hamming distance d, 0 ≤ d ≤ L (Zhilyaev–Zeber §1). It
// underflows to 0 below about 1e−308.
func (m *Mechanism) ReportProbability(d int) float64 {
	return math.Exp(m.logReportProbability(d))
}

func (m *Mechanism) logReportProbability(d int) float64 {
	return float64(d)*math.Log(m.q) + float64(m.bits-d)*math.Log1p(-m.q)
}

// Randomizer applies R to rows, drawing from one *rand.Rand. It is not safe
// for concurrent use.
//
// Speed. Flips are generated 64 at a time, bit-sliced: the 64 comparisons
// U_i < t of independent uniform 64-bit integers are decided together from
// the most significant bit down, one random word per bit position; a lane
// is decided at the first position where its bit of U_i differs from t's,
// so about log2(64) + 1.3 ≈ 7 words decide all 64 lanes (fewer when t has
// few set bits, e.g. 2 words for q = 1/4). Unused flips are kept for the
// next row, so an 8-bit row costs about one random word. All flips are
// independent Ber(t/2^64), whichever row consumes them.
type Randomizer struct {
	m     *Mechanism
	r     *rand.Rand
	pool  uint64 // unused flips in the low avail bits, zeros above
	avail uint
}

// NewRandomizer returns a Randomizer drawing from r.
func (m *Mechanism) NewRandomizer(r *rand.Rand) *Randomizer {
	return &Randomizer{m: m, r: r}
}

// Randomize replaces row (Words() words) by R(row) in place: each of its L
// bits flips independently with probability q; bits ≥ L are left alone.
func (z *Randomizer) Randomize(row []uint64) error {
	if len(row) != z.m.words {
		return fmt.Errorf("bitflip.Randomizer.Randomize: row has %d words, want %d for L = %d", len(row), z.m.words, z.m.bits)
	}
	full := z.m.bits / 64
	for i := 0; i < full; i++ {
		row[i] ^= z.take(64)
	}
	if rest := uint(z.m.bits % 64); rest != 0 {
		row[full] ^= z.take(rest)
	}
	return nil
}

// RandomizeRow is Reset then Randomize, drawing only the row's L flips:
// the last word's lanes past L are never decided, which saves source words
// when every row restarts its source (a row-keyed stream per row). The
// flips of a row have the law Randomize gives them.
func (z *Randomizer) RandomizeRow(row []uint64) error {
	if len(row) != z.m.words {
		return fmt.Errorf("bitflip.Randomizer.RandomizeRow: row has %d words, want %d for L = %d", len(row), z.m.words, z.m.bits)
	}
	z.Reset()
	full := z.m.bits / 64
	for i := 0; i < full; i++ {
		row[i] ^= z.flipsIn(^uint64(0))
	}
	if rest := uint(z.m.bits % 64); rest != 0 {
		row[full] ^= z.flipsIn(uint64(1)<<rest - 1)
	}
	return nil
}

// Reset drops the flips drawn but not used yet, so that the next row's
// flips come from the source's next words only. With a source that is
// reset to a row's own stream (pkg/rng.Keyed) before each row, a row's
// flips are then a function of the row alone, whatever rows came before:
// what makes parallel runs reproducible.
func (z *Randomizer) Reset() { z.pool, z.avail = 0, 0 }

// RandomizeBools is Randomize for a row held as L booleans.
func (z *Randomizer) RandomizeBools(row []bool) error {
	if len(row) != z.m.bits {
		return fmt.Errorf("bitflip.Randomizer.RandomizeBools: row has %d bits, want L = %d", len(row), z.m.bits)
	}
	for i := 0; i < len(row); i += 64 {
		n := min(64, len(row)-i)
		f := z.take(uint(n))
		for j := range n {
			row[i+j] = row[i+j] != (f>>j&1 == 1)
		}
	}
	return nil
}

// take returns n ≤ 64 fresh independent flips in its low n bits.
func (z *Randomizer) take(n uint) uint64 {
	if n <= z.avail {
		out := z.pool & (uint64(1)<<n - 1) // n = 64 gives all ones
		z.pool >>= n
		z.avail -= n
		return out
	}
	out := z.pool
	k := n - z.avail
	fresh := z.flips()
	out |= (fresh & (uint64(1)<<k - 1)) << z.avail
	z.pool = fresh >> k
	z.avail = 64 - k
	return out
}

// flips returns 64 independent Ber(t/2^64) bits: lane i is 1 iff U_i < t,
// where bit k of U_i is bit i of the k-th word drawn (most significant
// first). Lanes still undecided after t's lowest set bit have U_i ≥ t.
func (z *Randomizer) flips() uint64 { return z.flipsIn(^uint64(0)) }

// flipsIn is flips for the lanes of mask only (the others read 0): lanes
// are decided independently, so leaving some out changes nothing for the
// rest, and the loop ends as soon as the lanes wanted are decided — for a
// row of L < 64 bits, about log2(L) + 2 words instead of log2(64) + 2.
func (z *Randomizer) flipsIn(mask uint64) uint64 {
	t := z.m.thresh
	undecided := mask
	var less uint64
	for k := 63; k >= z.m.low; k-- {
		u := z.r.Uint64()
		if t>>uint(k)&1 == 1 {
			less |= undecided &^ u // U_i's bit 0 < t's bit 1
			undecided &= u
		} else {
			undecided &^= u // U_i's bit 1 > t's bit 0
		}
		if undecided == 0 {
			break
		}
	}
	return less
}
