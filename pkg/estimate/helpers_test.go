package estimate

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pramkit/pramkit/pkg/pram"
)

// population is a full table reduced to joint indexes, with its true type.
type population struct {
	domain pram.Domain
	rows   []uint64 // joint index of each of the n rows
	truth  Vector   // full-table type t (dense: every cell listed)
}

func newPopulation(t testing.TB, d pram.Domain, rows []uint64) population {
	t.Helper()
	counts := make([]float64, d.Size())
	for _, g := range rows {
		counts[g]++
	}
	for g := range counts {
		counts[g] /= float64(len(rows))
	}
	return population{domain: d, rows: rows, truth: FromDense(counts)}
}

// syntheticPopulation draws n rows i.i.d. from the probabilities p over
// the domain with alphabets ks (a fixed table once drawn).
func syntheticPopulation(t testing.TB, r *rand.Rand, ks []uint32, p []float64, n int) population {
	t.Helper()
	d, err := pram.NewDomain(ks)
	if err != nil {
		t.Fatal(err)
	}
	a, err := newAlias(p)
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]uint64, n)
	for i := range rows {
		rows[i] = uint64(a.draw(r))
	}
	return newPopulation(t, d, rows)
}

// releaser runs the Lin–Wang–Rane pipeline on a population: uniform
// sample of m rows without replacement, then γ-diagonal PRAM through the
// server's code path (pram.Mechanism.PerturbColumns); pads are left out
// because they cancel exactly (Lemma III.1, tested in package pram).
type releaser struct {
	pop  population
	perm []int
	cols [][]uint32
	x    []uint32
}

func newReleaser(pop population) *releaser {
	perm := make([]int, len(pop.rows))
	for i := range perm {
		perm[i] = i
	}
	return &releaser{pop: pop, perm: perm, cols: make([][]uint32, pop.domain.Dims()), x: make([]uint32, pop.domain.Dims())}
}

func (s *releaser) release(t testing.TB, r *rand.Rand, m int, mech *pram.Mechanism) Counts {
	t.Helper()
	n := len(s.perm)
	for j := range s.cols {
		s.cols[j] = s.cols[j][:0]
	}
	// Partial Fisher–Yates: perm stays a permutation, so the first m
	// positions after the swaps are a uniform sample whatever it held.
	for i := range m {
		k := i + r.IntN(n-i)
		s.perm[i], s.perm[k] = s.perm[k], s.perm[i]
		if err := s.pop.domain.Decode(s.pop.rows[s.perm[i]], s.x); err != nil {
			t.Fatal(err)
		}
		for j, v := range s.x {
			s.cols[j] = append(s.cols[j], v)
		}
	}
	if err := mech.PerturbColumns(r, s.cols); err != nil {
		t.Fatal(err)
	}
	counts := make([]int64, s.pop.domain.Size())
	for i := range m {
		for j := range s.x {
			s.x[j] = s.cols[j][i]
		}
		g, err := s.pop.domain.Encode(s.x)
		if err != nil {
			t.Fatal(err)
		}
		counts[g]++
	}
	c, err := CountsFromDense(counts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustMechanism(t testing.TB, gamma float64, d pram.Domain) *pram.Mechanism {
	t.Helper()
	m, err := pram.NewMechanism(gamma, d)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// skewed returns K probabilities proportional to 1/(g+1)², a long tail.
func skewed(K int) []float64 {
	p := make([]float64, K)
	var s float64
	for g := range p {
		p[g] = 1 / math.Pow(float64(g+1), 2)
		s += p[g]
	}
	for g := range p {
		p[g] /= s
	}
	return p
}
