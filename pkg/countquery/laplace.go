package countquery

import (
	"errors"
	"fmt"
	"math"

	"github.com/google/differential-privacy/go/v3/noise"
)

// LaplaceCount answers one of queries counting queries with ε-differential
// privacy for the whole set, the paper's Laplace baseline (§9.4): the budget
// is split evenly, so each count gets Laplace noise of scale
//
//	b = queries / ε     (sensitivity 1 per query, Lap(Σ Δf_i / ε))
//
// The noise comes from Google's differential-privacy library
// (noise.Laplace().AddNoiseInt64 with L0 = 1, L∞ = 1, ε/queries, δ = 0),
// which draws from crypto/rand with a discretized sampler safe against
// floating-point attacks; it is therefore not seedable.
func LaplaceCount(count int64, epsilon float64, queries int) (int64, error) {
	if !(epsilon > 0) || math.IsInf(epsilon, 1) {
		return 0, fmt.Errorf("countquery.LaplaceCount: ε must be positive and finite, got %v", epsilon)
	}
	if queries < 1 {
		return 0, errors.New("countquery.LaplaceCount: the number of queries must be at least 1")
	}
	out, err := noise.Laplace().AddNoiseInt64(count, 1, 1, epsilon/float64(queries), 0)
	if err != nil {
		return 0, fmt.Errorf("countquery.LaplaceCount: %w", err)
	}
	return out, nil
}
