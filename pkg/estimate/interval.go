package estimate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Interval holds per-cell confidence intervals for the cells of a Vector:
// [Lo[i], Hi[i]] for the listed cell Index[i], [RestLo, RestHi] for each
// unlisted one.
type Interval struct {
	Level          float64 // nominal coverage, e.g. 0.95
	Index          []uint64
	Lo, Hi         []float64
	RestLo, RestHi float64
}

func checkLevel(level float64) error {
	if !(level > 0 && level < 1) {
		return fmt.Errorf("level must be in (0, 1), got %v", level)
	}
	return nil
}

// InverseInterval returns normal-approximation intervals for the true type
// t(g), built around the Inverse estimate. Derivation: T̂(g) = (q·T(g) −
// 1)/(γ − 1) is affine in T(g), so
//
//	Var T̂(g) = (q/(γ − 1))² · Var T(g) ≤ (q/(γ − 1))² · p_g(1 − p_g)/m,
//
// p_g = E T(g) = (A t)_g. m·T(g) counts the released rows equal to g: a sum
// of m indicators of mean p_g, independent given the sample (PRAM acts row by
// row) and pairwise non-positively correlated across the uniform sample
// without replacement (Cov = ((Σ_a h_a)² − n Σ_a h_a²)/(n²(n − 1)) ≤ 0 with
// h_a = A[g, x_a]), so the multinomial (binomial) variance p_g(1 − p_g)/m
// bounds Var T(g) and the interval is conservative for the full table.
// (Exactly, Var T(g) = [p_g(1 − p_g) − ((m − 1)/(n − 1))((γ − 1)/q)² t(g)(1 − t(g))]/m;
// the dropped term needs the unknown t(g) and n.) We
// solve |T(g) − p_g| ≤ z·sqrt(p_g(1 − p_g)/m) for p_g (the Wilson score
// interval, E. B. Wilson, JASA 22, 1927) rather than plugging in p_g ≈
// T(g): the plug-in (Wald) interval has zero width at every unobserved
// cell, while p_g ≥ 1/q > 0 there. With z the (1 + level)/2 normal quantile,
//
//	p_g ∈ [(T + z²/2m) ∓ z·sqrt(T(1 − T)/m + z²/4m²)] / (1 + z²/m),
//
// mapped through p ↦ (q·p − 1)/(γ − 1) and intersected with [0, 1], the
// range of t(g) (which can only raise coverage).
func InverseInterval(c Counts, gamma, level float64) (Interval, error) {
	m, err := c.validate()
	if err != nil {
		return Interval{}, fmt.Errorf("estimate.InverseInterval: %w", err)
	}
	w, err := newWilson(c.K, m, gamma, level)
	if err != nil {
		return Interval{}, fmt.Errorf("estimate.InverseInterval: %w", err)
	}
	// Index is c's, shared (as Inverse's).
	out := Interval{Level: level, Index: c.Index, Lo: make([]float64, len(c.Index)), Hi: make([]float64, len(c.Index))}
	for i, n := range c.Count {
		out.Lo[i], out.Hi[i] = w.bounds(n)
	}
	out.RestLo, out.RestHi = w.bounds(0)
	return out, nil
}

// wilson computes InverseInterval's bounds for a release of m rows over K
// cells.
type wilson struct {
	z, q, gamma, m float64
}

func newWilson(K uint64, m int64, gamma, level float64) (wilson, error) {
	if err := checkGamma(gamma); err != nil {
		return wilson{}, err
	}
	if err := checkLevel(level); err != nil {
		return wilson{}, err
	}
	return wilson{z: distuv.UnitNormal.Quantile((1 + level) / 2), q: gamma + float64(K-1), gamma: gamma, m: float64(m)}, nil
}

// bounds returns the interval of a cell released n times.
func (w wilson) bounds(n int64) (lo, hi float64) {
	z, mf := w.z, w.m
	T := float64(n) / mf
	center := (T + z*z/(2*mf)) / (1 + z*z/mf)
	half := z / (1 + z*z/mf) * math.Sqrt(T*(1-T)/mf+z*z/(4*mf*mf))
	toT := func(p float64) float64 { return min(max((w.q*p-1)/(w.gamma-1), 0), 1) }
	return toT(center - half), toT(center + half)
}

