package estimate

import (
	"fmt"
	"slices"
)

// Project returns the Euclidean projection of v onto the probability
// simplex {x : x ≥ 0, Σ_g x(g) = 1} over all K cells:
//
//	x(g) = max(v(g) − τ, 0),   τ the unique root of Σ_g max(v(g) − τ, 0) = 1,
//
// found by the sort-based algorithm (Held, Wolfe, Crowder 1974; Duchi et
// al., "Efficient Projections onto the ℓ1-Ball", ICML 2008, Fig. 1): sort
// the values decreasingly, τ_k = (Σ_{i≤k} v_i − 1)/k, and τ = τ_ρ for the
// largest ρ with v_ρ > τ_ρ. The unlisted cells enter as one item of
// weight K − len(Index) (equal values are all in or all out), so the cost is
// O(L log L) for L listed cells, whatever K is.
func Project(v Vector) (Vector, error) {
	if err := v.validate(); err != nil {
		return Vector{}, fmt.Errorf("estimate.Project: %w", err)
	}
	items := make([]weighted, 0, len(v.Value)+1)
	for _, x := range v.Value {
		items = append(items, weighted{x, 1})
	}
	if r := v.Unlisted(); r > 0 {
		items = append(items, weighted{v.Rest, float64(r)})
	}
	slices.SortFunc(items, func(a, b weighted) int {
		switch {
		case a.v > b.v:
			return -1
		case a.v < b.v:
			return 1
		}
		return 0
	})
	// Equal values as one item of their total weight: the sum then has
	// one term a distinct value, as ProjectedRule's (one a distinct
	// count), and the two give the same τ to the bit. The sum cancels to
	// within a few digits of the largest values when K ≫ m, so the order
	// of its terms shows in the estimate's last digits.
	merged := items[:0]
	for _, it := range items {
		if n := len(merged); n > 0 && merged[n-1].v == it.v {
			merged[n-1].w += it.w
			continue
		}
		merged = append(merged, it)
	}
	tau := simplexShift(merged)
	out := Vector{K: v.K, Index: append([]uint64(nil), v.Index...), Value: make([]float64, len(v.Value)), Rest: max(v.Rest-tau, 0)}
	for i, x := range v.Value {
		out.Value[i] = max(x-tau, 0)
	}
	return out, nil
}

// weighted is a value held by w cells.
type weighted struct{ v, w float64 }

// simplexShift returns the projection's root τ for items sorted by
// decreasing value: τ_k = (Σ_{i≤k} w_i·v_i − 1)/Σ_{i≤k} w_i, τ = τ_ρ for
// the last item ρ with v_ρ > τ_ρ (those items are a prefix of the sorted
// order, so the scan stops at the first failure).
func simplexShift(items []weighted) float64 {
	var s, w, tau float64
	for _, it := range items {
		s += it.w * it.v
		w += it.w
		t := (s - 1) / w
		if it.v <= t {
			break
		}
		tau = t
	}
	return tau
}

// Projected returns Project(Inverse(c, gamma)): the paper's estimate
// projected onto the simplex. For the true type t (a point of the simplex)
// ‖Projected − t‖₂ ≤ ‖Inverse − t‖₂ in every release.
func Projected(c Counts, gamma float64) (Vector, error) {
	inv, err := Inverse(c, gamma)
	if err != nil {
		return Vector{}, fmt.Errorf("estimate.Projected: %w", err)
	}
	return Project(inv)
}
