// Package stattest holds the statistical checks that pramkit's tests share.
//
// Every check takes the false-alarm probability alpha that the caller accepts
// (the chance that a correct mechanism fails the test by bad luck) and derives
// its threshold from it, so each test states its own false-alarm rate.
// Tests use fixed seeds, so a passing test keeps passing; alpha says how
// unlikely it was that the seed chosen happens to hide a real defect.
package stattest

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// ChiSquare returns Pearson's statistic Σ (O_i − E_i)²/E_i for observed counts
// against probabilities probs (which must sum to 1), and its p-value under the
// χ² law with len(probs)−1 degrees of freedom. Cells with probability 0 must
// have no observations; they add no degree of freedom.
func ChiSquare(observed []int64, probs []float64) (stat, pValue float64, err error) {
	if len(observed) != len(probs) {
		return 0, 0, fmt.Errorf("stattest: %d counts but %d probabilities", len(observed), len(probs))
	}
	var total int64
	for _, o := range observed {
		total += o
	}
	df := -1
	for i, p := range probs {
		if p == 0 {
			if observed[i] != 0 {
				return math.Inf(1), 0, nil
			}
			continue
		}
		e := p * float64(total)
		d := float64(observed[i]) - e
		stat += d * d / e
		df++
	}
	if df < 1 {
		return stat, 1, nil
	}
	return stat, distuv.ChiSquared{K: float64(df)}.Survival(stat), nil
}

// T is the part of testing.TB the checks use.
type T interface {
	Helper()
	Errorf(format string, args ...any)
}

// AssertChiSquare fails t when the counts reject probs at level alpha.
func AssertChiSquare(t T, name string, observed []int64, probs []float64, alpha float64) {
	t.Helper()
	stat, p, err := ChiSquare(observed, probs)
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	if p < alpha {
		t.Errorf("%s: chi-square %.2f with %d cells, p = %.3g < alpha %.3g\nobserved %v\nexpected probabilities %v",
			name, stat, len(probs), p, alpha, observed, probs)
	}
}

// BinomialInterval returns the two-sided acceptance interval [lo, hi] for a
// Binomial(n, p) count: the count falls outside it with probability ≤ alpha.
func BinomialInterval(n int64, p, alpha float64) (lo, hi int64) {
	b := distuv.Binomial{N: float64(n), P: p}
	lo = int64(math.Floor(quantile(b, alpha/2)))
	hi = int64(math.Ceil(quantile(b, 1-alpha/2)))
	return lo, hi
}

// quantile finds the smallest k with CDF(k) ≥ q by bisection (gonum's
// Binomial has no quantile function).
func quantile(b distuv.Binomial, q float64) float64 {
	lo, hi := 0.0, b.N
	for hi-lo > 0.5 {
		mid := math.Floor((lo + hi) / 2)
		if b.CDF(mid) >= q {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if b.CDF(lo) >= q {
		return lo
	}
	return hi
}

// AssertBinomial fails t when k successes in n trials reject success
// probability p at level alpha (two-sided).
func AssertBinomial(t T, name string, k, n int64, p, alpha float64) {
	t.Helper()
	lo, hi := BinomialInterval(n, p, alpha)
	if k < lo || k > hi {
		t.Errorf("%s: %d of %d, outside [%d, %d], the %.3g-level interval for p = %g",
			name, k, n, lo, hi, alpha, p)
	}
}

// ZForAlpha is the two-sided normal quantile: |Z| > ZForAlpha(alpha) with
// probability alpha for a standard normal Z.
func ZForAlpha(alpha float64) float64 {
	return distuv.UnitNormal.Quantile(1 - alpha/2)
}

// AssertMean fails t when an average of draws is further from want than the
// normal approximation allows at level alpha: |mean − want| > z·sd/√draws.
func AssertMean(t T, name string, mean, want, sd float64, draws int, alpha float64) {
	t.Helper()
	tol := ZForAlpha(alpha) * sd / math.Sqrt(float64(draws))
	if math.Abs(mean-want) > tol {
		t.Errorf("%s: mean %.6g, want %.6g ± %.3g (alpha %.3g, %d draws, sd %.3g)",
			name, mean, want, tol, alpha, draws, sd)
	}
}
