package anonymize

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// UtilityThreshold returns T_f, the smallest frequency with the
// (ε, T_E, T_f) utility guarantee of Lemma 4 (Definition 4, Eq. 5):
//
//	1/(ℓ′ ε² T_E) = T_f²   ⇒   T_f = 1/√(ℓ′ ε² T_E)
//
// where ε (varepsilon in the paper, = ℓ′·ϵ of Inequality 2) bounds the
// relative error |f′_s − f_s|/f_s and T_E bounds the probability of
// exceeding it. It comes from Chebyshev's inequality (Inequality 3):
//
//	P(|f′_s − f_s| ≥ ε f_s) ≤ 1/(ℓ′ ε² f_s²)
//
// so every value with f_s ≥ T_f has P(relative error ≥ ε) ≤ T_E. Example 1:
// T_E = 0.02, ℓ′ = 10, ε = 0.2 give T_f = √125 ≈ 11.2 (the paper prints 11).
func UtilityThreshold(l int, epsilon, te float64) (float64, error) {
	if err := checkGuaranteeArgs(l, epsilon); err != nil {
		return 0, fmt.Errorf("anonymize.UtilityThreshold: %w", err)
	}
	if !(te > 0 && te <= 1) {
		return 0, fmt.Errorf("anonymize.UtilityThreshold: error probability T_E must be in (0, 1], got %v", te)
	}
	return 1 / math.Sqrt(float64(l)*epsilon*epsilon*te), nil
}

// ChebyshevBound returns the right-hand side of Inequality (3),
// min(1, 1/(ℓ′ ε² f_s²)): an upper bound on P(|f′_s − f_s| ≥ ε f_s). It is 1
// for f_s = 0.
func ChebyshevBound(fs int64, l int, epsilon float64) (float64, error) {
	if err := checkGuaranteeArgs(l, epsilon); err != nil {
		return 0, fmt.Errorf("anonymize.ChebyshevBound: %w", err)
	}
	if fs < 0 {
		return 0, fmt.Errorf("anonymize.ChebyshevBound: frequency must be ≥ 0, got %d", fs)
	}
	f := float64(fs)
	return math.Min(1, 1/(float64(l)*epsilon*epsilon*f*f)), nil
}

// PrivacyGuarantee returns T_P, the probability that the published count
// f′_s of a value with true frequency f_s has a relative error of more than ε
// (Definition 5, §6.2). Under A′, f′_s ~ Binomial(ℓ′ f_s, 1/ℓ′) (§5), so
//
//	T_P = 1 − Σ_{x = ⌈(1−ε) f_s⌉}^{⌊(1+ε) f_s⌋} C(ℓ′f_s, x) (1/ℓ′)^x (1 − 1/ℓ′)^{ℓ′f_s − x}
//
// (errors of exactly ε f_s count as "not more than ε", as in the paper's
// summation bounds; the bounds absorb a 1e-9 relative rounding slack so that
// 0.7·5 is 3.5, not 3.4999…). Example 2: f_s = 5, ℓ′ = 10, ε = 0.3 give
// 1 − P(4 ≤ f′_s ≤ 6) ≈ 0.48, the paper's (0.3, 0.48) privacy guarantee.
//
// A value absent from the table (f_s = 0) is published exactly 0 times, so
// its count is disclosed exactly: T_P = 0.
func PrivacyGuarantee(fs int64, l int, epsilon float64) (float64, error) {
	if err := checkGuaranteeArgs(l, epsilon); err != nil {
		return 0, fmt.Errorf("anonymize.PrivacyGuarantee: %w", err)
	}
	if fs < 0 {
		return 0, fmt.Errorf("anonymize.PrivacyGuarantee: frequency must be ≥ 0, got %d", fs)
	}
	if fs == 0 {
		return 0, nil
	}
	f := float64(fs)
	slack := 1e-9 * f
	lo := math.Ceil((1-epsilon)*f - slack)
	hi := math.Floor((1+epsilon)*f + slack)
	b := distuv.Binomial{N: float64(l) * f, P: 1 / float64(l)}
	below := 0.0
	if lo >= 1 {
		below = b.CDF(lo - 1)
	}
	return below + b.Survival(hi), nil
}

func checkGuaranteeArgs(l int, epsilon float64) error {
	if l < 2 {
		return fmt.Errorf("ℓ′ must be at least 2, got %d", l)
	}
	if !(epsilon > 0) || math.IsInf(epsilon, 1) {
		return fmt.Errorf("relative error ε must be positive and finite, got %v", epsilon)
	}
	return nil
}

// ValueGuarantee is what A′ promises for one sensitive value.
type ValueGuarantee struct {
	Value uint32 // value index
	Count int64  // f_s, its frequency in the published (post-drop) table
	// Useful reports f_s ≥ T_f: the value has the (ε, T_E, T_f) utility
	// guarantee of Lemma 4.
	Useful bool
	// ErrorBound is Chebyshev's bound on P(relative error ≥ ε), Inequality 3.
	ErrorBound float64
	// Privacy is T_P of Definition 5: P(relative error > ε), exactly.
	Privacy float64
}

// Report holds the guarantees of a release for every value of a codebook.
type Report struct {
	L       int
	Epsilon float64 // ε, the relative error considered
	TE      float64 // T_E, the error probability of the utility guarantee
	Tf      float64 // T_f of Lemma 4, common to all values
	Values  []ValueGuarantee
}

// Guarantees computes the Report for value counts f_s (index = value index)
// of a table published by A′ with ℓ′ = l, for relative error ε = epsilon and
// utility error probability T_E = te.
func Guarantees(counts []int64, l int, epsilon, te float64) (*Report, error) {
	tf, err := UtilityThreshold(l, epsilon, te)
	if err != nil {
		return nil, fmt.Errorf("anonymize.Guarantees: %w", err)
	}
	rep := &Report{L: l, Epsilon: epsilon, TE: te, Tf: tf, Values: make([]ValueGuarantee, len(counts))}
	for v, f := range counts {
		bound, err := ChebyshevBound(f, l, epsilon)
		if err != nil {
			return nil, fmt.Errorf("anonymize.Guarantees: value index %d: %w", v, err)
		}
		tp, err := PrivacyGuarantee(f, l, epsilon)
		if err != nil {
			return nil, fmt.Errorf("anonymize.Guarantees: value index %d: %w", v, err)
		}
		rep.Values[v] = ValueGuarantee{
			Value: uint32(v), Count: f, Useful: float64(f) >= tf,
			ErrorBound: bound, Privacy: tp,
		}
	}
	return rep, nil
}
