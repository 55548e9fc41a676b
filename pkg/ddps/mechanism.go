package ddps

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// MaxValues is the largest number of categories V a Mechanism accepts.
const MaxValues = 1 << 24

// sumTolerance is how far π_⊥0 + … + π_⊥V + π_s may be from 1.
const sumTolerance = 1e-9

// roundingSlack is how far from 1 the float sum Σ of the V + 2 masses may
// land by rounding alone. Adding n = V + 2 floats whose sum is about 1 errs
// by at most (n − 1)·2⁻⁵³; masses that were rounded themselves (a quotient
// like (1 − π_s)/(V + 1), or p/Σ after a renormalization) add at most
// 2·2⁻⁵³ more (each is off by at most 2⁻⁵³ of itself, twice), so
//
//	|Σ − 1| ≤ (V + 3)·2⁻⁵³ < (V + 2)·2⁻⁵²
//
// Masses within it are kept as given: dividing them by their float sum
// would only move them by an ulp (π_s = 0.1 would become
// 0.09999999999999998 for V = 15), and New would not rebuild the mechanism
// whose PiS and PiBottom it is given. Masses New normalized lie within it
// again, so a rebuilt mechanism always equals the original.
func roundingSlack(V int) float64 { return float64(V+2) * 0x1p-52 }

// Options configures a Mechanism.
type Options struct {
	// Values is V, the number of categories (outputs ⊥1..⊥V). Required: V ≥ 1.
	Values int
	// PiS is π_s, the sampling mass added to ⊥0 in round one and to the
	// owner's own value in round two. Required: 0 < π_s < 1.
	PiS float64
	// PiBottom is π_⊥ = (π_⊥0, …, π_⊥V), the noise masses, V + 1 entries,
	// each ≥ 0, with Σ π_⊥ + π_s = 1 within 1e-9: kept as given when the sum
	// is 1 up to rounding ((V + 2)·2⁻⁵²), else all masses, π_s included, are
	// divided by the sum. Default: (1 − π_s)/(V + 1) each.
	PiBottom []float64
	// NonParticipants allows true value 0 (⊥0: the owner holds none of the
	// V values) and protects it in ε. Default false: true values are 1..V
	// and Report rejects 0.
	NonParticipants bool
}

// Mechanism is DDPS for one categorical value. It is immutable and safe for
// concurrent use (each goroutine brings its own *rand.Rand).
//
// Exactness. Outcome i of the V + 2 masses (π_⊥0, …, π_⊥V, π_s) is drawn
// by finding the uniform 64-bit word U in [C_{i−1}, C_i), where
// C_i = ⌊2^64·(m_0 + … + m_i)⌋ with the partial sums in float64; each
// probability is within about (V + 2)·2^−53 of its mass (rounding of the
// partial sums), and a zero mass is never drawn.
type Mechanism struct {
	values  int
	piS     float64
	piBot   []float64
	nonPart bool
	cdf     []uint64 // C_0..C_V; outcome V + 1 (the π_s draw) is [C_V, 2^64)
}

// New returns the DDPS mechanism for opts.
func New(opts Options) (*Mechanism, error) {
	V := opts.Values
	if V < 1 || V > MaxValues {
		return nil, fmt.Errorf("ddps.New: number of values V must be in [1, %d], got %d", MaxValues, V)
	}
	ps := opts.PiS
	if math.IsNaN(ps) || math.IsInf(ps, 0) || !(ps > 0 && ps < 1) {
		return nil, fmt.Errorf("ddps.New: sampling mass π_s must be in (0, 1), got %v", ps)
	}
	pb := make([]float64, V+1)
	if opts.PiBottom == nil {
		for o := range pb {
			pb[o] = (1 - ps) / float64(V+1)
		}
	} else {
		if len(opts.PiBottom) != V+1 {
			return nil, fmt.Errorf("ddps.New: π_⊥ needs V + 1 = %d masses (⊥0..⊥%d), got %d", V+1, V, len(opts.PiBottom))
		}
		total := ps
		for o, p := range opts.PiBottom {
			if math.IsNaN(p) || math.IsInf(p, 0) || p < 0 {
				return nil, fmt.Errorf("ddps.New: π_⊥%d must be finite and ≥ 0, got %v", o, p)
			}
			total += p
		}
		switch d := math.Abs(total - 1); {
		case d > sumTolerance:
			return nil, fmt.Errorf("ddps.New: π_⊥0 + … + π_⊥%d + π_s must be 1, got %.12g", V, total)
		case d > roundingSlack(V):
			for o, p := range opts.PiBottom {
				pb[o] = p / total
			}
			ps /= total
		default:
			copy(pb, opts.PiBottom)
		}
	}
	m := &Mechanism{values: V, piS: ps, piBot: pb, nonPart: opts.NonParticipants}
	if m.domainSize() >= 2 {
		for o := m.domainStart(); o <= V; o++ {
			if pb[o] == 0 {
				return nil, fmt.Errorf("ddps.New: π_⊥%d = 0 would make output ⊥%d reveal true value %d (ε = ∞)", o, o, o)
			}
		}
	}
	m.cdf = make([]uint64, V+1)
	var cum float64
	for o, p := range pb {
		cum += p
		m.cdf[o] = toUint64(cum)
	}
	return m, nil
}