// BootstrapOptions tunes BootstrapInterval. The zero value gives defaults.
type BootstrapOptions struct {
	Replicates int       // number of bootstrap releases; default 200
	Level      float64   // nominal coverage in (0, 1); default 0.95
	EM         EMOptions // for MethodMLE
}

// BootstrapInterval returns parametric-bootstrap percentile intervals for
// the Projected or MLE estimate (which are non-linear, so no closed-form
// variance applies; Efron and Tibshirani, "An Introduction to the
// Bootstrap", 1993, §6.5 and ch. 13). It fits x̂ = method(c), then
// Replicates times draws m rows from the PRAM model at x̂,
//
//	P(row = g) = (A x̂)_g = ((γ − 1)/q)·x̂_g + 1/q,
//
// (a mixture: with probability (γ − 1)/q a draw from x̂, else a uniform
// value of G), re-estimates with the same method, and takes the
// (1 − level)/2 and (1 + level)/2 quantiles of each cell's replicates
// (linear interpolation between order statistics). Drawing rows i.i.d.
// mimics sampling with replacement, which has at least the variance of the
// real sample drawn without replacement, so the intervals err wide.
//
// Unobserved cells are exchangeable, so the bootstrap works on relabelled
// cells: the L observed cells are 0 … L − 1 and the others L … K − 1 (A is
// invariant under relabelling); the interval for the unobserved cells is
// that of cell L. Cost: Replicates × (m draws + one estimate), memory
// O(Replicates × L).
func BootstrapInterval(r *rand.Rand, method Method, c Counts, gamma float64, opts BootstrapOptions) (Interval, error) {
	if r == nil {
		return Interval{}, fmt.Errorf("estimate.BootstrapInterval: nil random source")
	}
	if method != MethodProjected && method != MethodMLE {
		return Interval{}, fmt.Errorf("estimate.BootstrapInterval: method %v: want projected or mle (use InverseInterval for inverse)", method)
	}
	if opts.Replicates == 0 {
		opts.Replicates = 200
	}
	if opts.Level == 0 {
		opts.Level = 0.95
	}
	if opts.Replicates < 2 {
		return Interval{}, fmt.Errorf("estimate.BootstrapInterval: need ≥ 2 replicates, got %d", opts.Replicates)
	}
	if err := checkLevel(opts.Level); err != nil {
		return Interval{}, fmt.Errorf("estimate.BootstrapInterval: %w", err)
	}
	m, err := c.validate()
	if err != nil {
		return Interval{}, fmt.Errorf("estimate.BootstrapInterval: %w", err)
	}
	est, err := Run(method, c, gamma, opts.EM)
	if err != nil {
		return Interval{}, fmt.Errorf("estimate.BootstrapInterval: %w", err)
	}
	L := len(est.Index)
	unobserved := est.Unlisted()
	// Categories of the model draw: the L observed cells, then the
	// unobserved block as one category (a uniform cell of it is chosen next).
	weights := append(slices.Clone(est.Value), est.Rest*float64(unobserved))
	table, err := newAlias(weights)
	if err != nil {
		return Interval{}, fmt.Errorf("estimate.BootstrapInterval: %w", err)
	}
	q := gamma + float64(c.K-1)
	fromModel := newBernoulli((gamma - 1) / q)

	cells := L
	if unobserved > 0 {
		cells++ // cell L stands for the unobserved ones
	}
	reps := make([][]float64, cells)
	for i := range reps {
		reps[i] = make([]float64, opts.Replicates)
	}
	bs := &bootstrapDraw{table: table, fromModel: fromModel, K: c.K, L: L, unobserved: unobserved,
		listed: make([]int64, L), extra: make(map[uint64]int64)}
	for b := range opts.Replicates {
		rc := bs.counts(r, m)
		rv, err := Run(method, rc, gamma, opts.EM)
		if err != nil {
			return Interval{}, fmt.Errorf("estimate.BootstrapInterval: replicate %d: %w", b, err)
		}
		for i := range cells {
			reps[i][b] = rv.At(uint64(i))
		}
	}
	alpha := 1 - opts.Level
	out := Interval{Level: opts.Level, Index: slices.Clone(est.Index), Lo: make([]float64, L), Hi: make([]float64, L)}
	for i, v := range reps {
		slices.Sort(v)
		lo, hi := quantileSorted(v, alpha/2), quantileSorted(v, 1-alpha/2)
		if i < L {
			out.Lo[i], out.Hi[i] = lo, hi
		} else {
			out.RestLo, out.RestHi = lo, hi
		}
	}
	if unobserved == 0 {
		out.RestLo, out.RestHi = 0, 0
	}
	return out, nil
}

