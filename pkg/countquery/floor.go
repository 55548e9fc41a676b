package countquery

import (
	"fmt"
	"math"
)

// FloorQuery is one count query (P, s) on an A′ release, given by the true
// counts the noise floor depends on.
type FloorQuery struct {
	// N is the number of published rows. Required, > 0.
	N float64
	// NP is n_P, the published rows satisfying P. Required, 0 < NP < N.
	NP float64
	// FS is f_s, the published rows whose true value is s. Required,
	// 0 < FS < N/ℓ′ (eligibility; at N/ℓ′ every row publishes s with the
	// same chance 1/ℓ′ and nothing is estimable).
	FS float64
	// X is n_{P,s}, the count asked for. Required, 0 < X ≤ min(NP, FS),
	// FS − X ≤ N − NP.
	X float64
	// VarP and VarPbar replace the variances of y3 and y1 (the published
	// counts of (P, s) and (P̄, s)) given the true counts, for a grouping
	// design's exact ones (DesignVariances); then Cov(y3, y1) is
	// (Var f′_s − VarP − VarPbar)/2 with Var f′_s = f_s(ℓ′ − 1)/ℓ′, exact
	// for every grouping (f′_s ~ Binomial(ℓ′f_s, 1/ℓ′), Theorem 3).
	// Default (both 0): rows publishing independently, Cov = 0.
	VarP, VarPbar float64
}

// Floor is the noise floor of one count query on one A′ release.
type Floor struct {
	// A01 is ā01(s) = f_s(ℓ′−1)/(ℓ′(N − f_s)) (DecoyProb, exact).
	A01 float64
	// VarP, VarPbar and Cov are Var y3, Var y1 and Cov(y3, y1) given the
	// true counts.
	VarP, VarPbar, Cov float64
	// SD is σ_CR, the Cramér–Rao lower bound on the standard deviation of
	// an unbiased estimator of n_{P,s}.
	SD float64
	// NaiveSD is sqrt(VarP)/(1/ℓ′ − a01), the sd with a01 known exactly
	// (doc.go's "binomial sd"): SD is smaller because a01 is a function of
	// f_s, which the release also measures (see NoiseFloor).
	NaiveSD float64
	// RelErr is sqrt(2/π)·SD/X, the mean relative error E|x̂ − x|/x of an
	// unbiased estimator with normal errors and the least variance.
	RelErr float64
}

