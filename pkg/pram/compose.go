package pram

import (
	"fmt"
	"math"
)

// ComposedEpsilonGammas returns the privacy level of r = len(gammas) ≥ 1
// γ-diagonal PRAM releases of the SAME sample of m out of n rows, with
// possibly different γ's:
//
//	ε_r = ln((n + m(Γ − 1))/n),   Γ = γ_1·…·γ_r.
//
// The argument of ComposedEpsilon carries over: the r releases of a sampled
// row form one randomizer whose likelihood ratio between two row values is
// at most Π γ_i (each release's ratio is at most its γ_i, and they are
// independent given the row), and the proof of Theorem III.2 uses nothing
// else; with every output equal to the same b, Example III.3 attains it.
// Γ is summed in logarithms, so it never overflows.
func ComposedEpsilonGammas(n, m int, gammas []float64) (float64, error) {
	if err := checkSizes(n, m); err != nil {
		return 0, fmt.Errorf("pram.ComposedEpsilonGammas: %w", err)
	}
	if len(gammas) == 0 {
		return 0, fmt.Errorf("pram.ComposedEpsilonGammas: no releases")
	}
	var x float64 // ln Γ
	for i, g := range gammas {
		if err := checkGamma(g); err != nil {
			return 0, fmt.Errorf("pram.ComposedEpsilonGammas: release %d: %w", i+1, err)
		}
		x += math.Log(g)
	}
	return composedFromLog(float64(m)/float64(n), x), nil
}

// composedFromLog is ln(1 + a(e^x − 1)), a = m/n, x = ln Γ, without
// overflow.
func composedFromLog(a, x float64) float64 {
	if x < 700 {
		return math.Log1p(a * math.Expm1(x))
	}
	// Γ overflows: 1 + a(e^x − 1) = a·e^x·(1 + ((1 − a)/a)·e^−x).
	return math.Log(a) + x + math.Log1p((1-a)/a*math.Exp(-x))
}

// CombineGammas returns the γ of r = len(gammas) ≥ 1 γ-diagonal
// perturbations applied one after another to the same rows over K joint
// values (a release perturbed again: the researcher decrypts x + o_1 + … +
// o_r), which is again γ-diagonal. Why: write
//
//	A(γ) = λ·I + (1 − λ)·U,   λ = (γ − 1)/(γ − 1 + K),
//
// U the K×K matrix of 1/K (check: A's diagonal is λ + (1 − λ)/K = γ/q and
// its off-diagonal (1 − λ)/K = 1/q, q = γ + K − 1). Since U·U = U and
// I·U = U, A(γ_1)·A(γ_2) = λ_1λ_2·I + (1 − λ_1λ_2)·U: the product has
// λ = λ_1·…·λ_r. Back to γ, with a = γ − 1 (a = Kλ/(1 − λ)), two at a time:
//
//	a = a_1·a_2/(a_1 + a_2 + K),
//
// a sum of positive terms with no cancellation, folded over the list. The
// estimators of SPEC §3.5 then undo the chain with this one γ. Separate
// releases of one sample (x + o_1 and x + o_2 as two files) are not a
// chain: each is γ_i-diagonal on its own, and only their privacy composes
// (ComposedEpsilonGammas).
func CombineGammas(K uint64, gammas []float64) (float64, error) {
	if K < 1 {
		return 0, fmt.Errorf("pram.CombineGammas: K must be ≥ 1, got %d", K)
	}
	if len(gammas) == 0 {
		return 0, fmt.Errorf("pram.CombineGammas: no perturbations")
	}
	k := float64(K)
	var a float64
	for i, g := range gammas {
		if err := checkGamma(g); err != nil {
			return 0, fmt.Errorf("pram.CombineGammas: perturbation %d: %w", i+1, err)
		}
		if i == 0 {
			a = g - 1
			continue
		}
		ai := g - 1
		a = a * ai / (a + ai + k)
	}
	if !(1+a > 1) {
		return 0, fmt.Errorf("pram.CombineGammas: the %d perturbations together leave γ = 1 + %.3g, which rounds to 1: the rows carry no usable signal", len(gammas), a)
	}
	return 1 + a, nil
}

// ComposedEpsilonProduct is ComposedEpsilonGammas when only the product
// Γ = γ_1·…·γ_r of the releases' γ's is known (a release's metadata keeps
// Γ as gamma_composed): ε_r = ln((n + m(Γ − 1))/n) depends on nothing else.
func ComposedEpsilonProduct(n, m int, product float64) (float64, error) {
	if err := checkSizes(n, m); err != nil {
		return 0, fmt.Errorf("pram.ComposedEpsilonProduct: %w", err)
	}
	if err := checkGamma(product); err != nil {
		return 0, fmt.Errorf("pram.ComposedEpsilonProduct: product of the γ's: %w", err)
	}
	return composedFromLog(float64(m)/float64(n), math.Log(product)), nil
}

// TwoGammas recovers the γ's of two successive releases from their product
// Γ and the second γ: γ_1 = Γ/γ_2. It fails when that γ_1 is not > 1 (the
// pair cannot come from two γ-diagonal perturbations).
func TwoGammas(product, last float64) ([]float64, error) {
	first := product / last
	if !(first > 1) || math.IsInf(first, 0) {
		return nil, fmt.Errorf("γ = %v and a product of the γ's Γ = %v imply a first γ = Γ/γ = %v, not a finite number > 1", last, product, first)
	}
	return []float64{first, last}, nil
}

// RestrictGamma is the γ′ of a γ-diagonal release over K values seen
// through K′ of them (some columns dropped). The dropped columns' offset
// is uniform given the kept part unless the whole offset is 0, so the kept
// part is 0 with probability (γ + K/K′ − 1)/q and each other value with
// probability (K/K′)/q, q = γ + K − 1: γ′-diagonal with
//
//	γ′ = 1 + (γ − 1)·K′/K.
func RestrictGamma(gamma float64, K, Kp uint64) float64 {
	return 1 + (gamma-1)*(float64(Kp)/float64(K))
}
