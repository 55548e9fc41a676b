package ddps

import (
	"fmt"
	"math"
)

// Tally counts the reports of both rounds: RoundOne(o) and RoundTwo(o) are
// the numbers C1[o], C2[o] of ⊥o reports, o = 0..V. A round's counts are
// uint32 until one would pass 2^32 − 1, and are then widened to int64: at
// 1M values the two rounds' counts take 8 MB instead of 16 (issue 11).
type Tally struct {
	one, two tallyCounts
	n        int64 // owners (pairs of reports) counted
}

// tallyCounts are one round's counts: narrow, or wide once a count has
// passed what narrow holds.
type tallyCounts struct {
	narrow []uint32
	wide   []int64 // nil until then
}

func (c *tallyCounts) add(o int, n int64) {
	if c.wide == nil {
		if x := uint64(c.narrow[o]) + uint64(n); x <= math.MaxUint32 {
			c.narrow[o] = uint32(x)
			return
		}
		c.wide = make([]int64, len(c.narrow))
		for i, x := range c.narrow {
			c.wide[i] = int64(x)
		}
		c.narrow = nil
	}
	c.wide[o] += n
}

func (c *tallyCounts) at(o int) int64 {
	if c.wide != nil {
		return c.wide[o]
	}
	return int64(c.narrow[o])
}

// NewTally returns an empty tally for m's outputs.
func (m *Mechanism) NewTally() *Tally {
	return &Tally{one: tallyCounts{narrow: make([]uint32, m.values+1)}, two: tallyCounts{narrow: make([]uint32, m.values+1)}}
}

// Outputs is V + 1, the number of outputs ⊥0..⊥V counted.
func (t *Tally) Outputs() int { return max(len(t.one.narrow), len(t.one.wide)) }

// N is the number of owners counted: the reports of each round.
func (t *Tally) N() int64 { return t.n }

// RoundOne returns C1[o], the number of round-one reports ⊥o.
func (t *Tally) RoundOne(o int) int64 { return t.one.at(o) }

// RoundTwo returns C2[o], the number of round-two reports ⊥o.
func (t *Tally) RoundTwo(o int) int64 { return t.two.at(o) }

// Add counts one owner's pair of reports.
func (t *Tally) Add(one, two int) error { return t.AddN(one, two, 1) }

// AddN counts n ≥ 0 owners who reported the pair (one, two); it refuses
// a total past 2^63 − 1 reports.
func (t *Tally) AddN(one, two int, n int64) error {
	k := t.Outputs()
	switch {
	case one < 0 || one >= k || two < 0 || two >= k:
		return fmt.Errorf("ddps.Tally.AddN: reports (%d, %d) outside [0, %d]", one, two, k-1)
	case n < 0:
		return fmt.Errorf("ddps.Tally.AddN: negative number of owners %d", n)
	case n > math.MaxInt64-t.n:
		return fmt.Errorf("ddps.Tally.AddN: more than %d reports", int64(math.MaxInt64))
	}
	t.n += n
	t.one.add(one, n)
	t.two.add(two, n)
	return nil
}

// Estimate is an estimated count with its standard deviation.
type Estimate struct {
	Count, SD float64
}

// Estimates are the estimated counts of a release, computed from its
// tally as they are asked for (Count): V of them took 16 MB at 1M values.
// The tally must not change while they are in use.
type Estimates struct {
	// N is the number of owners (reports per round).
	N int64
	// Participants estimates N − n_0, the owners holding one of the V values.
	Participants Estimate

	m      *Mechanism
	t      *Tally
	paired bool
}

// Values is V: Count takes outputs 0..V.
func (e Estimates) Values() int { return e.m.values }

// Count estimates n_o, the number of owners with true value o: o = 0 the
// non-participants, 1..V the categories. Counts are unbiased and can be
// negative or exceed N.
func (e Estimates) Count(o int) Estimate {
	m, t, N := e.m, e.t, float64(e.N)
	var c float64
	if e.paired {
		c = float64(t.RoundTwo(o)-t.RoundOne(o)) / m.piS
		if o == 0 {
			c += N
		}
	} else {
		c = (float64(t.RoundTwo(o)) - N*m.mass(o)) / m.piS
	}
	return Estimate{Count: c, SD: m.countSD(o, N, min(max(c, 0), N), e.paired)}
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
	e := Estimates{N: n, m: m, t: t, paired: paired}
	c0 := e.Count(0)
	e.Participants = Estimate{Count: float64(n) - c0.Count, SD: c0.SD}
	return e
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
	switch {
	case t == nil || t.Outputs() != m.values+1:
		return 0, fmt.Errorf("tally must have V + 1 = %d counts per round", m.values+1)
	case t.n == 0:
		return 0, fmt.Errorf("tally is empty")
	}
	return t.n, nil
}
