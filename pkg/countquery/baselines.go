package countquery

import (
	"fmt"
	"math"
)

// ValueCounts returns f′_s for every value index s < V of a published
// sensitive column: the number of rows of D′ publishing s. Under A′ this is
// the unbiased maximum likelihood estimate of f_s (§5, Theorem 3):
//
//	f′_s ~ Binomial(ℓ′ f_s, 1/ℓ′),   E[f′_s] = f_s.
func ValueCounts(published []uint32, v int) ([]int64, error) {
	if v < 1 || int64(v) > math.MaxUint32 {
		return nil, fmt.Errorf("countquery.ValueCounts: codebook size V must be in [1, 2^32−1], got %d", v)
	}
	counts := make([]int64, v)
	for row, x := range published {
		if int64(x) >= int64(v) {
			return nil, fmt.Errorf("countquery.ValueCounts: row %d has value index %d, outside the codebook of %d values", row, x, v)
		}
		counts[x]++
	}
	return counts, nil
}

// AnatomyCount estimates the count of rows satisfying P with value s from an
// Anatomy publication (Xiao and Tao's estimator, used in the paper's §9.4):
//
//	est = Σ_g m_g · c_g(s) / n_g
//
// where, for group g, m_g = matches[g] is the number of its rows satisfying
// P (read from the quasi-identifier table), c_g(s) = valueCounts[g] the count
// of s in its sensitive-table entries and n_g = sizes[g] its size: a
// matching row holds s with probability c_g(s)/n_g.
func AnatomyCount(matches, valueCounts, sizes []int64) (float64, error) {
	if len(matches) != len(sizes) || len(valueCounts) != len(sizes) {
		return 0, fmt.Errorf("countquery.AnatomyCount: %d match counts, %d value counts, %d group sizes", len(matches), len(valueCounts), len(sizes))
	}
	var est float64
	for g, n := range sizes {
		if n <= 0 || matches[g] < 0 || matches[g] > n || valueCounts[g] < 0 || valueCounts[g] > n {
			return 0, fmt.Errorf("countquery.AnatomyCount: group %d: %d matches and %d of the value among %d rows", g, matches[g], valueCounts[g], n)
		}
		est += float64(matches[g]) * float64(valueCounts[g]) / float64(n)
	}
	return est, nil
}

// GlobalCount estimates the count of rows satisfying P with value s from a
// column published by global randomization (mechanism A, anonymize.Randomize)
// with keep probability p over V values. y is the number of published rows
// satisfying P that show s, nP the number satisfying P. The non-sensitive
// values are unchanged, so the P rows alone were randomized by
//
//	A = p·I + (1 − p)/V · J,    A⁻¹ = (1/p)·(I − (1 − p)/V · J)
//
// (J the all-ones matrix, J² = V·J). Applying A⁻¹ to the P rows' published
// value counts gives
//
//	est = (y − (1 − p)·nP/V) / p,
//
// the unbiased moment estimate. It can be negative; it is returned as is so
// that averages stay unbiased.
func GlobalCount(y, nP int64, v int, p float64) (float64, error) {
	if v < 1 {
		return 0, fmt.Errorf("countquery.GlobalCount: codebook size V must be ≥ 1, got %d", v)
	}
	if !(p > 0 && p <= 1) {
		return 0, fmt.Errorf("countquery.GlobalCount: keep probability must be in (0, 1], got %v", p)
	}
	if y < 0 || nP < y {
		return 0, fmt.Errorf("countquery.GlobalCount: need 0 ≤ y ≤ nP, got y = %d, nP = %d", y, nP)
	}
	return (float64(y) - (1-p)*float64(nP)/float64(v)) / p, nil
}
