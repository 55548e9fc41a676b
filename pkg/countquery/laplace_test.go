package countquery

import (
	"math"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
)

// The library's noise is crypto-random and cannot be seeded, so this test
// can fail by chance: with probability ≤ 2e-6 (two checks at alpha 1e-6).
// Per-query ε = 0.5/10 = 0.05 gives Laplace scale b = 20: mean 0, variance
// 2b² = 800; the discretization adds at most the 1/12 of rounding.
func TestLaplaceCountDistribution(t *testing.T) {
	const draws, count = 20000, 1000
	const epsilon, queries = 0.5, 10
	b := float64(queries) / epsilon
	var sum, sumSq float64
	for range draws {
		got, err := LaplaceCount(count, epsilon, queries)
		if err != nil {
			t.Fatal(err)
		}
		d := float64(got - count)
		sum += d
		sumSq += d * d
	}
	mean := sum / draws
	variance := sumSq/draws - mean*mean
	stattest.AssertMean(t, "Laplace noise mean", mean, 0, math.Sqrt(2)*b, draws, 1e-6)
	// Var(d²) = E d⁴ − (E d²)² = 24b⁴ − 4b⁴ = 20b⁴ for Laplace noise.
	stattest.AssertMean(t, "Laplace noise variance", variance, 2*b*b, math.Sqrt(20)*b*b, draws, 1e-6)
}

func TestLaplaceCountRejectsBadArguments(t *testing.T) {
	for _, eps := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if _, err := LaplaceCount(5, eps, 1); err == nil {
			t.Errorf("ε = %v accepted", eps)
		}
	}
	if _, err := LaplaceCount(5, 1, 0); err == nil {
		t.Error("0 queries accepted")
	}
}
