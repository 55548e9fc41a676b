package estimate

import (
	"fmt"
	"math"

	"github.com/pramkit/pramkit/pkg/pram"
)

// Bound returns the Theorem III.4 bound (Lin–Wang–Rane, Eq. (3)) on the
// expected ℓ2 error of the Inverse estimate against the full table's type:
//
//	E‖T̂ − t‖₂ ≤ (c·√K + 1)/√m,   c = 1 + K/(γ − 1),
//
// c the condition number of A, K the joint alphabet size, m the sample
// size.
func Bound(K uint64, gamma float64, m int) (float64, error) {
	if K < 1 || K > pram.MaxJointSize {
		return 0, fmt.Errorf("estimate.Bound: K must be in [1, 2^62], got %d", K)
	}
	if err := checkGamma(gamma); err != nil {
		return 0, fmt.Errorf("estimate.Bound: %w", err)
	}
	if m < 1 {
		return 0, fmt.Errorf("estimate.Bound: m must be ≥ 1, got %d", m)
	}
	k := float64(K)
	c := 1 + k/(gamma-1)
	return (c*math.Sqrt(k) + 1) / math.Sqrt(float64(m)), nil
}

// Plan is the sample size that minimises the Theorem III.4 bound at a
// privacy target, with the γ and bound it implies.
type Plan struct {
	N       int     // rows in the table
	K       uint64  // joint alphabet size
	Epsilon float64 // privacy target ε
	MStar   float64 // unrounded optimum n(e^ε − 1)(√K + 1)/K^{3/2}
	M       int     // MStar rounded to the nearest integer, clamped to [1, N]
	Gamma   float64 // γ = 1 + (N/M)(e^ε − 1), Theorem III.2
	Bound   float64 // Bound(K, Gamma, M)
}

// NewPlan returns the Plan for n rows, joint alphabet size K and privacy ε.
// With γ tied to ε by Theorem III.2, the bound of Theorem III.4 reads
//
//	f(m) = (√K + 1)/√m + K^{3/2}·√m/(n(e^ε − 1)),
//
// whose derivative vanishes at m* = n(e^ε − 1)(√K + 1)/K^{3/2} (SPEC §3.5).
func NewPlan(n int, K uint64, eps float64) (Plan, error) {
	if n < 1 {
		return Plan{}, fmt.Errorf("estimate.NewPlan: n must be ≥ 1, got %d", n)
	}
	if K < 1 || K > pram.MaxJointSize {
		return Plan{}, fmt.Errorf("estimate.NewPlan: K must be in [1, 2^62], got %d", K)
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return Plan{}, fmt.Errorf("estimate.NewPlan: epsilon must be finite and > 0, got %v", eps)
	}
	k := float64(K)
	mStar := float64(n) * math.Expm1(eps) * (math.Sqrt(k) + 1) / (k * math.Sqrt(k))
	m := int(math.Min(math.Max(math.Round(mStar), 1), float64(n)))
	gamma, err := pram.GammaFromEpsilon(n, m, eps)
	if err != nil {
		return Plan{}, fmt.Errorf("estimate.NewPlan: %w", err)
	}
	bound, err := Bound(K, gamma, m)
	if err != nil {
		return Plan{}, fmt.Errorf("estimate.NewPlan: %w", err)
	}
	return Plan{N: n, K: K, Epsilon: eps, MStar: mStar, M: m, Gamma: gamma, Bound: bound}, nil
}
