package countquery

import (
	"errors"
	"fmt"
	"math"
)

// Defaults of Options.
const (
	// DefaultTolerance is the paper's stopping rule: no component changes by
	// more than 1 % in one step (§9.6).
	DefaultTolerance = 0.01
	// DefaultMaxIter bounds the iterations (the paper saw a median of 16 and
	// a mean of 325 iterations, §9.6).
	DefaultMaxIter = 10000
	// MaxAttributes bounds w, the number of sensitive attributes of one
	// query: 2^{w+1} states.
	MaxAttributes = 20
)

// Options configure the iterative Bayesian update. The paper's procedure
// (Eq. 12 with Figure 3's a01 = (x1 + x3)/N at the current x) is
// Options{UpdateFrequencies: true}; the zero value keeps a01 = f′_s/N fixed
// at its value for x = y.
type Options struct {
	// Tolerance stops the iteration once no state count x_i changes by more
	// than Tolerance·max(x_i, 1) in one step. Default (0): 0.01, the paper's
	// 1 %. The floor of one row matters for states heading to 0: the update
	// approaches a boundary geometrically, so their relative change never
	// shrinks and a purely relative rule would always run to MaxIter.
	// The update moves slowly (most of the information is missing), so 1 %
	// stops early: on UCI Adult at ℓ′ = 5 after a median of 1 step, leaving
	// x between y and the maximum likelihood fixed point.
	Tolerance float64
	// MaxIter bounds the number of iterations. Default (0): 10000.
	MaxIter int
	// ExactDecoy uses a01 = f_s(ℓ′−1)/(ℓ′(N−f_s)) instead of the paper's
	// f_s/N (see DecoyProb). Default false: the paper's Figure 3. The
	// exact form is the more accurate one (UCI Adult, ℓ′ = 5, selectivity
	// 2–5 %: mean relative error 0.26 against 0.36 for f′_s/N fixed and
	// 0.28 for the paper's re-evaluated a01; converged 0.32 against 0.68),
	// since the paper's overstates a01 by about ℓ′/(ℓ′−1).
	ExactDecoy bool
	// Frequencies gives f_{s_k} for each sensitive attribute of the query.
	// Default (nil): f′_{s_k}, the count of s_k in D′ (Theorem 3), which the
	// observed state counts y already hold.
	Frequencies []float64
	// UpdateFrequencies re-evaluates f_{s_k} from the current estimate x at
	// every step, as Figure 3 literally writes a01 = (x1 + x3)/N with x = x^t
	// (Eq. 12's a^t_ij): with ExactDecoy false, the paper's procedure
	// (estimate --decoy paper). It starts from f′_{s_k}; it cannot be
	// combined with Frequencies. Default false: f_{s_k} stays fixed.
	UpdateFrequencies bool
	// Discrepancy adds the discrepancy principle to the stopping rule
	// (estimate --ibu-stop discrepancy): the update also stops, before a
	// step, once the current x explains the query's published counts
	// within the noise the mechanism puts on them (FitsWithinNoise).
	// Tolerance and MaxIter still apply when the fit is never reached.
	Discrepancy bool
	// Shrink answers a query of a predicate P and one sensitive value on
	// an A′ release by ShrinkPredicate over every value of the column
	// among P's rows instead of by the update (estimate --ibu-stop
	// shrink): the converged estimates, shrunk toward independence by
	// James–Stein. Plan.Answers only (the plan must count every value:
	// NewPlanFor); it needs ExactDecoy. Queries of several sensitive
	// values still run the update, stopped by the rules above.
	Shrink bool
}

// Estimate is the result of the iterative Bayesian update.
type Estimate struct {
	// Count estimates the rows of D satisfying P and every s_k: x_{K−1}.
	Count float64
	// X holds the estimated count of every state (same indexing as y).
	X []float64
	// Iterations is the number of update steps taken.
	Iterations int
	// Converged reports that the stopping rule was met before MaxIter.
	Converged bool
}

