package estimate

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Histogram is a release's counts up to a relabelling of the cells:
// Cells[i] of the K cells were each released Count[i] times (Count
// strictly decreasing, each ≥ 1), and the other K − ΣCells never.
//
// Why it is enough: A is invariant under relabelling G, so the Inverse,
// Projected and exact MLE estimates and the Wilson intervals give cells
// with equal counts equal values. Each is a Rule, a function of the
// count, computed from the Histogram alone. A release of m rows has at
// most √(2m) distinct counts (1 + 2 + … + d ≤ m), so an estimate of any
// number of observed cells needs memory O(√m) beside its counts, which
// can then stream from disk (estimate's spilled tally).
type Histogram struct {
	K     uint64
	Count []int64  // distinct counts, strictly decreasing, ≥ 1
	Cells []uint64 // Cells[i] cells have count Count[i]
}

// HistogramBuilder collects a Histogram from the observed counts one cell
// at a time, in any order.
type HistogramBuilder struct {
	cells map[int64]uint64
}

// Add records one observed cell with count n ≥ 1.
func (b *HistogramBuilder) Add(n int64) {
	if b.cells == nil {
		b.cells = make(map[int64]uint64)
	}
	b.cells[n]++
}

// Histogram returns the collected Histogram over K cells, checked.
func (b *HistogramBuilder) Histogram(K uint64) (Histogram, error) {
	h := Histogram{K: K}
	for n := range b.cells {
		h.Count = append(h.Count, n)
	}
	slices.SortFunc(h.Count, func(a, b int64) int { return cmp.Compare(b, a) })
	h.Cells = make([]uint64, len(h.Count))
	for i, n := range h.Count {
		h.Cells[i] = b.cells[n]
	}
	if _, err := h.validate(); err != nil {
		return Histogram{}, fmt.Errorf("estimate.HistogramBuilder: %w", err)
	}
	return h, nil
}

// HistogramOf returns the Histogram of c (which must be valid).
func HistogramOf(c Counts) Histogram {
	var b HistogramBuilder
	for _, n := range c.Count {
		b.Add(n)
	}
	h, _ := b.Histogram(c.K)
	return h
}

// M returns m, the number of released rows.
func (h Histogram) M() int64 {
	var m int64
	for i, n := range h.Count {
		m += n * int64(h.Cells[i])
	}
	return m
}

// Observed returns the number of observed cells, ΣCells.
func (h Histogram) Observed() uint64 {
	var L uint64
	for _, c := range h.Cells {
		L += c
	}
	return L
}

// validate checks the invariants documented on Histogram and returns m.
func (h Histogram) validate() (int64, error) {
	if err := checkJointSize(h.K); err != nil {
		return 0, err
	}
	if len(h.Count) != len(h.Cells) {
		return 0, fmt.Errorf("%d counts but %d cell numbers", len(h.Count), len(h.Cells))
	}
	var m int64
	var L uint64
	for i, n := range h.Count {
		if n < 1 || (i > 0 && n >= h.Count[i-1]) {
			return 0, fmt.Errorf("counts must be ≥ 1 and strictly decreasing, got %d at position %d", n, i)
		}
		if h.Cells[i] < 1 || h.Cells[i] > h.K-L {
			return 0, fmt.Errorf("%d cells with count %d: more cells than K = %d, or none", h.Cells[i], n, h.K)
		}
		L += h.Cells[i]
		hi, lo := mulCells(n, h.Cells[i])
		if hi || lo > math.MaxInt64-m {
			return 0, fmt.Errorf("more than 2^63 released rows")
		}
		m += lo
	}
	if m < 1 {
		return 0, fmt.Errorf("no released rows")
	}
	return m, nil
}

// mulCells returns n·c and whether it overflows an int64.
func mulCells(n int64, c uint64) (bool, int64) {
	if c != 0 && uint64(n) > math.MaxInt64/c {
		return true, 0
	}
	return false, n * int64(c)
}

