package sample

import (
	"fmt"
	"math"
)

// planResult is the planned sample size and what it implies.
type planResult struct {
	M     int64
	Gamma float64
	Bound float64
}

// optimalFraction is m*/n = (e^ε − 1)(√K + 1)/K^{3/2} (SPEC §3.5).
func optimalFraction(eps, k float64) float64 {
	return math.Expm1(eps) * (math.Sqrt(k) + 1) / math.Pow(k, 1.5)
}

// plan is m* rounded and clamped to [1, n], γ = 1 + (n/m*)(e^ε − 1) and the
// Theorem III.4 bound (c√K + 1)/√m*, c = 1 + K/(γ − 1).
func plan(n int64, k, eps float64) (planResult, error) {
	if n < 1 || !(k >= 1) || !(eps > 0) || math.IsInf(eps, 0) {
		return planResult{}, fmt.Errorf("plan: need n ≥ 1, K ≥ 1, ε > 0; got n = %d, K = %v, ε = %v", n, k, eps)
	}
	m := int64(math.Round(float64(n) * optimalFraction(eps, k)))
	m = min(max(m, 1), n)
	gamma := 1 + float64(n)/float64(m)*math.Expm1(eps)
	c := 1 + k/(gamma-1)
	return planResult{M: m, Gamma: gamma, Bound: (c*math.Sqrt(k) + 1) / math.Sqrt(float64(m))}, nil
}
