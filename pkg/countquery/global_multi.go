package countquery

import (
	"fmt"
	"math"
)

// GlobalCountMulti estimates the count of rows satisfying P and holding
// s_1..s_w of w sensitive attributes, each published independently by
// global randomization (mechanism A, anonymize.Randomize) with keep
// probability p[k] over V[k] values. z holds the 2^w counts of the rows
// satisfying P by which of s_1..s_w they show in D′: z[i] with bit w−k of i
// set when the row shows s_k (the State order without the P bit).
//
// For attribute k alone, a row holding s_k shows it with probability
// r_k = p_k + (1 − p_k)/V_k and a row without it with q_k = (1 − p_k)/V_k,
//
//	Mk = [ 1 − q_k   q_k ]    (rows: true state s̄_k, s_k;
//	     [ 1 − r_k   r_k ]     columns: shown s̄_k, s_k)
//
// and the attributes are randomized independently given the true values, so
// E[z] = (M1 ⊗ … ⊗ Mw)ᵀ x over the 2^w true states x. The estimate is
//
//	x = (M1ᵀ)⁻¹ ⊗ … ⊗ (Mwᵀ)⁻¹ z,   (Mkᵀ)⁻¹ = (1/p_k)·[ r_k  −(1 − r_k) ]
//	                                                  [ −q_k   1 − q_k  ]
//
// (det Mk = r_k − q_k = p_k), applied one factor at a time, and its last
// component x_{2^w−1} is returned: unbiased, possibly negative. With w = 1
// it equals GlobalCount.
func GlobalCountMulti(z []float64, v []int, p []float64) (float64, error) {
	w := len(v)
	if w < 1 || w > MaxAttributes || len(p) != w || len(z) != 1<<w {
		return 0, fmt.Errorf("countquery.GlobalCountMulti: need w in [1, %d] attributes with V and p each, and 2^w counts; got %d, %d, %d",
			MaxAttributes, len(v), len(p), len(z))
	}
	for k := range w {
		if v[k] < 1 {
			return 0, fmt.Errorf("countquery.GlobalCountMulti: attribute %d: codebook size V must be ≥ 1, got %d", k+1, v[k])
		}
		if !(p[k] > 0 && p[k] <= 1) {
			return 0, fmt.Errorf("countquery.GlobalCountMulti: attribute %d: keep probability must be in (0, 1], got %v", k+1, p[k])
		}
	}
	for i, c := range z {
		if !(c >= 0) || math.IsInf(c, 1) {
			return 0, fmt.Errorf("countquery.GlobalCountMulti: count %d is %v, want a finite number ≥ 0", i, c)
		}
	}
	x := append([]float64(nil), z...)
	for k := range w {
		stride := 1 << (w - 1 - k)
		q := (1 - p[k]) / float64(v[k])
		r := p[k] + q
		for i := range x {
			if i&stride != 0 {
				continue
			}
			u0, u1 := x[i], x[i+stride]
			x[i] = (r*u0 - (1-r)*u1) / p[k]
			x[i+stride] = (-q*u0 + (1-q)*u1) / p[k]
		}
	}
	return x[len(x)-1], nil
}
