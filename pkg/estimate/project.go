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
	type item struct{ v, w float64 }
	items := make([]item, 0, len(v.Value)+1)
	for _, x := range v.Value {
		items = append(items, item{x, 1})
	}
	if r := v.Unlisted(); r > 0 {
		items = append(items, item{v.Rest, float64(r)})
	}
	slices.SortFunc(items, func(a, b item) int {
		switch {
		case a.v > b.v:
			return -1
		case a.v < b.v:
			return 1
		}
		return 0
	})
	// v_k > τ_k holds exactly for the items above the root τ (they are a
	// prefix of the sorted order), so the scan stops at the first failure.
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
	out := Vector{K: v.K, Index: append([]uint64(nil), v.Index...), Value: make([]float64, len(v.Value)), Rest: max(v.Rest-tau, 0)}
	for i, x := range v.Value {
		out.Value[i] = max(x-tau, 0)
	}
	return out, nil
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
