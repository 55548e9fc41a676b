package estimate

import (
	"fmt"
	"math"
	"math/bits"
)

// EMOptions tunes MLE. The zero value gives the defaults: the exact
// maximum, in closed form.
type EMOptions struct {
	// Iterative computes the MLE by EM (the iterative Bayesian update)
	// from the uniform distribution, stopped by MaxIter and Tol, instead
	// of in closed form. EM only approaches the maximum, and slowly when
	// PRAM is heavy (γ ≪ K): on K = 1000 cells with γ = e and m = 10⁶,
	// ℓ is still 20 below the maximum after 20000 iterations (0.37 s;
	// BenchmarkMLEHeavyNoise). Kept to compare with and to test against.
	// Default false.
	Iterative bool
	// MaxIter bounds the number of EM iterations. Default 20000.
	MaxIter int
	// Tol: EM stops once max_g |x_g^(t+1) − x_g^(t)| ≤ Tol. Default 1e-10.
	// EM converges linearly at best, so the distance to the maximum is
	// at least about Tol/(1 − ρ) for rate ρ; ρ approaches 1 when PRAM is
	// heavy (γ ≪ K), and cells whose maximum is 0 are approached more
	// slowly still, which is why the default is far below any
	// statistical error.
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
	Estimate Vector // on the simplex; Rest is the common value of unobserved cells
	// Iterations is the number of EM steps taken; 0 for the closed form.
	Iterations int
	// Converged: the closed form (always), or EM stopped by the Tol rule
	// rather than by MaxIter.
	Converged bool
	// LogLikelihood[t] = ℓ(x^(t)) for t = 0 … Iterations, non-decreasing;
	// for the closed form the one value ℓ(x̂).
	LogLikelihood []float64
}

// MLE returns the maximum-likelihood estimate of the full table's type
// under the PRAM model: the distribution x over the K cells that
// maximises the log-likelihood of the release,
//
//	ℓ(x) = Σ_j Count(j)·ln (A x)_j,   (A x)_j = ((γ − 1)·x_j + Σ x)/q,
//
// j over the observed cells, q = γ + K − 1. By default it is computed
// exactly, in closed form, in O(L log L) for L observed cells:
//
//	x_(i) = (n_(i) + β·(k·n_(i) − S_k))/S_k   for i ≤ k,   0 otherwise,
//
// with β = 1/(γ − 1), the counts sorted decreasingly n_(1) ≥ n_(2) ≥ …,
// S_k = n_(1) + … + n_(k), and k the largest support size with
// n_(k)·(1 + k·β) > β·S_k; every never-observed cell gets 0. The
// derivation follows.
//
// On the simplex (A x)_j = (γ − 1)(x_j + β)/q, so
//
//	ℓ(x) = Σ_j Count(j)·ln(x_j + β) + m·ln((γ − 1)/q):
//
// separable, strictly concave in the observed cells and increasing in
// each. The maximum therefore puts no mass on never-observed cells
// (moving it to an observed cell raises ℓ), is unique, and by the KKT
// conditions, with multiplier λ for Σ x = 1,
//
//	Count(j)/(x_j + β) = λ where x_j > 0,   Count(j)/β ≤ λ where x_j = 0,
//
// is the "water-filling" solution x_j = max(Count(j)/λ − β, 0) (the
// weighted form of Boyd and Vandenberghe, "Convex Optimization", 2004,
// §5.5.3 Example 5.2). Its support is a set of largest counts; with k
// cells, Σ x = 1 gives 1/λ = (1 + k·β)/S_k, and the k-th largest count is
// in it iff n_(k)/λ > β, the condition above. Once that fails it fails for
// every larger k (n_(k+1)·(1 + k·β) − β·S_k ≤ n_(k)·(1 + k·β) − β·S_k), so
// a scan down the sorted counts finds k, and equal counts are in or out
// together. In the release's terms x_j = (q_k·T(j)/P_k − 1)/(γ − 1) on
// the support, q_k = γ + k − 1 and P_k = S_k/m: the Inverse estimate of
// the release restricted to the support. When every one of the K cells
// is in it, the MLE is the Inverse estimate, as the moment and
// maximum-likelihood estimates of any misclassification model agree
// inside the parameter space (van den Hout and van der Heijden,
// "Randomized Response, Statistical Disclosure Control and
// Misclassification: A Review", Int. Stat. Rev. 70(2), 2002).
// γ-diagonal PRAM is k-ary randomized response, whose exact MLE Pinzón et
// al. also give in closed form, in place of the iterative Bayesian update
// ("Estimating the True Distribution of Data Collected with Randomized
// Response", arXiv:2601.08603, 2026).
//
// With opts.Iterative, MLE runs EM instead (see EMOptions).
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
	if opts.Iterative {
		return mleEM(c, m, gamma, opts), nil
	}
	return mleExact(c, gamma), nil
}

// mleExact is MLE's closed form (see MLE for the derivation), computed
// on the counts' Histogram (MLERule) and read off at each observed cell.
func mleExact(c Counts, gamma float64) EMResult {
	rule, ll, _ := MLERule(HistogramOf(c), gamma) // c and γ are checked
	return EMResult{
		Estimate:      rule.Vector(c),
		Converged:     true,
		LogLikelihood: []float64{ll},
	}
}

// excess returns k·n − s, exactly while k·n fits in an int64 (always for
// m below 6·10⁹ rows, as k·n ≤ (m + 1)²/4 for the k largest counts n of
// m rows). Exactness matters because the difference may be far smaller
// than k·n and is multiplied by β, which is huge when γ is near 1.
func excess(k, n, s int64) float64 {
	if hi, lo := bits.Mul64(uint64(k), uint64(n)); hi == 0 && lo <= math.MaxInt64 {
		return float64(int64(lo) - s)
	}
	return float64(k)*float64(n) - float64(s)
}

// mleEM approaches the MLE by EM, the iterative Bayesian update
//
//	x_g ← x_g · Σ_j T(j)·A[j, g]/(A x)_j,
//
// which never decreases the log-likelihood ℓ (Dempster, Laird, Rubin,
// JRSS-B 39(1), 1977; for PRAM, van den Hout and van der Heijden 2002).
// The γ-diagonal structure makes an iteration O(observed) instead of
// O(K²):
//
//	(A x)_j = ((γ − 1)·x_j + Σ x)/q,    ρ = Σ_j T(j)/(A x)_j  (observed j only),
//	x_g ← (x_g/q)·((γ − 1)·T(g)/(A x)_g + ρ).
//
// A never-observed g has T(g) = 0, so x_g ← x_g·ρ/q: starting from the
// uniform distribution all of them stay equal (Vector.Rest). The
// iteration starts at x = 1/K and stops by opts. m is c.M().
func mleEM(c Counts, m int64, gamma float64, opts EMOptions) EMResult {
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
	return res
}