// DecoyProb returns a01, the probability that a row of D without value s
// publishes s in D′ under A′ with ℓ′ = l, for a table of N rows in which s
// has frequency f_s.
//
// The paper's value (Figure 3) is
//
//	a01 = f_s / N.
//
// The exact average, selected by exact, is
//
//	a01 = f_s (ℓ′ − 1) / (ℓ′ (N − f_s)).
//
// Derivation: of the N/ℓ′ decoy groups, f_s hold an s row (one each, the
// values of a group being distinct), so f_s(ℓ′ − 1) of the N − f_s non-s
// rows share a group with s. Ids are random and independent of the
// non-sensitive values, so on average a non-s row is in such a group with
// probability f_s(ℓ′ − 1)/(N − f_s), and then publishes s with probability
// 1/ℓ′. Check: the expected count of s in D′ is then
// f_s/ℓ′ + (N − f_s)·a01 = f_s, as Theorem 3 requires, whereas the paper's
// value gives f_s/ℓ′ + f_s(N − f_s)/N ≠ f_s (§7.1 divides the f_s(ℓ′ − 1)
// non-s slots of the s-groups by all N rows and counts ℓ′ slots per group).
// For f_s ≪ N the exact value is (ℓ′ − 1)/ℓ′ times the paper's. The
// probability for a particular row depends on its own value v (groups pair
// values by bucket size), so a01 is exact for predicates P whose rows are
// spread over the non-s values like the table as a whole.
//
// f_s is clamped to [0, N/ℓ′] for the exact form (eligibility guarantees
// f_s ≤ N/ℓ′, where a01 reaches 1/ℓ′: every non-s row shares a group with
// an s), and to [0, N] for the paper's.
func DecoyProb(fs, n float64, l int, exact bool) float64 {
	if !exact {
		return math.Min(math.Max(fs, 0), n) / n
	}
	lf := float64(l)
	fs = math.Min(math.Max(fs, 0), n/lf)
	return fs * (lf - 1) / (lf * (n - fs))
}

// State returns the index of the state of a row (Definition 6 and §7.2):
//
//	i = [P]·2^w + Σ_{k=1..w} [s_k]·2^{w−k}
//
// with [·] = 1 when the row satisfies P or holds s_k. For one sensitive
// attribute this is 0 = P̄s̄, 1 = P̄s, 2 = Ps̄, 3 = Ps, as in Figure 3; the
// order matches the tensor product M0 ⊗ M1 ⊗ … ⊗ Mw of Eq. 13.
func State(inP bool, has ...bool) int {
	i := 0
	if inP {
		i = 1
	}
	for _, b := range has {
		i <<= 1
		if b {
			i |= 1
		}
	}
	return i
}

// Predicate estimates the count of rows of D satisfying predicate P and
// holding sensitive value s from y, the counts of the four states in the
// published D′ (y[State(inP, hasS)]; N = Σ y), for a table published by A′
// with ℓ′ = l (§7.1). It runs the iterative Bayesian update (Eq. 12)
//
//	x_i ← Σ_j y_j a_ij x_i / Σ_r a_rj x_r,    x ← y initially,
//
// where a_ij = P(state j in D′ | state i in D) is Figure 3's matrix
//
//	        P̄s̄        P̄s     Ps̄        Ps
//	P̄s̄  [ 1 − a01    a01    0          0   ]
//	P̄s  [ (ℓ′−1)/ℓ′  1/ℓ′   0          0   ]
//	Ps̄  [ 0          0      1 − a23    a23 ]
//	Ps  [ 0          0      (ℓ′−1)/ℓ′  1/ℓ′]
//
// with a01 = a23 = DecoyProb(f_s, N, ℓ′, opt.ExactDecoy); rows sum to 1.
// The update is the EM algorithm for this model, so x stays ≥ 0 and keeps
// the counts of P and P̄ rows of y. Estimate.Count is x_3.
func Predicate(y [4]float64, l int, opt Options) (Estimate, error) {
	fs, n, err := prepare(y[:], 1, l, &opt)
	if err != nil {
		return Estimate{}, fmt.Errorf("countquery.Predicate: %w", err)
	}
	lf := float64(l)
	var a [4][4]float64
	setA := func(fs float64) {
		a01 := DecoyProb(fs, n, l, opt.ExactDecoy)
		a = [4][4]float64{
			{1 - a01, a01, 0, 0},
			{(lf - 1) / lf, 1 / lf, 0, 0},
			{0, 0, 1 - a01, a01},
			{0, 0, (lf - 1) / lf, 1 / lf},
		}
	}
	setA(fs[0])
	x := y
	var est Estimate
	for est.Iterations < opt.MaxIter {
		if opt.UpdateFrequencies {
			setA(x[1] + x[3])
		}
		var fit [4]float64 // Σ_r a_rj x_r, the expected counts of D′ under x
		for j := range 4 {
			for r := range 4 {
				fit[j] += a[r][j] * x[r]
			}
		}
		if opt.Discrepancy && FitsWithinNoise(y[2:], fit[2:]) {
			est.Converged = true
			break
		}
		var ratio [4]float64 // y_j / Σ_r a_rj x_r
		for j := range 4 {
			if y[j] == 0 {
				continue
			}
			if fit[j] == 0 {
				return Estimate{}, fmt.Errorf("countquery.Predicate: %w (state %d)", errImpossible, j)
			}
			ratio[j] = y[j] / fit[j]
		}
		var next [4]float64
		done := true
		for i := range 4 {
			var s float64
			for j := range 4 {
				s += a[i][j] * ratio[j]
			}
			next[i] = x[i] * s
			if math.Abs(next[i]-x[i]) > opt.Tolerance*math.Max(x[i], 1) {
				done = false
			}
		}
		x = next
		est.Iterations++
		if done {
			est.Converged = true
			break
		}
	}
	est.X = x[:]
	est.Count = x[3]
	return est, nil
}

