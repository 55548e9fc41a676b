package ddps

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
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
//
// Memory. Past smallTable outcomes the C_i are not all stored: only every
// 16th partial sum is (ends, cums), and a draw adds the masses of one
// stride again from the partial sum before it, in the same order, so it
// finds the same C_i bit for bit. (C_i cannot be had by a multiplication,
// even for equal masses: (i + 1)·m differs from the sum m + … + m in the
// last bits, and a draw near C_i would change.) Equal masses (the default)
// are one number. At V = 1M the masses and the table of the C_i took
// 16 MB; the strided sums take 1 MB.
type Mechanism struct {
	values  int
	piS     float64
	piBot   []float64 // π_⊥0..π_⊥V; nil when all are each
	each    float64
	nonPart bool
	// ends[k] = C_i and cums[k] the float64 partial sum m_0 + … + m_i for
	// i = min(k·stride + stride − 1, V); outcome V + 1 (the π_s draw) is
	// [C_V, 2^64).
	ends   []uint64
	cums   []float64
	stride int // outcomes per stored sum: 1, or 16 past smallTable
}

// smallTable is the number of outcomes up to which every C_i is stored
// (64 KiB): a draw then adds no mass again.
const smallTable = 1 << 12

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
	m := &Mechanism{values: V, piS: ps, nonPart: opts.NonParticipants}
	if opts.PiBottom == nil {
		m.each = (1 - ps) / float64(V+1)
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
		pb := slices.Clone(opts.PiBottom)
		switch d := math.Abs(total - 1); {
		case d > sumTolerance:
			return nil, fmt.Errorf("ddps.New: π_⊥0 + … + π_⊥%d + π_s must be 1, got %.12g", V, total)
		case d > roundingSlack(V):
			for o, p := range pb {
				pb[o] = p / total
			}
			m.piS = ps / total
		}
		if slices.ContainsFunc(pb, func(p float64) bool { return p != pb[0] }) {
			m.piBot = pb
		} else {
			m.each = pb[0]
		}
	}
	if m.domainSize() >= 2 {
		for o := m.domainStart(); o <= V; o++ {
			if m.mass(o) == 0 {
				return nil, fmt.Errorf("ddps.New: π_⊥%d = 0 would make output ⊥%d reveal true value %d (ε = ∞)", o, o, o)
			}
		}
	}
	m.stride = 1
	if V+1 > smallTable {
		m.stride = 16
	}
	strides := V/m.stride + 1 // outcomes 0..V
	m.ends, m.cums = make([]uint64, 0, strides), make([]float64, 0, strides)
	var cum float64
	for o := 0; o <= V; o++ {
		cum += m.mass(o)
		if o%m.stride == m.stride-1 || o == V {
			m.ends, m.cums = append(m.ends, toUint64(cum)), append(m.cums, cum)
		}
	}
	return m, nil
}

// mass returns π_⊥o.
func (m *Mechanism) mass(o int) float64 {
	if m.piBot == nil {
		return m.each
	}
	return m.piBot[o]
}

// toUint64 returns ⌊2^64·x⌋ for x in [0, 1], saturating at 2^64 − 1.
func toUint64(x float64) uint64 {
	if x >= 1 {
		return math.MaxUint64
	}
	return uint64(x * 0x1p64) // exact: a power of two, and x·2^64 < 2^64
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

// PiBottom returns a copy of π_⊥0..π_⊥V (after normalization): V + 1
// floats; UniformMass gives equal masses as one.
func (m *Mechanism) PiBottom() []float64 {
	if m.piBot != nil {
		return slices.Clone(m.piBot)
	}
	p := make([]float64, m.values+1)
	for o := range p {
		p[o] = m.each
	}
	return p
}

// UniformMass returns the mass every π_⊥o has, when they are all equal
// (the default masses, or equal ones given).
func (m *Mechanism) UniformMass() (float64, bool) { return m.each, m.piBot == nil }

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
		eps = max(eps, math.Log1p(m.piS/m.mass(o)))
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

// draw returns outcome i in 0..V+1 of the masses (π_⊥0, …, π_⊥V, π_s)
// for a uniform 64-bit word.
func (m *Mechanism) draw(r *rand.Rand) int { return m.outcome(r.Uint64()) }

// outcome is the smallest i with u < C_i, or V + 1 when there is none: the
// first stride whose last C_i exceeds u (a binary search of ends), then
// the partial sums within it, added again from the stride before.
func (m *Mechanism) outcome(u uint64) int {
	lo, hi := 0, len(m.ends) // answer in [lo, hi]
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if u < m.ends[mid] {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo == len(m.ends) {
		return m.values + 1
	}
	var cum float64
	if lo > 0 {
		cum = m.cums[lo-1]
	}
	o := lo * m.stride
	for { // ends at o ≤ the stride's last outcome, whose C_i > u
		cum += m.mass(o)
		if u < toUint64(cum) {
			return o
		}
		o++
	}
}