// NoiseFloor returns the noise floor of the count query q on one release of
// mechanism A′ at ℓ′ = l with randomized decoy groups: how precisely any
// unbiased estimator can recover n_{P,s} from the published table.
//
// Model (the one estimate's a01 assumes, exact on average for every
// grouping; package doc, "The decoy probability a01"): a row holding s
// publishes s with probability 1/ℓ′, a row without s with probability
//
//	a = ā01(s) = f_s(ℓ′ − 1)/(ℓ′(N − f_s)),
//
// and rows publish independently. With x = n_{P,s}, z = n_{P̄,s} = f_s − x,
// u = n_P − x and w = (N − n_P) − z the rows without s in P and P̄, the
// published counts of s in P (y3) and in P̄ (y1) are independent
// Poisson-binomial counts with
//
//	E y3 = x/ℓ′ + u·a,   Var y3 = x(ℓ′ − 1)/ℓ′² + u·a(1 − a)
//	E y1 = z/ℓ′ + w·a,   Var y1 = z(ℓ′ − 1)/ℓ′² + w·a(1 − a).
//
// Fisher information. The unknowns are θ = (x, z), taken as continuous;
// n_P and N are published. a depends on f_s = x + z with
//
//	a′ = da/df_s = (ℓ′ − 1)N/(ℓ′(N − f_s)²),
//
// so the Jacobian of μ = (E y3, E y1) in θ is, with g = 1/ℓ′ − a,
//
//	J = | g + u·a′    u·a′   |
//	    |   w·a′    g + w·a′ |,   det J = g·(g + (N − f_s)·a′) = g,
//
// since (N − f_s)a′ = aN/f_s and g + aN/f_s = 1 (equivalently E y3 + E y1
// = f_s for every θ: Theorem 3). In the normal approximation of (y3, y1)
// the Fisher information is I = Jᵀ Σ⁻¹ J, Σ the covariance of (y3, y1),
// diagonal for independent rows. (For a
// binomial count this is its exact Fisher information; the normal model's
// extra term from Σ depending on θ, O(1/Var) relative, is an artefact of
// the approximation and left out.) J is square, so I⁻¹ = J⁻¹ Σ J⁻ᵀ; the
// first row of J⁻¹ is ((1 − u·a′)/g, −u·a′/g), and the Cramér–Rao bound is
//
//	Var x̂ ≥ σ²_CR = ((1 − u·a′)²·Var y3 + (u·a′)²·Var y1
//	                 − 2(1 − u·a′)(u·a′)·Cov(y3, y1))/g²,
//
// Cov = 0 for independent rows; with a design's exact variances
// (DesignVariances, FloorQuery.VarP) the same formula holds with its Σ.
//
// The first term is y3's noise, damped because y3 is part of f′_s and a
// grows with f_s; the second is the noise of a as the release measures it.
// The converged update (PredicateMLE: x̂ = (y3 − n_P·a(f′_s))/g(f′_s),
// f′_s = y1 + y3) is the maximum-likelihood estimate of this model and its
// delta-method variance is exactly σ²_CR: it attains the bound up to
// O(1/n) (TestNoiseFloorMatchesReleases measures it on replayed releases).
//
// The rest of the published table adds nothing. Giving every value v its
// own a(f_v) for the rows without v, the published counts of v in P and P̄
// depend on (n_{P,v}, n_{P̄,v}) alone, so the Jacobian of all published
// counts in all true counts is block diagonal by value, and [J⁻¹ΣJ⁻ᵀ]_xx
// reads only s's block of Σ: the bound is the same with the covariances
// between values' counts. Splitting P and P̄ into finer cells by the other
// published columns gives the same bound too (the variances add up cell
// by cell to Var y3 and Var y1).
//
// Assumptions, and how far they hold on Adult at ℓ′ = 5:
//
//   - Rows independent. They are not quite: a row of P has (ℓ′ − 1)n_P/N
//     group mates in P on average (close to ℓ′ − 1 for the broadest
//     predicates among Adult's queries of
//     selectivity 2–5 % at ℓ′ = 5), but under the randomized design rows
//     of different values are independent given the schedule, even in one
//     group (each value's rows are dealt to its slots independently). What
//     remains is the dealing without replacement within a value (negative
//     covariance) and the randomness of the schedule (positive).
//     DesignVariances gives the design's exact variances: on Adult's
//     queries Var y3 is 0.93–0.99 times the independent one (0.976 at
//     ℓ′ = 5), Cov(y3, y1) < 0 makes up for it, and the mean floor is the
//     same to 3 decimals (TestAdultGoalIsBelowTheNoiseFloor); on replayed
//     releases the converged estimate's variance is 0.998·σ²_CR on average
//     (TestNoiseFloorMatchesReleases).
//   - One a01 for every value v ≠ s, in the means (J). The randomized
//     design's a01(v→s) = E[C_vs]/(ℓ′f_v) lies within ±9 % of ā01(s)
//     (TestRandomDesignDecoyProbabilityPerValue). DesignVariances uses
//     each value's own, so the variances are exact; in the means the
//     spread is the estimator's bias of doc.go for a predicate whose rows
//     lean to some values. An estimator that knew every a01(v→s) and
//     exploited their spread to learn how P's rows split over the values
//     is not bounded here (the spread is small, so would be the gain).
//   - Unbiased estimators. The bound says nothing about biased ones: an
//     update stopped early shrinks the estimate toward y3 and can have a
//     smaller error (estimate's discrepancy rule does at ℓ′ ≥ 5).
//   - RelErr is sqrt(2/π)·σ_CR/x, the mean absolute error of a normal error
//     of sd σ_CR. The bound is on the variance; it becomes one on the mean
//     absolute error for estimators whose errors are normal, as the
//     efficient one's are here (a sum of thousands of independent rows).
//
// k independent releases of the same table give k times the information:
// the floor of their combination is σ_CR/sqrt(k).
func NoiseFloor(q FloorQuery, l int) (Floor, error) {
	for _, v := range []float64{q.N, q.NP, q.FS, q.X, q.VarP, q.VarPbar} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return Floor{}, fmt.Errorf("countquery.NoiseFloor: %+v has a value that is not finite", q)
		}
	}
	if l < 2 {
		return Floor{}, fmt.Errorf("countquery.NoiseFloor: ℓ′ must be at least 2, got %d", l)
	}
	lf := float64(l)
	switch {
	case !(q.N > 0) || !(q.NP > 0) || !(q.NP < q.N):
		return Floor{}, fmt.Errorf("countquery.NoiseFloor: need 0 < n_P = %v < N = %v", q.NP, q.N)
	case !(q.FS > 0) || !(q.FS < q.N/lf):
		return Floor{}, fmt.Errorf("countquery.NoiseFloor: need 0 < f_s = %v < N/ℓ′ = %v", q.FS, q.N/lf)
	case !(q.X > 0) || q.X > q.NP || q.X > q.FS || q.FS-q.X > q.N-q.NP:
		return Floor{}, fmt.Errorf("countquery.NoiseFloor: n_{P,s} = %v does not fit n_P = %v, f_s = %v, N = %v", q.X, q.NP, q.FS, q.N)
	case q.VarP < 0 || q.VarPbar < 0 || (q.VarP == 0) != (q.VarPbar == 0):
		return Floor{}, fmt.Errorf("countquery.NoiseFloor: variance overrides (%v, %v): give both, positive, or neither", q.VarP, q.VarPbar)
	}
	a := DecoyProb(q.FS, q.N, l, true)
	g := 1/lf - a
	da := (lf - 1) * q.N / (lf * (q.N - q.FS) * (q.N - q.FS))
	u := q.NP - q.X
	z := q.FS - q.X
	w := q.N - q.NP - z
	f := Floor{A01: a, VarP: q.VarP, VarPbar: q.VarPbar}
	if f.VarP == 0 {
		f.VarP = q.X*(lf-1)/(lf*lf) + u*a*(1-a)
		f.VarPbar = z*(lf-1)/(lf*lf) + w*a*(1-a)
	} else {
		f.Cov = (q.FS*(lf-1)/lf - f.VarP - f.VarPbar) / 2
	}
	c3, c1 := 1-u*da, u*da
	v := c3*c3*f.VarP + c1*c1*f.VarPbar - 2*c3*c1*f.Cov
	if !(v > 0) {
		return Floor{}, fmt.Errorf("countquery.NoiseFloor: variances (%v, %v, cov %v) give no positive variance", f.VarP, f.VarPbar, f.Cov)
	}
	f.SD = math.Sqrt(v) / g
	f.NaiveSD = math.Sqrt(f.VarP) / g
	f.RelErr = math.Sqrt(2/math.Pi) * f.SD / q.X
	return f, nil
}