// FitsWithinNoise is the discrepancy principle (Morozov) for the update:
// it reports whether the expected counts fit of the states of the rows
// satisfying P (the second half of the states: P set) match the observed
// counts y of those states within the sampling noise of the release,
//
//	χ² = Σ_j (y_j − fit_j)²/fit_j ≤ len(y) − 1.
//
// Why: the update is EM, i.e. Richardson–Lucy deconvolution, whose
// iterates go from x = y (the counts as published) to the maximum-
// likelihood estimate, which also fits the noise; stopping early is its
// regularisation. Under the model the published counts of the n_P rows
// of P are multinomial, so Pearson's χ² of the true counts is about
// χ²(len(y) − 1), with mean len(y) − 1 (the P rows' total is known; the
// update keeps it). Fitting the data more closely than that is fitting
// noise: the rule stops at the first x whose fit is as good as the truth's
// is expected to be. For one sensitive value it reads
// (y3 − fit3)² ≤ n_P·θ(1 − θ), θ = fit3/n_P: the binomial variance of the
// published count of Ps. It adapts to ℓ′ and n_P where the 1 % rule does
// not: with little noise (small ℓ′) it runs close to the maximum-
// likelihood estimate, with much noise (ℓ′ near the eligibility bound,
// 1/ℓ′ − a01 small) it stays near y. Only P's states count: the model is
// block-diagonal in P (Figure 3, M0 = I in Eq. 13), so x_{K−1} depends on
// them alone. A state with fit_j = 0 adds nothing when y_j = 0 and makes
// the fit fail otherwise.
func FitsWithinNoise(y, fit []float64) bool {
	var chi2 float64
	for j := range y {
		d := y[j] - fit[j]
		switch {
		case fit[j] > 0:
			chi2 += d * d / fit[j]
		case y[j] != 0:
			return false
		}
	}
	return chi2 <= float64(len(y)-1)
}

var errImpossible = errors.New("observed count in a state the model gives probability 0")

