package estimate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/pramkit/pramkit/pkg/rng"
)

// denseA returns the K×K PRAM matrix A[x̄, x̌] = γ/q if equal, else 1/q.
func denseA(K int, gamma float64) *mat.Dense {
	q := gamma + float64(K-1)
	a := mat.NewDense(K, K, nil)
	for i := range K {
		for j := range K {
			a.Set(i, j, 1/q)
		}
		a.Set(i, i, gamma/q)
	}
	return a
}

// denseFreq returns T as a dense slice.
func denseFreq(c Counts) []float64 {
	T := make([]float64, c.K)
	m := float64(c.M())
	for i, g := range c.Index {
		T[g] = float64(c.Count[i]) / m
	}
	return T
}

// projectByBisection is an independent reference for the simplex
// projection: bisection on τ in Σ max(v − τ, 0) = 1.
func projectByBisection(v []float64) []float64 {
	f := func(tau float64) float64 {
		var s float64
		for _, x := range v {
			s += max(x-tau, 0)
		}
		return s
	}
	lo, hi := -1.0, 1.0
	for f(lo) < 1 {
		lo *= 2
	}
	for f(hi) > 1 {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if f(mid) > 1 {
			lo = mid
		} else {
			hi = mid
		}
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = max(x-(lo+hi)/2, 0)
	}
	return out
}

// denseEM runs iters EM steps with the explicit matrix:
// x_g ← x_g Σ_j T_j A[j,g]/(A x)_j, from the uniform start.
func denseEM(T []float64, gamma float64, iters int) []float64 {
	K := len(T)
	A := denseA(K, gamma)
	x := mat.NewVecDense(K, nil)
	for g := range K {
		x.SetVec(g, 1/float64(K))
	}
	ax := mat.NewVecDense(K, nil)
	for range iters {
		ax.MulVec(A, x)
		next := make([]float64, K)
		for g := range K {
			var s float64
			for j := range K {
				s += T[j] * A.At(j, g) / ax.AtVec(j)
			}
			next[g] = x.AtVec(g) * s
		}
		x = mat.NewVecDense(K, next)
	}
	return x.RawVector().Data
}

// randomCounts returns counts on `observed` random cells of [0, K) with
// skewed sizes.
func randomCounts(t testing.TB, r *rand.Rand, K uint64, observed int) Counts {
	t.Helper()
	cnt, err := NewCounter(K)
	if err != nil {
		t.Fatal(err)
	}
	cells := make([]uint64, observed)
	for i := range cells {
		cells[i] = r.Uint64N(K)
	}
	for i, g := range cells {
		for range 1 + (200 / (i + 1)) + r.IntN(5) {
			if err := cnt.Add(g); err != nil {
				t.Fatal(err)
			}
		}
	}
	return cnt.Counts()
}

// assertClose checks |got − want| ≤ tol·max(1, |want|) cell by cell
// (relative for the large values of ill-conditioned inverses).
func assertClose(t *testing.T, name string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", name, len(got), len(want))
	}
	for g := range got {
		if math.Abs(got[g]-want[g]) > tol*max(1, math.Abs(want[g])) {
			t.Fatalf("%s: cell %d: %.15g, want %.15g (tolerance %g)", name, g, got[g], want[g], tol)
		}
	}
}