// Rule is a value that depends on a cell only through its count: Value[i]
// for the cells released Count[i] times (a Histogram's Count), Rest for
// the never-released ones.
type Rule struct {
	Count []int64
	Value []float64
	Rest  float64
}

// newRule returns a Rule over h's counts with value f(n) for each count n
// and rest for count 0.
func newRule(h Histogram, rest float64, f func(n int64) float64) Rule {
	r := Rule{Count: h.Count, Value: make([]float64, len(h.Count)), Rest: rest}
	for i, n := range h.Count {
		r.Value[i] = f(n)
	}
	return r
}

// At returns the value of a cell released n times; NaN for a count that
// is not the Rule's.
func (r Rule) At(n int64) float64 {
	if n == 0 {
		return r.Rest
	}
	i, ok := slices.BinarySearchFunc(r.Count, n, func(a, b int64) int { return cmp.Compare(b, a) })
	if !ok {
		return math.NaN()
	}
	return r.Value[i]
}

// Vector returns the Rule's values at c's cells (sharing c.Index).
func (r Rule) Vector(c Counts) Vector {
	v := Vector{K: c.K, Index: c.Index, Value: make([]float64, len(c.Index)), Rest: r.Rest}
	for i, n := range c.Count {
		v.Value[i] = r.At(n)
	}
	return v
}

// RuleOf returns the Rule of a Vector x over c's cells that gives equal
// values to cells with equal counts (as every estimator here does, EM
// included): for each count, the value of its first cell in c.
func RuleOf(h Histogram, c Counts, x Vector) Rule {
	first := make(map[int64]float64, len(h.Count))
	for i, n := range c.Count {
		if _, ok := first[n]; !ok {
			first[n] = x.At(c.Index[i])
		}
	}
	return newRule(h, x.Rest, func(n int64) float64 { return first[n] })
}

// InverseRule is Inverse as a Rule: T̂ = (q·n/m − 1)/(γ − 1) for a cell
// released n times, q = γ + K − 1.
func InverseRule(h Histogram, gamma float64) (Rule, error) {
	m, err := h.validate()
	if err != nil {
		return Rule{}, fmt.Errorf("estimate.InverseRule: %w", err)
	}
	if err := checkGamma(gamma); err != nil {
		return Rule{}, fmt.Errorf("estimate.InverseRule: %w", err)
	}
	q := gamma + float64(h.K-1)
	return newRule(h, -1/(gamma-1), func(n int64) float64 { return inverseAt(q, gamma, n, m) }), nil
}

// inverseAt is T̂ of a cell released n times of m: (q·n/m − 1)/(γ − 1).
func inverseAt(q, gamma float64, n, m int64) float64 {
	return (q*float64(n)/float64(m) - 1) / (gamma - 1)
}

// ProjectedRule is Projected as a Rule: the Inverse rule shifted down by
// the simplex projection's τ and clipped at 0 (see Project), each count's
// value weighted by its number of cells.
func ProjectedRule(h Histogram, gamma float64) (Rule, error) {
	inv, err := InverseRule(h, gamma)
	if err != nil {
		return Rule{}, fmt.Errorf("estimate.ProjectedRule: %w", err)
	}
	// Inverse increases with the count: h's order is decreasing already,
	// and the unobserved cells (count 0) come last.
	items := make([]weighted, 0, len(h.Count)+1)
	for i, v := range inv.Value {
		items = append(items, weighted{v, float64(h.Cells[i])})
	}
	if r := h.K - h.Observed(); r > 0 {
		items = append(items, weighted{inv.Rest, float64(r)})
	}
	tau := simplexShift(items)
	out := Rule{Count: h.Count, Value: make([]float64, len(h.Count)), Rest: max(inv.Rest-tau, 0)}
	for i, v := range inv.Value {
		out.Value[i] = max(v-tau, 0)
	}
	return out, nil
}

