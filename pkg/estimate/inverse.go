package estimate

import (
	"fmt"
	"math"
)

// Inverse returns the paper's estimate T̂ = A⁻¹T of the full table's type
// (Lin–Wang–Rane §III-A, "Release") in closed form:
//
//	T̂(g) = (q·T(g) − 1)/(γ − 1),   q = γ + K − 1,
//
// T(g) = Count(g)/m the released frequency. Derivation: A = ((γ − 1)I + J)/q
// with J the all-ones matrix, and for Σ_g T(g) = 1 the vector above gives
// A·T̂ = (q·T − 1 + 1·(q − K)/(γ − 1))/q = T because q − K = γ − 1. T̂ is
// unbiased (E T = A·t) and sums to 1, but cells can be negative; every
// never-observed cell gets −1/(γ − 1) (Vector.Rest). O(observed) time.
// The Vector shares c.Index (8 bytes an observed cell not copied: a third
// of estimate's memory at millions of observed cells).
func Inverse(c Counts, gamma float64) (Vector, error) {
	m, err := c.validate()
	if err != nil {
		return Vector{}, fmt.Errorf("estimate.Inverse: %w", err)
	}
	if err := checkGamma(gamma); err != nil {
		return Vector{}, fmt.Errorf("estimate.Inverse: %w", err)
	}
	q := gamma + float64(c.K-1)
	v := Vector{K: c.K, Index: c.Index, Value: make([]float64, len(c.Index)), Rest: -1 / (gamma - 1)}
	for i, n := range c.Count {
		v.Value[i] = inverseAt(q, gamma, n, m)
	}
	return v, nil
}

func checkGamma(gamma float64) error {
	if !(gamma > 1) || math.IsInf(gamma, 0) {
		return fmt.Errorf("gamma must be finite and > 1, got %v", gamma)
	}
	return nil
}