// quantileSorted is the p-quantile of sorted values by linear
// interpolation between order statistics (Hyndman–Fan type 7).
func quantileSorted(v []float64, p float64) float64 {
	h := p * float64(len(v)-1)
	i := int(math.Floor(h))
	if i >= len(v)-1 {
		return v[len(v)-1]
	}
	return v[i] + (h-float64(i))*(v[i+1]-v[i])
}

// alias is Walker's alias table (Vose's construction, IEEE TSE 17(9),
// 1991) for O(1) draws from a finite distribution.
type alias struct {
	prob  []float64
	alias []int
}

func newAlias(w []float64) (alias, error) {
	var sum float64
	for i, x := range w {
		if x < 0 || math.IsNaN(x) || math.IsInf(x, 0) {
			return alias{}, fmt.Errorf("weight %v at %d", x, i)
		}
		sum += x
	}
	if !(sum > 0) {
		return alias{}, fmt.Errorf("weights sum to %v", sum)
	}
	n := len(w)
	a := alias{prob: make([]float64, n), alias: make([]int, n)}
	scaled := make([]float64, n)
	var small, large []int
	for i, x := range w {
		scaled[i] = x * float64(n) / sum
		if scaled[i] < 1 {
			small = append(small, i)
		} else {
			large = append(large, i)
		}
	}
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		a.prob[s], a.alias[s] = scaled[s], l
		scaled[l] -= 1 - scaled[s]
		if scaled[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	for _, i := range append(small, large...) {
		a.prob[i], a.alias[i] = 1, i // rounding leftovers: keep themselves
	}
	return a, nil
}

func (a alias) draw(r *rand.Rand) int {
	i := int(r.Uint64N(uint64(len(a.prob))))
	if r.Float64() < a.prob[i] {
		return i
	}
	return a.alias[i]
}

// bernoulli draws an event of probability p ∈ [0, 1] by comparing a
// uniform 128-bit integer with ⌊p·2^128⌋, so tiny p (down to 2^−75, as
// (γ − 1)/q at K near 2^62) keep their full float64 relative precision,
// which a comparison with rand.Float64 (53-bit absolute grid) would lose.
type bernoulli struct{ hi, lo uint64 }

func newBernoulli(p float64) bernoulli {
	if p >= 1 {
		return bernoulli{math.MaxUint64, math.MaxUint64}
	}
	x := math.Ldexp(p, 64) // exact: scaling by a power of two
	hi := math.Floor(x)
	lo := math.Ldexp(x-hi, 64) // the fractional part of a float64 is exact
	return bernoulli{uint64(hi), uint64(lo)}
}

func (b bernoulli) draw(r *rand.Rand) bool {
	h := r.Uint64()
	if h != b.hi {
		return h < b.hi
	}
	return r.Uint64() < b.lo
}

// bootstrapDraw draws the counts of one bootstrap replicate: m rows from
// the PRAM model at the fitted estimate, the unobserved cells relabelled
// L … K − 1 (see BootstrapInterval).
type bootstrapDraw struct {
	table      alias
	fromModel  bernoulli
	K          uint64
	L          int
	unobserved uint64
	listed     []int64          // counts of the observed cells
	extra      map[uint64]int64 // counts of the others, by label
}

func (d *bootstrapDraw) counts(r *rand.Rand, m int64) Counts {
	clear(d.listed)
	clear(d.extra)
	for range m {
		var label uint64
		if d.fromModel.draw(r) {
			if k := d.table.draw(r); k < d.L {
				label = uint64(k)
			} else {
				label = uint64(d.L) + r.Uint64N(d.unobserved)
			}
		} else {
			label = r.Uint64N(d.K)
		}
		if label < uint64(d.L) {
			d.listed[label]++
		} else {
			d.extra[label]++
		}
	}
	rc := Counts{K: d.K}
	for i, n := range d.listed {
		if n > 0 {
			rc.Index = append(rc.Index, uint64(i))
			rc.Count = append(rc.Count, n)
		}
	}
	start := len(rc.Index)
	for g := range d.extra {
		rc.Index = append(rc.Index, g)
	}
	slices.Sort(rc.Index[start:])
	for _, g := range rc.Index[start:] {
		rc.Count = append(rc.Count, d.extra[g])
	}
	return rc
}
