package ddps

import (
	"fmt"
	"math"
)

// Tally counts the reports of both rounds: RoundOne[o] and RoundTwo[o] are
// the numbers of ⊥o reports, o = 0..V.
type Tally struct {
	RoundOne, RoundTwo []int64
}

// NewTally returns an empty tally for m's outputs.
func (m *Mechanism) NewTally() *Tally {
	return &Tally{RoundOne: make([]int64, m.values+1), RoundTwo: make([]int64, m.values+1)}
}

// Add counts one owner's pair of reports.
func (t *Tally) Add(one, two int) error {
	if one < 0 || one >= len(t.RoundOne) || two < 0 || two >= len(t.RoundTwo) {
		return fmt.Errorf("ddps.Tally.Add: reports (%d, %d) outside [0, %d]", one, two, len(t.RoundOne)-1)
	}
	t.RoundOne[one]++
	t.RoundTwo[two]++
	return nil
}

// Estimate is an estimated count with its standard deviation.
type Estimate struct {
	Count, SD float64
}

// Estimates are the estimated counts of a release.
type Estimates struct {
	// N is the number of owners (reports per round).
	N int64
	// Counts[o] estimates n_o, the number of owners with true value o:
	// Counts[0] the non-participants, Counts[1..V] the categories. Counts
	// are unbiased and can be negative or exceed N.
	Counts []Estimate
	// Participants estimates N − n_0, the owners holding one of the V values.
	Participants Estimate
}

// Estimate returns the paper's estimator (Joy Eq. 41), the difference of
// the rounds, n̂_o = (C2[o] − C1[o])/π_s + N·[o = 0], with the standard
// deviations derived in the package comment.
func (m *Mechanism) Estimate(t *Tally) (Estimates, error) {
	n, err := m.checkTally(t)
	if err != nil {
		return Estimates{}, fmt.Errorf("ddps.Mechanism.Estimate: %w", err)
	}
	return m.estimate(t, n, true), nil
}

// EstimateRoundTwo returns the round-two estimator
// ñ_o = (C2[o] − N·π_⊥o)/π_s, which uses the known expectation N·π_⊥o of
// round one instead of its count and so has the smaller variance derived
// in the package comment. Only RoundTwo and N (from RoundOne's total) are
// used.
func (m *Mechanism) EstimateRoundTwo(t *Tally) (Estimates, error) {
	n, err := m.checkTally(t)
	if err != nil {
		return Estimates{}, fmt.Errorf("ddps.Mechanism.EstimateRoundTwo: %w", err)
	}
	return m.estimate(t, n, false), nil
}

func (m *Mechanism) estimate(t *Tally, n int64, paired bool) Estimates {
	N := float64(n)
	out := Estimates{N: n, Counts: make([]Estimate, m.values+1)}
	for o := range out.Counts {
		var c float64
		if paired {
			c = float64(t.RoundTwo[o]-t.RoundOne[o]) / m.piS
			if o == 0 {
				c += N
			}
		} else {
			c = (float64(t.RoundTwo[o]) - N*m.mass(o)) / m.piS
		}
		out.Counts[o] = Estimate{Count: c, SD: m.countSD(o, N, min(max(c, 0), N), paired)}
	}
	out.Participants = Estimate{Count: N - out.Counts[0].Count, SD: out.Counts[0].SD}
	return out
}

// countSD is the standard deviation of the estimated count of output o
// when nO of the N owners have true value o (package comment):
//
//	Var = [N·c_o(1 − c_o)·[paired] + n_o·a_o(1 − a_o) + (N − n_o)·b_o(1 − b_o)] / π_s²,
//
// a_o = π_⊥o + π_s, b_o = π_⊥o, c_o = π_⊥o + π_s·[o = 0].
func (m *Mechanism) countSD(o int, N, nO float64, paired bool) float64 {
	a := m.mass(o) + m.piS
	b := m.mass(o)
	v := nO*a*(1-a) + (N-nO)*b*(1-b)
	if paired {
		c := b
		if o == 0 {
			c = a
		}
		v += N * c * (1 - c)
	}
	return math.Sqrt(v) / m.piS
}

func (m *Mechanism) checkTally(t *Tally) (int64, error) {
	if t == nil || len(t.RoundOne) != m.values+1 || len(t.RoundTwo) != m.values+1 {
		return 0, fmt.Errorf("tally must have V + 1 = %d counts per round", m.values+1)
	}
	var n1, n2 int64
	for o := range t.RoundOne {
		if t.RoundOne[o] < 0 || t.RoundTwo[o] < 0 {
			return 0, fmt.Errorf("negative count for ⊥%d", o)
		}
		n1 += t.RoundOne[o]
		n2 += t.RoundTwo[o]
	}
	if n1 != n2 {
		return 0, fmt.Errorf("rounds have %d and %d reports; every owner sends one of each", n1, n2)
	}
	if n1 == 0 {
		return 0, fmt.Errorf("tally is empty")
	}
	return n1, nil
}