// MLERule is the exact MLE (see MLE) as a Rule, with the log-likelihood
// ℓ(x̂) of the release at it. The scan for the support runs down h's
// counts a block of equal counts at a time: k·n − S_k is the same for
// every cell of a block (each adds n to both), so the condition for the
// k-th largest count is the block's, and a block is in or out whole.
func MLERule(h Histogram, gamma float64) (Rule, float64, error) {
	if _, err := h.validate(); err != nil {
		return Rule{}, 0, fmt.Errorf("estimate.MLERule: %w", err)
	}
	if err := checkGamma(gamma); err != nil {
		return Rule{}, 0, fmt.Errorf("estimate.MLERule: %w", err)
	}
	beta := 1 / (gamma - 1)
	var s, sk, i, k, least int64
	for b, n := range h.Count {
		s += n * int64(h.Cells[b])
		i += int64(h.Cells[b])
		if !(float64(n)+beta*excess(i, n, s) > 0) {
			break
		}
		k, sk, least = i, s, n
	}
	x := newRule(h, 0, func(n int64) float64 {
		if k == 0 || n < least {
			return 0 // outside the support
		}
		return (float64(n) + beta*excess(k, n, sk)) / float64(sk)
	})
	var ll float64
	q := gamma + float64(h.K-1)
	for b, n := range h.Count {
		ll += float64(n) * float64(h.Cells[b]) * math.Log(((gamma-1)*x.Value[b]+1)/q)
	}
	return x, ll, nil
}

// LoglikGap bounds how far the log-likelihood ℓ(x) = Σ_j Count(j)·ln (A x)_j
// of a distribution x (a Rule over h) is below its maximum over the
// simplex, by the Frank–Wolfe duality gap of the concave ℓ (M. Jaggi,
// "Revisiting Frank–Wolfe", ICML 2013, §2):
//
//	ℓ* − ℓ(x) ≤ max_g ∂ℓ/∂x_g − ⟨∇ℓ(x), x⟩ = m·(max_g r_g − 1),
//	r_g = Σ_j T(j)·A[j, g]/(A x)_j = ((γ − 1)·T(g)/(A x)_g + ρ)/q,
//	ρ = Σ_j T(j)/(A x)_j,   (A x)_j = ((γ − 1)·x_j + 1)/q,
//
// since ⟨r, x⟩ = Σ_j T(j) = 1; r is EM's multiplier (x_g ← x_g·r_g), so
// the gap is 0 exactly at EM's fixed points that are maxima. A never-
// observed g has T(g) = 0 and r_g = ρ/q. O(distinct counts).
func LoglikGap(h Histogram, gamma float64, x Rule) float64 {
	m := float64(h.M())
	q := gamma + float64(h.K-1)
	ratio := func(b int) float64 { // T(j)/(A x)_j of a cell of block b
		return float64(h.Count[b]) / m / (((gamma-1)*x.Value[b] + 1) / q)
	}
	var rho float64
	for b := range h.Count {
		rho += float64(h.Cells[b]) * ratio(b)
	}
	maxR := 0.0
	if h.Observed() < h.K {
		maxR = rho / q
	}
	for b := range h.Count {
		maxR = max(maxR, ((gamma-1)*ratio(b)+rho)/q)
	}
	return max(m*(maxR-1), 0)
}

// WilsonRule is InverseInterval as two Rules, the lower and upper bounds
// of the interval of a cell by its count.
func WilsonRule(h Histogram, gamma, level float64) (lo, hi Rule, err error) {
	m, err := h.validate()
	if err != nil {
		return Rule{}, Rule{}, fmt.Errorf("estimate.WilsonRule: %w", err)
	}
	w, err := newWilson(h.K, m, gamma, level)
	if err != nil {
		return Rule{}, Rule{}, fmt.Errorf("estimate.WilsonRule: %w", err)
	}
	lo = Rule{Count: h.Count, Value: make([]float64, len(h.Count))}
	hi = Rule{Count: h.Count, Value: make([]float64, len(h.Count))}
	for i, n := range h.Count {
		lo.Value[i], hi.Value[i] = w.bounds(n)
	}
	lo.Rest, hi.Rest = w.bounds(0)
	return lo, hi, nil
}
