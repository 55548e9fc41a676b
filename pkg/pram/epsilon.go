package pram

import (
	"fmt"
	"math"
)

// GammaFromEpsilon returns the PRAM parameter that gives ε-differential
// privacy when m of n rows are sampled (Lin–Wang–Rane, Eq. (2), from
// Theorem III.2):
//
//	γ = 1 + (n/m)(e^ε − 1),
//
// n rows in the table, m sampled rows (n ≥ m ≥ 1), ε > 0. e^ε − 1 is computed
// with Expm1 so small ε keep full relative precision.
func GammaFromEpsilon(n, m int, eps float64) (float64, error) {
	if err := checkSizes(n, m); err != nil {
		return 0, fmt.Errorf("pram.GammaFromEpsilon: %w", err)
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return 0, fmt.Errorf("pram.GammaFromEpsilon: epsilon must be finite and > 0, got %v", eps)
	}
	gamma := 1 + float64(n)/float64(m)*math.Expm1(eps)
	if math.IsInf(gamma, 0) {
		return 0, fmt.Errorf("pram.GammaFromEpsilon: gamma overflows float64 for epsilon %v", eps)
	}
	if !(gamma > 1) {
		return 0, fmt.Errorf("pram.GammaFromEpsilon: epsilon %v too small: gamma rounds to 1", eps)
	}
	return gamma, nil
}

// EpsilonFromGamma returns the privacy level of sampling m of n rows and
// applying γ-diagonal PRAM (Lin–Wang–Rane, Theorem III.2, Eq. (1); tight by
// Example III.3):
//
//	ε = ln((n + m(γ − 1))/n) = log1p(m(γ − 1)/n),
//
// n ≥ m ≥ 1, γ > 1 finite.
func EpsilonFromGamma(n, m int, gamma float64) (float64, error) {
	if err := checkSizes(n, m); err != nil {
		return 0, fmt.Errorf("pram.EpsilonFromGamma: %w", err)
	}
	if err := checkGamma(gamma); err != nil {
		return 0, fmt.Errorf("pram.EpsilonFromGamma: %w", err)
	}
	return math.Log1p(float64(m) / float64(n) * (gamma - 1)), nil
}

// ComposedEpsilon returns the privacy level of r ≥ 1 independent
// γ-diagonal PRAM releases of the SAME sample of m out of n rows:
//
//	ε_r = ln((n + m(γ^r − 1))/n).
//
// Why not r·ε. Basic sequential composition (Dwork & Roth, "The Algorithmic
// Foundations of Differential Privacy", 2014, Theorem 3.16) adds the ε of
// mechanisms that use independent randomness; releases that share one
// sample share the sampling randomness, so it does not apply. Instead, r
// releases of a sampled row form one randomizer whose likelihood ratio
// between two row values is at most γ^r, and the proof of Theorem III.2 uses
// nothing else, so it gives ε_r with γ replaced by γ^r; Example III.3 with
// all r outputs equal to b shows ε_r is attained. Writing a = m/n ≤ 1,
// ε_r − r·ε = a·r(r − 1)(1 − a)(γ − 1)²/2 + O((γ − 1)³) ≥ 0 and indeed
// 1 + a(γ^r − 1) ≥ (1 + a(γ − 1))^r for all γ ≥ 1: reusing the sample always
// costs at least r·ε (equality iff m = n or r = 1), and much more when
// m ≪ n. r releases drawn from r independent samples cost r·ε by basic
// composition. Both are covered by the package tests' brute-force check.
func ComposedEpsilon(n, m int, gamma float64, r int) (float64, error) {
	if err := checkSizes(n, m); err != nil {
		return 0, fmt.Errorf("pram.ComposedEpsilon: %w", err)
	}
	if err := checkGamma(gamma); err != nil {
		return 0, fmt.Errorf("pram.ComposedEpsilon: %w", err)
	}
	if r < 1 {
		return 0, fmt.Errorf("pram.ComposedEpsilon: number of releases must be ≥ 1, got %d", r)
	}
	return composedFromLog(float64(m)/float64(n), float64(r)*math.Log(gamma)), nil
}

func checkSizes(n, m int) error {
	if m < 1 || n < m {
		return fmt.Errorf("need n ≥ m ≥ 1, got n = %d, m = %d", n, m)
	}
	return nil
}

func checkGamma(gamma float64) error {
	if !(gamma > 1) || math.IsInf(gamma, 0) {
		return fmt.Errorf("gamma must be finite and > 1, got %v", gamma)
	}
	return nil
}