func TestSparseEstimatorsAgreeWithDenseReferences(t *testing.T) {
	// For small and moderate K, with some cells never observed: Inverse
	// against gonum's inverse of A times T; Project against bisection on
	// the dense vector; MLE (O(observed) per step) against EM with the
	// explicit K×K matrix, step for step.
	r := rng.NewSeeded(41)
	for _, tt := range []struct {
		K        uint64
		observed int
		gamma    float64
	}{{5, 3, 2.5}, {12, 12, 4}, {300, 25, 30}, {300, 60, 1.2}} {
		name := fmt.Sprintf("K=%d observed≈%d γ=%v", tt.K, tt.observed, tt.gamma)
		c := randomCounts(t, r, tt.K, tt.observed)
		T := denseFreq(c)

		inv, err := Inverse(c, tt.gamma)
		if err != nil {
			t.Fatal(err)
		}
		var Ainv mat.Dense
		if err := Ainv.Inverse(denseA(int(tt.K), tt.gamma)); err != nil {
			t.Fatal(err)
		}
		var want mat.VecDense
		want.MulVec(&Ainv, mat.NewVecDense(int(tt.K), T))
		got, err := inv.Dense()
		if err != nil {
			t.Fatal(err)
		}
		assertClose(t, name+" inverse", got, want.RawVector().Data, 1e-12)

		proj, err := Project(inv)
		if err != nil {
			t.Fatal(err)
		}
		gotP, _ := proj.Dense()
		assertClose(t, name+" projection", gotP, projectByBisection(got), 1e-12)

		const iters = 40
		res, err := MLE(c, tt.gamma, EMOptions{Iterative: true, MaxIter: iters, Tol: 1e-300})
		if err != nil {
			t.Fatal(err)
		}
		if res.Iterations != iters || res.Converged {
			t.Fatalf("%s: %d iterations, converged %v; want %d, false", name, res.Iterations, res.Converged, iters)
		}
		gotM, _ := res.Estimate.Dense()
		assertClose(t, name+" EM", gotM, denseEM(T, tt.gamma, iters), 1e-12)

		// The closed form is the maximum: its Frank–Wolfe gap, from the
		// explicit matrix, bounds ℓ* − ℓ(x̂)/m and is 0 up to rounding.
		exact, err := MLE(c, tt.gamma, EMOptions{})
		if err != nil {
			t.Fatal(err)
		}
		gotX, _ := exact.Estimate.Dense()
		if gap := denseFrankWolfeGap(T, tt.gamma, gotX); gap > 1e-12 {
			t.Errorf("%s: closed form has Frank–Wolfe gap %g per row", name, gap)
		}
	}
}

// denseFrankWolfeGap returns max_g ∂ℓ/∂x_g − ⟨∇ℓ(x), x⟩ for the
// per-row log-likelihood ℓ(x)/m = Σ_j T(j)·ln (A x)_j, with the explicit
// matrix: ∂ℓ/∂x_g = Σ_j T(j)·A[j, g]/(A x)_j. For the concave ℓ it bounds
// how far ℓ(x) is below its maximum over the simplex (Jaggi, ICML 2013, §2).
func denseFrankWolfeGap(T []float64, gamma float64, x []float64) float64 {
	K := len(T)
	A := denseA(K, gamma)
	var ax mat.VecDense
	ax.MulVec(A, mat.NewVecDense(K, x))
	w := make([]float64, K)
	for j := range K {
		if T[j] > 0 {
			w[j] = T[j] / ax.AtVec(j)
		}
	}
	var grad mat.VecDense
	grad.MulVec(A.T(), mat.NewVecDense(K, w))
	return mat.Max(&grad) - mat.Dot(&grad, mat.NewVecDense(K, x))
}

func TestInverseHandValue(t *testing.T) {
	// K = 4, γ = 3, q = 6; counts (5, 3, 2, 0), m = 10:
	// T̂ = (6·0.5 − 1, 6·0.3 − 1, 6·0.2 − 1, −1)/2 = (1, 0.4, 0.1, −0.5).
	c, err := CountsFromDense([]int64{5, 3, 2, 0})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := Inverse(c, 3)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := inv.Dense()
	assertClose(t, "inverse", got, []float64{1, 0.4, 0.1, -0.5}, 1e-15)
	// Projection: τ solves (1 − τ) + (0.4 − τ) = 1 → τ = 0.2 (0.1 < 0.2
	// drops out): (0.8, 0.2, 0, 0).
	proj, _ := Project(inv)
	gotP, _ := proj.Dense()
	assertClose(t, "projection", gotP, []float64{0.8, 0.2, 0, 0}, 1e-15)
}

