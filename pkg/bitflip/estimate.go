package bitflip

import (
	"fmt"
	"math"
	"math/bits"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/pramkit/pramkit/pkg/estimate"
)

// Tally holds what estimation needs from the released reports: their
// number N and, per bit, how many reports have it set.
type Tally struct {
	N    int64
	Ones []int64 // len L
}

// NewTally returns an empty tally for L-bit reports.
func (m *Mechanism) NewTally() *Tally {
	return &Tally{Ones: make([]int64, m.bits)}
}

// Add counts one report (⌈L/64⌉ words; bits ≥ L are ignored). It costs
// O(words + set bits).
func (t *Tally) Add(row []uint64) error {
	L := len(t.Ones)
	if len(row) != (L+63)/64 {
		return fmt.Errorf("bitflip.Tally.Add: row has %d words, want %d for L = %d", len(row), (L+63)/64, L)
	}
	for w, x := range row {
		if w == len(row)-1 && L%64 != 0 {
			x &= 1<<(L%64) - 1
		}
		for x != 0 {
			t.Ones[64*w+bits.TrailingZeros64(x)]++
			x &= x - 1
		}
	}
	t.N++
	return nil
}

// Merge adds the counts of o (same L) to t.
func (t *Tally) Merge(o *Tally) error {
	if len(o.Ones) != len(t.Ones) {
		return fmt.Errorf("bitflip.Tally.Merge: L = %d and %d differ", len(t.Ones), len(o.Ones))
	}
	t.N += o.N
	for i, c := range o.Ones {
		t.Ones[i] += c
	}
	return nil
}

// Estimate is the estimated frequency of one bit among the records.
type Estimate struct {
	// Freq is f̂ = (ȳ − q)/(1 − 2q), unbiased; it can leave [0, 1].
	Freq float64
	// SE is the standard error for a population frequency (records drawn
	// independently from a population), √(ȳ(1 − ȳ)/n)/(1 − 2q).
	SE float64
	// Lo and Hi bound the normal confidence interval Freq ± z·SE.
	Lo, Hi float64
	// SETable is the exact standard error for the frequency in the fixed
	// table, √(q(1 − q)/n)/(1 − 2q); use Freq ± z·SETable for that target.
	SETable float64
}

// EstimateBit estimates a bit's frequency from ones reports with the bit
// set out of n, with a normal confidence interval at level confidence
// (e.g. 0.95). See the package comment for the variance derivation.
func (m *Mechanism) EstimateBit(ones, n int64, confidence float64) (Estimate, error) {
	z, err := zFor(confidence)
	if err != nil {
		return Estimate{}, fmt.Errorf("bitflip.Mechanism.EstimateBit: %w", err)
	}
	if n < 1 || ones < 0 || ones > n {
		return Estimate{}, fmt.Errorf("bitflip.Mechanism.EstimateBit: need 0 ≤ ones ≤ n and n ≥ 1, got ones = %d, n = %d", ones, n)
	}
	return m.estimate(ones, n, z), nil
}

func (m *Mechanism) estimate(ones, n int64, z float64) Estimate {
	q := m.q
	nf := float64(n)
	mean := float64(ones) / nf
	f := (mean - q) / (1 - 2*q)
	se := math.Sqrt(mean*(1-mean)/nf) / (1 - 2*q)
	return Estimate{
		Freq:    f,
		SE:      se,
		Lo:      f - z*se,
		Hi:      f + z*se,
		SETable: math.Sqrt(q*(1-q)/nf) / (1 - 2*q),
	}
}

// EstimateBits returns EstimateBit for every bit of t.
func (m *Mechanism) EstimateBits(t *Tally, confidence float64) ([]Estimate, error) {
	z, err := zFor(confidence)
	if err != nil {
		return nil, fmt.Errorf("bitflip.Mechanism.EstimateBits: %w", err)
	}
	if err := m.checkTally(t); err != nil {
		return nil, fmt.Errorf("bitflip.Mechanism.EstimateBits: %w", err)
	}
	out := make([]Estimate, len(t.Ones))
	for i, c := range t.Ones {
		out[i] = m.estimate(c, t.N, z)
	}
	return out, nil
}

// Distribution estimates the distribution of group j's values: the
// per-bit estimates f̂ (for a binary group (1 − f̂, f̂)) projected onto the
// probability simplex, in label order.
func (m *Mechanism) Distribution(l *Layout, j int, t *Tally) ([]float64, error) {
	if l == nil || l.Width() != m.bits {
		return nil, fmt.Errorf("bitflip.Mechanism.Distribution: layout width must equal L = %d", m.bits)
	}
	if j < 0 || j >= l.NumGroups() {
		return nil, fmt.Errorf("bitflip.Mechanism.Distribution: group %d outside [0, %d)", j, l.NumGroups())
	}
	if err := m.checkTally(t); err != nil {
		return nil, fmt.Errorf("bitflip.Mechanism.Distribution: %w", err)
	}
	g, off := l.groups[j], l.offsets[j]
	var raw []float64
	if g.Kind == Binary {
		f := m.estimate(t.Ones[off], t.N, 0).Freq
		raw = []float64{1 - f, f}
	} else {
		raw = make([]float64, len(g.Labels))
		for c := range raw {
			raw[c] = m.estimate(t.Ones[off+c], t.N, 0).Freq
		}
	}
	return estimate.ProjectSlice(raw)
}

func (m *Mechanism) checkTally(t *Tally) error {
	if t == nil || len(t.Ones) != m.bits {
		return fmt.Errorf("tally must have L = %d bit counts", m.bits)
	}
	if t.N < 1 {
		return fmt.Errorf("tally is empty")
	}
	for i, c := range t.Ones {
		if c < 0 || c > t.N {
			return fmt.Errorf("bit %d count %d outside [0, N = %d]", i, c, t.N)
		}
	}
	return nil
}

func zFor(confidence float64) (float64, error) {
	if !(confidence > 0 && confidence < 1) { // also rejects NaN
		return 0, fmt.Errorf("confidence must be in (0, 1), got %v", confidence)
	}
	return distuv.UnitNormal.Quantile(0.5 + confidence/2), nil
}
