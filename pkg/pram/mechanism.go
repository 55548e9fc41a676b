package pram

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
)

// Mechanism is γ-diagonal PRAM on a Domain (Lin–Wang–Rane §III-A):
//
//	A[x̄, x̌] = γ/q if x̄ = x̌, else 1/q,   q = γ + K − 1,
//
// applied additively: a row x̌ becomes x̌ + o (component-wise mod k_j) with
// offset o = 0 with probability γ/q and o = g with probability 1/q for each
// of the K − 1 joint values g ≠ 0. Drawing an offset costs O(d) whatever K
// is; no K×K matrix is ever formed. A Mechanism is immutable and safe for
// concurrent use (each goroutine brings its own *rand.Rand).
//
// Exactness. The keep event {o = 0} is decided by comparing a uniform
// 128-bit integer U with t = ⌊2^128·γ/q⌋, computed once in exact rational
// arithmetic from the float64 γ and the integer K, so
//
//	γ/q − 2^−128 < P(keep) ≤ γ/q,
//
// a relative error below 2^−66 even at K = 2^62 (where γ/q ≥ 2^−62); a
// float64 comparison u < γ/q would have only 53-bit absolute resolution
// and could not represent γ/q near 2^−62 at all. U's low word is drawn only
// when the high words tie (probability 2^−64), so a row costs one 64-bit
// draw, plus one unbiased draw of g in [1, K) (rand.Uint64N) and a
// mixed-radix decode when it moves.
type Mechanism struct {
	gamma  float64
	domain Domain
	// keepHi·2^64 + keepLo = t, the keep threshold; keepAll when K = 1.
	keepHi, keepLo uint64
	keepAll        bool
}

// NewMechanism returns γ-diagonal PRAM on d with γ > 1 finite.
func NewMechanism(gamma float64, d Domain) (*Mechanism, error) {
	if err := checkGamma(gamma); err != nil {
		return nil, fmt.Errorf("pram.NewMechanism: %w", err)
	}
	if d.size == 0 {
		return nil, fmt.Errorf("pram.NewMechanism: zero Domain; build it with NewDomain")
	}
	m := &Mechanism{gamma: gamma, domain: d}
	if d.size == 1 {
		m.keepAll = true // A = [1]: the only value stays.
		return m, nil
	}
	// t = ⌊2^128 · γ / (γ + K − 1)⌋ exactly; γ is a dyadic rational.
	g := new(big.Rat).SetFloat64(gamma)
	q := new(big.Rat).Add(g, new(big.Rat).SetInt(new(big.Int).SetUint64(d.size-1)))
	p := new(big.Rat).Quo(g, q)
	num := new(big.Int).Lsh(p.Num(), 128)
	t := num.Quo(num, p.Denom())
	mask := new(big.Int).SetUint64(math.MaxUint64)
	m.keepLo = new(big.Int).And(t, mask).Uint64()
	m.keepHi = t.Rsh(t, 64).Uint64() // t < 2^128 since γ/q < 1 for K ≥ 2
	return m, nil
}

// Gamma returns γ.
func (m *Mechanism) Gamma() float64 { return m.gamma }

// Domain returns the joint alphabet the mechanism acts on.
func (m *Mechanism) Domain() Domain { return m.domain }

// Q returns the normalising constant q = γ + K − 1.
func (m *Mechanism) Q() float64 { return m.gamma + float64(m.domain.size-1) }

// KeepProbability returns A's diagonal entry γ/q, the probability that a
// row is left unchanged.
func (m *Mechanism) KeepProbability() float64 { return m.gamma / m.Q() }

// Transition returns the matrix entry A[to, from]: the probability that
// joint value from is released as to.
func (m *Mechanism) Transition(to, from uint64) float64 {
	if to == from {
		return m.gamma / m.Q()
	}
	return 1 / m.Q()
}

// keep decides the event {o = 0}: U < t for a lazily drawn 128-bit U.
func (m *Mechanism) keep(r *rand.Rand) bool {
	if m.keepAll {
		return true
	}
	hi := r.Uint64()
	if hi != m.keepHi {
		return hi < m.keepHi
	}
	return r.Uint64() < m.keepLo
}

// DrawOffset writes a random PRAM offset o ∈ G into dst (len d): all zeros
// with probability γ/q, otherwise the components of a joint index drawn
// uniformly from [1, K).
func (m *Mechanism) DrawOffset(r *rand.Rand, dst []uint32) error {
	if len(dst) != len(m.domain.ks) {
		return fmt.Errorf("pram.Mechanism.DrawOffset: %d components, domain has %d", len(dst), len(m.domain.ks))
	}
	if m.keep(r) {
		clear(dst)
		return nil
	}
	m.domain.decode(1+r.Uint64N(m.domain.size-1), dst)
	return nil
}

// PerturbColumns perturbs a batch of joint rows in place: cols[j][i] is
// component j of row i (one slice per column of the joined table, as the
// server holds them). Each row independently gets an offset drawn as in
// DrawOffset, added component-wise mod k_j. All values must lie in their
// alphabets (checked first, so a bad batch is left untouched).
func (m *Mechanism) PerturbColumns(r *rand.Rand, cols [][]uint32) error {
	ks := m.domain.ks
	if err := checkColumns(ks, cols); err != nil {
		return fmt.Errorf("pram.Mechanism.PerturbColumns: %w", err)
	}
	rows := len(cols[0])
	offset := make([]uint32, len(ks)) // one scratch buffer per batch
	size := m.domain.size
	for i := range rows {
		if m.keep(r) {
			continue
		}
		m.domain.decode(1+r.Uint64N(size-1), offset)
		for j, k := range ks {
			cols[j][i] = addMod(cols[j][i], offset[j], k)
		}
	}
	return nil
}

// checkColumns checks a batch: one column per alphabet, equal lengths,
// every value inside its alphabet.
func checkColumns(ks []uint32, cols [][]uint32) error {
	if len(cols) != len(ks) {
		return fmt.Errorf("%d columns, domain has %d", len(cols), len(ks))
	}
	rows := len(cols[0])
	for j, col := range cols {
		if len(col) != rows {
			return fmt.Errorf("column %d has %d rows, column 0 has %d", j, len(col), rows)
		}
		for i, v := range col {
			if v >= ks[j] {
				return fmt.Errorf("column %d row %d: value %d outside Z_%d", j, i, v, ks[j])
			}
		}
	}
	return nil
}