func TestEstimatesAreDistributions(t *testing.T) {
	// Projected and MLE estimates (closed form and EM) are non-negative
	// and sum to 1 (1e-9),
	// also for K = 2^40 with 40 observed cells, where the unobserved block
	// holds almost all cells; Inverse sums to 1 by construction (checked
	// for small K, where the sum is not a cancellation of 2^40 terms).
	r := rng.NewSeeded(42)
	for _, K := range []uint64{2, 32, 1000, 1 << 40} {
		c := randomCounts(t, r, K, min(int(min(K, 40)), 40))
		gamma := 1 + float64(min(K, 1000))/3
		inv, err := Inverse(c, gamma)
		if err != nil {
			t.Fatal(err)
		}
		if K <= 1000 && math.Abs(inv.Sum()-1) > 1e-9 {
			t.Errorf("K=%d inverse sums to %.15g", K, inv.Sum())
		}
		proj, err := Projected(c, gamma)
		if err != nil {
			t.Fatal(err)
		}
		res, err := MLE(c, gamma, EMOptions{})
		if err != nil {
			t.Fatal(err)
		}
		em, err := MLE(c, gamma, EMOptions{Iterative: true})
		if err != nil {
			t.Fatal(err)
		}
		for name, v := range map[string]Vector{"projected": proj, "mle": res.Estimate, "mle by EM": em.Estimate} {
			if math.Abs(v.Sum()-1) > 1e-9 {
				t.Errorf("K=%d %s sums to %.15g", K, name, v.Sum())
			}
			if v.Rest < 0 {
				t.Errorf("K=%d %s: unobserved value %v < 0", K, name, v.Rest)
			}
			for i, x := range v.Value {
				if x < 0 {
					t.Errorf("K=%d %s: cell %d = %v < 0", K, name, v.Index[i], x)
				}
			}
		}
	}
}

