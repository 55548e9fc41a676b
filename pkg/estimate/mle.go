package estimate

import (
	"fmt"
	"math"
)

// EMOptions tunes MLE. The zero value gives the defaults.
type EMOptions struct {
	// MaxIter bounds the number of EM iterations. Default 20000.
	MaxIter int
	// Tol: stop once max_g |x_g^(t+1) − x_g^(t)| ≤ Tol. Default 1e-10.
	// EM converges linearly, so the distance to the maximum is about
	// Tol/(1 − ρ) for rate ρ; ρ approaches 1 when PRAM is heavy (γ ≪ K),
	// which is why the default is far below any statistical error.
	Tol float64
}

// Defaults of EMOptions.
const (
	DefaultMaxIter = 20000
	DefaultTol     = 1e-10
)

func (o EMOptions) withDefaults() (EMOptions, error) {
	if o.MaxIter < 0 || math.IsNaN(o.Tol) || o.Tol < 0 || math.IsInf(o.Tol, 0) {
		return o, fmt.Errorf("MaxIter must be ≥ 0 and Tol finite and ≥ 0, got %d and %v", o.MaxIter, o.Tol)
	}
	if o.MaxIter == 0 {
		o.MaxIter = DefaultMaxIter
	}
	if o.Tol == 0 {
		o.Tol = DefaultTol
	}
	return o, nil
}

// EMResult is the outcome of MLE.
type EMResult struct {
	Estimate   Vector // on the simplex; Rest is the common value of unobserved cells
	Iterations int    // EM steps taken
	Converged  bool   // the Tol rule stopped the iteration (not MaxIter)
	// LogLikelihood[t] = ℓ(x^(t)) for t = 0 … Iterations, non-decreasing.
	LogLikelihood []float64
}

// MLE returns the maximum-likelihood estimate of the full table's type
// under the PRAM model by EM, the iterative Bayesian update
//
//	x_g ← x_g · Σ_j T(j)·A[j, g]/(A x)_j,
//
// which never decreases the log-likelihood ℓ(x) = Σ_j Count(j)·ln (A x)_j
// (Dempster, Laird, Rubin, JRSS-B 39(1), 1977; for PRAM, van den Hout and
// van der Heijden, "Randomized Response, Statistical Disclosure Control
// and Misclassification: A Review", Int. Stat. Rev. 70(2), 2002). The
// γ-diagonal structure makes an iteration O(observed) instead of O(K²):
//
//	(A x)_j = ((γ − 1)·x_j + Σ x)/q,    ρ = Σ_j T(j)/(A x)_j  (observed j only),
//	x_g ← (x_g/q)·((γ − 1)·T(g)/(A x)_g + ρ).
//
// A never-observed g has T(g) = 0, so x_g ← x_g·ρ/q: starting from the
// uniform distribution all of them stay equal (Vector.Rest). The
// iteration starts at x = 1/K and stops by EMOptions.
func MLE(c Counts, gamma float64, opts EMOptions) (EMResult, error) {
	m, err := c.validate()
	if err != nil {
		return EMResult{}, fmt.Errorf("estimate.MLE: %w", err)
	}
	if err := checkGamma(gamma); err != nil {
		return EMResult{}, fmt.Errorf("estimate.MLE: %w", err)
	}
	if opts, err = opts.withDefaults(); err != nil {
		return EMResult{}, fmt.Errorf("estimate.MLE: %w", err)
	}
	L := len(c.Index)
	rest := float64(c.K - uint64(L)) // multiplicity of the unobserved block
	q := gamma + float64(c.K-1)
	freq := make([]float64, L)
	for i, n := range c.Count {
		freq[i] = float64(n) / float64(m)
	}
	x := make([]float64, L)
	for i := range x {
		x[i] = 1 / float64(c.K)
	}
	xr := 1 / float64(c.K)
	ratio := make([]float64, L) // T(j)/(A x)_j

	// loglik fills ratio for the current x and returns ℓ(x) and ρ.
	loglik := func() (ll, rho float64) {
		s := rest * xr
		for _, xi := range x {
			s += xi
		}
		for i, xi := range x {
			a := ((gamma-1)*xi + s) / q
			ratio[i] = freq[i] / a
			rho += ratio[i]
			ll += float64(c.Count[i]) * math.Log(a)
		}
		return ll, rho
	}
	res := EMResult{}
	ll, rho := loglik()
	res.LogLikelihood = append(res.LogLikelihood, ll)
	next := make([]float64, L)
	for res.Iterations < opts.MaxIter {
		var s float64
		for i, xi := range x {
			next[i] = xi / q * ((gamma-1)*ratio[i] + rho)
			s += next[i]
		}
		nxr := xr * rho / q
		s += rest * nxr
		// Σ x is 1 in exact arithmetic; dividing by s removes drift.
		nxr /= s
		maxDelta := math.Abs(nxr - xr)
		for i, nx := range next {
			nx /= s
			maxDelta = max(maxDelta, math.Abs(nx-x[i]))
			x[i] = nx
		}
		xr = nxr
		res.Iterations++
		ll, rho = loglik()
		res.LogLikelihood = append(res.LogLikelihood, ll)
		if maxDelta <= opts.Tol {
			res.Converged = true
			break
		}
	}
	res.Estimate = Vector{K: c.K, Index: append([]uint64(nil), c.Index...), Value: x, Rest: xr}
	return res, nil
}