// PredicateMulti estimates the count of rows of D satisfying P and holding
// s_1..s_w of w sensitive attributes, each published independently by A′
// with ℓ′ = l (§7.2), from y, the counts of the K = 2^{w+1} states in D′
// (len(y) = K, indexed by State). The transition matrix is the tensor
// product (Eq. 13)
//
//	M = M0 ⊗ M1 ⊗ … ⊗ Mw,   M0 = I₂,
//	Mk = [ 1 − a01(k)   a01(k) ]
//	     [ (ℓ′−1)/ℓ′    1/ℓ′   ],  a01(k) = DecoyProb(f_{s_k}, N, ℓ′, exact)
//
// and the update is Eq. 13, x_i ← Σ_j y_j m_ij x_i / Σ_r m_rj x_r, from
// x = y. M is never formed: Mᵀx and M·(y/Mᵀx) are applied one 2×2 factor
// at a time, O(K·w) per iteration. With w = 1 it computes what Predicate
// does. Estimate.Count is x_{K−1}.
func PredicateMulti(y []float64, l int, opt Options) (Estimate, error) {
	k := len(y)
	w := 0
	for 1<<(w+1) < k {
		w++
	}
	if k < 4 || 1<<(w+1) != k || w > MaxAttributes {
		return Estimate{}, fmt.Errorf("countquery.PredicateMulti: need 2^(w+1) state counts with 1 ≤ w ≤ %d, got %d", MaxAttributes, k)
	}
	fs, n, err := prepare(y, w, l, &opt)
	if err != nil {
		return Estimate{}, fmt.Errorf("countquery.PredicateMulti: %w", err)
	}
	lf := float64(l)
	m10, m11 := (lf-1)/lf, 1/lf
	a01 := make([]float64, w)
	for i := range w {
		a01[i] = DecoyProb(fs[i], n, l, opt.ExactDecoy)
	}
	x := append([]float64(nil), y...)
	z := make([]float64, k)
	next := make([]float64, k)
	var est Estimate
	for est.Iterations < opt.MaxIter {
		if opt.UpdateFrequencies {
			marginals(x, w, fs)
			for i := range w {
				a01[i] = DecoyProb(fs[i], n, l, opt.ExactDecoy)
			}
		}
		// z = Mᵀx: apply each factor's transpose along its axis. Attribute
		// a (1-based) is bit w−a of the state index.
		copy(z, x)
		for att := 1; att <= w; att++ {
			stride := 1 << (w - att)
			m00, m01 := 1-a01[att-1], a01[att-1]
			for i := range k {
				if i&stride != 0 {
					continue
				}
				u0, u1 := z[i], z[i+stride]
				z[i] = m00*u0 + m10*u1
				z[i+stride] = m01*u0 + m11*u1
			}
		}
		if opt.Discrepancy && FitsWithinNoise(y[k/2:], z[k/2:]) {
			est.Converged = true
			break
		}
		for j := range k {
			switch {
			case y[j] == 0:
				z[j] = 0
			case z[j] == 0:
				return Estimate{}, fmt.Errorf("countquery.PredicateMulti: %w (state %d)", errImpossible, j)
			default:
				z[j] = y[j] / z[j]
			}
		}
		// z ← M·z, then x_i ← x_i·z_i.
		for att := 1; att <= w; att++ {
			stride := 1 << (w - att)
			m00, m01 := 1-a01[att-1], a01[att-1]
			for i := range k {
				if i&stride != 0 {
					continue
				}
				r0, r1 := z[i], z[i+stride]
				z[i] = m00*r0 + m01*r1
				z[i+stride] = m10*r0 + m11*r1
			}
		}
		done := true
		for i := range k {
			next[i] = x[i] * z[i]
			if math.Abs(next[i]-x[i]) > opt.Tolerance*math.Max(x[i], 1) {
				done = false
			}
		}
		x, next = next, x
		est.Iterations++
		if done {
			est.Converged = true
			break
		}
	}
	est.X = x
	est.Count = x[k-1]
	return est, nil
}

// marginals writes into fs the total of the states holding s_k, for each
// attribute k: the f′_{s_k} of y, or the current estimate of f_{s_k} of x.
func marginals(x []float64, w int, fs []float64) {
	for att := 1; att <= w; att++ {
		stride := 1 << (w - att)
		var f float64
		for i, v := range x {
			if i&stride != 0 {
				f += v
			}
		}
		fs[att-1] = f
	}
}