// toUint64 returns ⌊2^64·x⌋ for x in [0, 1], saturating at 2^64 − 1.
func toUint64(x float64) uint64 {
	if x >= 1 {
		return math.MaxUint64
	}
	return uint64(math.Ldexp(x, 64))
}

// domainStart is the smallest possible true value: 0 with non-participants.
func (m *Mechanism) domainStart() int {
	if m.nonPart {
		return 0
	}
	return 1
}

func (m *Mechanism) domainSize() int { return m.values - m.domainStart() + 1 }

// Values returns V.
func (m *Mechanism) Values() int { return m.values }

// PiS returns π_s (after normalization).
func (m *Mechanism) PiS() float64 { return m.piS }

// PiBottom returns a copy of π_⊥0..π_⊥V (after normalization).
func (m *Mechanism) PiBottom() []float64 { return append([]float64(nil), m.piBot...) }

// NonParticipants reports whether true value 0 is allowed.
func (m *Mechanism) NonParticipants() bool { return m.nonPart }

// Epsilon returns ε = max_{o ∈ D} ln((π_⊥o + π_s)/π_⊥o) over the domain D
// of true values (Joy Eq. 42–44; see the package comment), 0 when D has a
// single value.
func (m *Mechanism) Epsilon() float64 {
	if m.domainSize() < 2 {
		return 0
	}
	var eps float64
	for o := m.domainStart(); o <= m.values; o++ {
		eps = max(eps, math.Log1p(m.piS/m.piBot[o]))
	}
	return eps
}

// RoundOne returns the distribution of a round-one report over ⊥0..⊥V
// (Eq. 36): π_⊥o + π_s·[o = 0], whatever the true value.
func (m *Mechanism) RoundOne() []float64 {
	p := m.PiBottom()
	p[0] += m.piS
	return p
}

// RoundTwo returns the distribution of a round-two report over ⊥0..⊥V for
// true value v (Eq. 37–38): π_⊥o + π_s·[o = v].
func (m *Mechanism) RoundTwo(v int) ([]float64, error) {
	if err := m.checkValue(v); err != nil {
		return nil, fmt.Errorf("ddps.Mechanism.RoundTwo: %w", err)
	}
	p := m.PiBottom()
	p[v] += m.piS
	return p, nil
}

func (m *Mechanism) checkValue(v int) error {
	if v < m.domainStart() || v > m.values {
		if v == 0 {
			return fmt.Errorf("true value 0 (not participating) needs Options.NonParticipants")
		}
		return fmt.Errorf("true value %d outside [%d, %d]", v, m.domainStart(), m.values)
	}
	return nil
}

// Report draws the two reports of an owner with true value v (1..V, i.e.
// codebook index + 1, or 0 for a non-participant when allowed): one from
// round one, two from round two, independently. Outputs are 0..V for
// ⊥0..⊥V.
func (m *Mechanism) Report(r *rand.Rand, v int) (one, two int, err error) {
	if err := m.checkValue(v); err != nil {
		return 0, 0, fmt.Errorf("ddps.Mechanism.Report: %w", err)
	}
	one = m.draw(r)
	if one > m.values {
		one = 0
	}
	two = m.draw(r)
	if two > m.values {
		two = v
	}
	return one, two, nil
}

// draw returns outcome i in 0..V+1 of the masses (π_⊥0, …, π_⊥V, π_s): the
// smallest i with U < C_i, or V + 1 when there is none.
func (m *Mechanism) draw(r *rand.Rand) int {
	u := r.Uint64()
	lo, hi := 0, len(m.cdf) // answer in [lo, hi]
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if u < m.cdf[mid] {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}
