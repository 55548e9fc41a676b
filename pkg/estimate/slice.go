package estimate

import (
	"fmt"
	"math"
)

// ProjectSlice is Project for a dense vector of k entries: the Euclidean
// projection of x onto the probability simplex {p : p_i ≥ 0, Σ p_i = 1},
// the closest distribution to x. It is the one simplex projection of the
// module: bitflip's per-column distributions use it too. O(k log k).
func ProjectSlice(x []float64) ([]float64, error) {
	if len(x) == 0 {
		return nil, fmt.Errorf("estimate.ProjectSlice: empty vector")
	}
	idx := make([]uint64, len(x))
	for i := range idx {
		idx[i] = uint64(i)
	}
	p, err := Project(Vector{K: uint64(len(x)), Index: idx, Value: x})
	if err != nil {
		return nil, fmt.Errorf("estimate.ProjectSlice: %w", err)
	}
	return p.Value, nil
}

// L2Slice is L2 for two dense vectors: ‖a − b‖₂, e.g. the error of an
// estimated distribution against the true one.
func L2Slice(a, b []float64) (float64, error) {
	if len(a) != len(b) {
		return 0, fmt.Errorf("estimate.L2Slice: lengths %d and %d differ", len(a), len(b))
	}
	var s float64
	for i := range a {
		d := a[i] - b[i]
		s += d * d
	}
	return math.Sqrt(s), nil
}