// prepare checks the arguments, fills in the defaults of opt and returns the
// frequencies to start from and N = Σ y.
func prepare(y []float64, w, l int, opt *Options) (fs []float64, n float64, err error) {
	if l < 2 {
		return nil, 0, fmt.Errorf("ℓ′ must be at least 2, got %d", l)
	}
	for i, v := range y {
		if !(v >= 0) || math.IsInf(v, 1) {
			return nil, 0, fmt.Errorf("state count y[%d] must be finite and ≥ 0, got %v", i, v)
		}
		n += v
	}
	if n == 0 {
		return nil, 0, errors.New("no rows: all state counts are 0")
	}
	if opt.Tolerance == 0 {
		opt.Tolerance = DefaultTolerance
	}
	if !(opt.Tolerance > 0) || math.IsInf(opt.Tolerance, 1) {
		return nil, 0, fmt.Errorf("tolerance must be positive and finite, got %v", opt.Tolerance)
	}
	if opt.MaxIter == 0 {
		opt.MaxIter = DefaultMaxIter
	}
	if opt.MaxIter < 0 {
		return nil, 0, fmt.Errorf("MaxIter must be positive, got %d", opt.MaxIter)
	}
	fs = make([]float64, w)
	if opt.Frequencies == nil {
		marginals(y, w, fs)
		return fs, n, nil
	}
	if opt.UpdateFrequencies {
		return nil, 0, errors.New("Frequencies and UpdateFrequencies are exclusive")
	}
	if len(opt.Frequencies) != w {
		return nil, 0, fmt.Errorf("%d frequencies for %d sensitive attributes", len(opt.Frequencies), w)
	}
	for i, f := range opt.Frequencies {
		if !(f >= 0 && f <= n) {
			return nil, 0, fmt.Errorf("frequency f_s of attribute %d must be in [0, N = %v], got %v", i+1, n, f)
		}
	}
	copy(fs, opt.Frequencies)
	return fs, n, nil
}

// DefaultOptions are estimate's defaults for a release (--decoy exact,
// --ibu-stop auto), kept here so that every reader of a release answers its
// queries alike (estimate, the release report; make the plan with
// NewPlanFor and these options): the exact a01, and the estimator measured
// best for the release's design on UCI Adult over ℓ′ = 2..7. When the
// decoy groups were drawn at random: James–Stein shrinkage of the
// converged estimates (Options.Shrink, ShrinkPredicate) for a predicate and
// one sensitive value — the least error summed over ℓ′ and the least at
// ℓ′ = 2..6 in make figures, 0.01 behind the discrepancy rule at 7 — and
// the discrepancy principle (Options.Discrepancy, falling back on the
// converged rule) for several sensitive values. On Anatomy's groups the
// paper's 1 % rule (shrinking their biased converged estimates does worse).
func DefaultOptions(randomGroups bool) Options {
	if randomGroups {
		return Options{Tolerance: ConvergedTolerance, MaxIter: ConvergedMaxIter, ExactDecoy: true, Discrepancy: true, Shrink: true}
	}
	return Options{Tolerance: DefaultTolerance, MaxIter: DefaultMaxIter, ExactDecoy: true}
}

// The stopping rule of a converged update (estimate --ibu-stop converged,
// the fallback of the discrepancy rule): no state count
// changes by more than ConvergedTolerance·max(x_i, 1) in one step, or
// ConvergedMaxIter steps.
const (
	ConvergedTolerance = 1e-9
	ConvergedMaxIter   = 1_000_000
)

// PredicateMLE returns the limit of Predicate's update with a01 fixed at
// DecoyProb(f′_s, N, ℓ′, exact) (Options.UpdateFrequencies false,
// Frequencies nil), in closed form: the maximum-likelihood estimate of x_3,
//
//	x_3 = clip((y3 − n_P·a01)/(1/ℓ′ − a01), 0, n_P),   n_P = y2 + y3.
//
// With a01 fixed, the P rows of Figure 3's model publish s independently
// with probability θ = a01 + (x_3/n_P)(1/ℓ′ − a01), one-to-one in x_3, so
// the binomial likelihood is maximal at θ = y3/n_P clipped to
// [a01, 1/ℓ′]. The update (EM) converges there; the closed form skips the
// iterations, which are many when the maximum is on the boundary. It is
// what experiments with thousands of queries use (scripts/figures).
func PredicateMLE(y [4]float64, l int, exact bool) (float64, error) {
	opt := Options{ExactDecoy: exact}
	fs, n, err := prepare(y[:], 1, l, &opt)
	if err != nil {
		return 0, fmt.Errorf("countquery.PredicateMLE: %w", err)
	}
	a01 := DecoyProb(fs[0], n, l, exact)
	gap := 1/float64(l) - a01
	nP := y[2] + y[3]
	if !(gap > 0) { // f′_s at N/ℓ′: every row publishes s with 1/ℓ′
		return 0, fmt.Errorf("countquery.PredicateMLE: a01 = 1/ℓ′ (f′_s = N/ℓ′): the release says nothing about which rows hold s")
	}
	return math.Min(math.Max((y[3]-nP*a01)/gap, 0), nP), nil
}