// DesignVariances returns the exact variances of y3 and y1, the published
// counts of (P, s) and (P̄, s), under a grouping design of A′ given the true
// counts: nP[v] rows of value v satisfy P, f[v] rows hold v (after the
// drop), and c holds replays of the design's schedule, c[r][v] = C_vs, the
// number of decoy groups holding both v and s in replay r (Monte Carlo over
// the schedule; exact over the dealing and the publication).
//
// Derivation. A row of s publishes s with probability 1/ℓ′, independently
// of everything else (it draws a uniform member of its group). A row i of
// v ≠ s publishes s when its group holds s (G_i = 1) and its draw picks s
// (probability 1/ℓ′, independently). Given the schedule, v's rows are
// dealt to v's f_v slots by a uniform bijection, independently across
// values, so H_v = Σ_{i ∈ P, value v} G_i is hypergeometric (n_v draws from
// f_v slots of which C_vs hold s) and independent across v. With h_v =
// C_vs/f_v and x = nP[s]:
//
//	Var y3 = x(ℓ′ − 1)/ℓ′² + ((ℓ′ − 1)/ℓ′²)·Σ_v n_v E[h_v]
//	         + (1/ℓ′²)·( Σ_v n_v (f_v − n_v)/(f_v − 1)·E[h_v(1 − h_v)]
//	                     + Var(Σ_v n_v h_v) ),
//
// sums over v ≠ s, expectations and the variance over the schedule. With
// rows independent instead (NoiseFloor's default), the hypergeometric
// factor (f_v − n_v)/(f_v − 1) would be 1 and Var(Σ n_v h_v) would be 0:
// the first makes the design's variance smaller, the second larger. y1 is
// the same with f_v − n_v rows of v.
func DesignVariances(nP, f []float64, s, l int, c [][]float64) (varP, varPbar float64, err error) {
	if l < 2 || len(nP) != len(f) || s < 0 || s >= len(f) || len(c) < 2 {
		return 0, 0, fmt.Errorf("countquery.DesignVariances: need ℓ′ ≥ 2 (got %d), len(nP) = len(f) (%d, %d), s among them (%d), at least 2 replays (%d)", l, len(nP), len(f), s, len(c))
	}
	for v := range f {
		if !(nP[v] >= 0 && nP[v] <= f[v]) {
			return 0, 0, fmt.Errorf("countquery.DesignVariances: value %d: need 0 ≤ n_v = %v ≤ f_v = %v", v, nP[v], f[v])
		}
	}
	lf := float64(l)
	one := func(n func(v int) float64) (float64, error) {
		var mean, base float64
		sums := make([]float64, 0, len(c))
		for r, cr := range c {
			if len(cr) != len(f) {
				return 0, fmt.Errorf("countquery.DesignVariances: replay %d has %d values, want %d", r, len(cr), len(f))
			}
			var sum float64
			for v, fv := range f {
				if v == s || fv == 0 {
					continue
				}
				h := cr[v] / fv
				if !(h >= 0 && h <= 1) {
					return 0, fmt.Errorf("countquery.DesignVariances: replay %d: value %d shares %v groups with s, has %v rows", r, v, cr[v], fv)
				}
				nv := n(v)
				sum += nv * h
				base += (lf - 1) / (lf * lf) * nv * h
				if fv > 1 {
					base += nv * (fv - nv) / (fv - 1) * h * (1 - h) / (lf * lf)
				}
			}
			sums = append(sums, sum)
			mean += sum
		}
		rn := float64(len(c))
		mean /= rn
		var ss float64
		for _, x := range sums {
			ss += (x - mean) * (x - mean)
		}
		return n(s)*(lf-1)/(lf*lf) + base/rn + ss/(rn-1)/(lf*lf), nil
	}
	if varP, err = one(func(v int) float64 { return nP[v] }); err != nil {
		return 0, 0, err
	}
	if varPbar, err = one(func(v int) float64 { return f[v] - nP[v] }); err != nil {
		return 0, 0, err
	}
	return varP, varPbar, nil
}