func TestMLELogLikelihoodNeverDecreases(t *testing.T) {
	// EM's monotonicity (Dempster–Laird–Rubin, Theorem 1), checked on the
	// trace up to float64 rounding of a sum of m log terms (1e-12 relative);
	// the closed form's ℓ is at or above every EM iterate's.
	r := rng.NewSeeded(43)
	for _, tt := range []struct {
		K     uint64
		gamma float64
	}{{8, 1.5}, {32, 28.2}, {32, 2.7}, {1 << 30, 1e6}} {
		c := randomCounts(t, r, tt.K, 20)
		res, err := MLE(c, tt.gamma, EMOptions{Iterative: true})
		if err != nil {
			t.Fatal(err)
		}
		exact, err := MLE(c, tt.gamma, EMOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(exact.LogLikelihood) != 1 || exact.Iterations != 0 || !exact.Converged {
			t.Fatalf("K=%d: closed form reports %d iterations, converged %v, %d trace entries; want 0, true, 1",
				tt.K, exact.Iterations, exact.Converged, len(exact.LogLikelihood))
		}
		top := exact.LogLikelihood[0]
		for i, ll := range res.LogLikelihood {
			if ll > top+1e-12*math.Abs(top) {
				t.Fatalf("K=%d γ=%v: EM step %d has ℓ = %.17g above the closed form's %.17g", tt.K, tt.gamma, i, ll, top)
			}
		}
		ll := res.LogLikelihood
		if len(ll) != res.Iterations+1 {
			t.Fatalf("K=%d: %d trace entries for %d iterations", tt.K, len(ll), res.Iterations)
		}
		for i := 1; i < len(ll); i++ {
			if ll[i] < ll[i-1]-1e-12*math.Abs(ll[i-1]) {
				t.Fatalf("K=%d γ=%v: log-likelihood fell at step %d: %.17g → %.17g", tt.K, tt.gamma, i, ll[i-1], ll[i])
			}
		}
		if !(ll[len(ll)-1] > ll[0]) {
			t.Errorf("K=%d γ=%v: no increase from the start (%v → %v)", tt.K, tt.gamma, ll[0], ll[len(ll)-1])
		}
		t.Logf("K=%d γ=%v: %d iterations, converged %v, ℓ %.6f → %.6f", tt.K, tt.gamma, res.Iterations, res.Converged, ll[0], ll[len(ll)-1])
	}
}

func TestMLEEqualsInverseInsideTheSimplex(t *testing.T) {
	// If A⁻¹T is a distribution, it is the unconstrained multinomial MLE
	// of A x = T, hence the MLE. K = 4, γ = 50, q = 53, T = (0.4, 0.3,
	// 0.2, 0.1): T̂ = (53T − 1)/49 = (0.4122, 0.3041, 0.1959, 0.0878).
	// The closed form reaches it to rounding, EM to its stopping rule.
	c, _ := CountsFromDense([]int64{400, 300, 200, 100})
	inv, _ := Inverse(c, 50)
	want, _ := inv.Dense()
	for _, tt := range []struct {
		opts EMOptions
		tol  float64
	}{{EMOptions{}, 1e-15}, {EMOptions{Iterative: true}, 1e-7}} {
		res, err := MLE(c, 50, tt.opts)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := res.Estimate.Dense()
		assertClose(t, fmt.Sprintf("MLE %+v vs inverse", tt.opts), got, want, tt.tol)
		if !res.Converged {
			t.Errorf("%+v: not converged after %d iterations", tt.opts, res.Iterations)
		}
	}
}

func TestMLESatisfiesKKTOnTheBoundary(t *testing.T) {
	// At the constrained maximum, ∂ℓ/∂x_g /m = (1/q)((γ − 1)T(g)/(Ax)_g + ρ)
	// equals the multiplier 1 where x_g > 0 and is ≤ 1 where x_g = 0
	// (for unobserved cells it is ρ/q). Cases whose inverse estimate has
	// negative cells, one with K = 2^30 (sparse). The closed form meets
	// the conditions to rounding (1e-12) in every positive cell; EM, run
	// long, to 1e-6 in the cells it has not driven towards 0.
	dense, _ := CountsFromDense([]int64{50, 30, 5, 2, 0, 0, 1, 12})
	sparse := randomCounts(t, rng.NewSeeded(45), 1<<30, 20)
	for _, alg := range []struct {
		name        string
		opts        EMOptions
		tol, active float64 // gradient tolerance; cells above active must have gradient 1
	}{
		{"closed form", EMOptions{}, 1e-12, 0},
		{"EM", EMOptions{Iterative: true, MaxIter: 200000, Tol: 1e-13}, 1e-6, 1e-4},
	} {
		for _, tt := range []struct {
			c     Counts
			gamma float64
		}{{dense, 3}, {sparse, 1e6}, {sparse, 1e9}} {
			res, err := MLE(tt.c, tt.gamma, alg.opts)
			if err != nil {
				t.Fatal(err)
			}
			x := res.Estimate
			m := float64(tt.c.M())
			q := tt.gamma + float64(tt.c.K-1)
			var rho float64
			ax := make([]float64, len(x.Value))
			for i, xi := range x.Value {
				ax[i] = ((tt.gamma-1)*xi + 1) / q
				rho += float64(tt.c.Count[i]) / m / ax[i]
			}
			check := func(cell string, xi, grad float64) {
				if xi > alg.active && math.Abs(grad-1) > alg.tol {
					t.Errorf("%s K=%d γ=%v %s: x = %.6g, gradient %.15f ≠ 1", alg.name, tt.c.K, tt.gamma, cell, xi, grad)
				}
				if grad > 1+alg.tol {
					t.Errorf("%s K=%d γ=%v %s: x = %.6g, gradient %.15f > 1", alg.name, tt.c.K, tt.gamma, cell, xi, grad)
				}
			}
			for i, xi := range x.Value {
				check(fmt.Sprint("cell ", x.Index[i]), xi, ((tt.gamma-1)*float64(tt.c.Count[i])/m/ax[i]+rho)/q)
			}
			if x.Unlisted() > 0 {
				check("unobserved", x.Rest, rho/q)
			}
			t.Logf("%s K=%d γ=%v: x = %.4f, rest %.3g after %d iterations (converged %v)", alg.name, tt.c.K, tt.gamma, x.Value, x.Rest, res.Iterations, res.Converged)
		}
	}
}

func TestMLEHandValue(t *testing.T) {
	// Counts (50, 30, 5, 2, 0, 0, 1, 12), m = 100, γ = 3, so β = 1/2.
	// Sorted: 50, 30, 12, …; n_(k)(1 + kβ) − β·S_k is 50·1.5 − 25 = 50 and
	// 30·2 − 40 = 20 (> 0), then 12·2.5 − 46 = −16, so k = 2, S_2 = 80:
	// x = ((50 + 10)/80, (30 − 10)/80) = (0.75, 0.25), 0 elsewhere. EM from
	// the uniform distribution heads to the same point.
	c, _ := CountsFromDense([]int64{50, 30, 5, 2, 0, 0, 1, 12})
	want := []float64{0.75, 0.25, 0, 0, 0, 0, 0, 0}
	res, err := MLE(c, 3, EMOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := res.Estimate.Dense()
	assertClose(t, "closed form", got, want, 1e-15)
	em, err := MLE(c, 3, EMOptions{Iterative: true, MaxIter: 100000, Tol: 1e-14})
	if err != nil {
		t.Fatal(err)
	}
	gotEM, _ := em.Estimate.Dense()
	assertClose(t, "EM", gotEM, want, 1e-9)
}

func TestProjectionNeverIncreasesTheDistanceToADistribution(t *testing.T) {
	// Non-expansiveness of the projection onto a convex set, for random
	// vectors (some with an unlisted block) and random simplex points.
	r := rng.NewSeeded(44)
	for trial := range 200 {
		K := uint64(2 + r.IntN(50))
		listed := 1 + r.IntN(int(K))
		perm := r.Perm(int(K))[:listed]
		sort.Ints(perm)
		v := Vector{K: K, Rest: r.NormFloat64() * 0.1}
		for _, g := range perm {
			v.Index = append(v.Index, uint64(g))
			v.Value = append(v.Value, r.NormFloat64()*0.5)
		}
		truth := make([]float64, K)
		var s float64
		for g := range truth {
			truth[g] = r.ExpFloat64()
			s += truth[g]
		}
		for g := range truth {
			truth[g] /= s
		}
		p, err := Project(v)
		if err != nil {
			t.Fatal(err)
		}
		d0, _ := L2(v, FromDense(truth))
		d1, _ := L2(p, FromDense(truth))
		if d1 > d0+1e-12 || math.Abs(p.Sum()-1) > 1e-9 {
			t.Fatalf("trial %d: distance %v → %v, sum %v", trial, d0, d1, p.Sum())
		}
	}
}

func TestEstimatorsRejectBadInput(t *testing.T) {
	good, _ := CountsFromDense([]int64{1, 2, 3})
	bad := map[string]Counts{
		"K zero":          {K: 0},
		"K above 2^62":    {K: 1<<62 + 1, Index: []uint64{0}, Count: []int64{1}},
		"length mismatch": {K: 3, Index: []uint64{0, 1}, Count: []int64{1}},
		"index outside":   {K: 3, Index: []uint64{3}, Count: []int64{1}},
		"unsorted":        {K: 3, Index: []uint64{1, 0}, Count: []int64{1, 1}},
		"duplicate":       {K: 3, Index: []uint64{1, 1}, Count: []int64{1, 1}},
		"zero count":      {K: 3, Index: []uint64{1}, Count: []int64{0}},
		"no rows":         {K: 3},
		"negative count":  {K: 3, Index: []uint64{0, 1}, Count: []int64{5, -1}},
	}
	for name, c := range bad {
		for _, m := range []Method{MethodInverse, MethodProjected, MethodMLE} {
			if _, err := Run(m, c, 2, EMOptions{}); err == nil {
				t.Errorf("%v accepted %s", m, name)
			}
		}
	}
	for _, gamma := range []float64{1, 0, -1, math.NaN(), math.Inf(1)} {
		for _, m := range []Method{MethodInverse, MethodProjected, MethodMLE} {
			if _, err := Run(m, good, gamma, EMOptions{}); err == nil {
				t.Errorf("%v accepted gamma %v", m, gamma)
			}
		}
	}
	for _, o := range []EMOptions{{MaxIter: -1}, {Tol: -1}, {Tol: math.NaN()}, {Tol: math.Inf(1)}} {
		if _, err := MLE(good, 2, o); err == nil {
			t.Errorf("MLE accepted options %+v", o)
		}
	}
	if _, err := Run(0, good, 2, EMOptions{}); err == nil {
		t.Error("Run accepted the zero Method")
	}
	if _, err := CountsFromDense([]int64{1, -1}); err == nil {
		t.Error("CountsFromDense accepted a negative count")
	}
	if _, err := CountsFromDense([]int64{0, 0}); err == nil {
		t.Error("CountsFromDense accepted zero rows")
	}
	cnt, _ := NewCounter(3)
	if err := cnt.Add(3); err == nil {
		t.Error("Counter accepted value K")
	}
	if _, err := NewCounter(0); err == nil {
		t.Error("NewCounter accepted K = 0")
	}
}

func TestParseMethodInvertsString(t *testing.T) {
	for _, m := range []Method{MethodInverse, MethodProjected, MethodMLE} {
		if got, err := ParseMethod(m.String()); err != nil || got != m {
			t.Errorf("ParseMethod(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := ParseMethod("MLE "); err == nil {
		t.Error("ParseMethod accepted an unknown name")
	}
}
