package estimate

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/pramkit/pramkit/pkg/pram"
)

// Vector is a real vector over the joint alphabet [0, K) in sparse form:
// Value[i] at the listed cell Index[i] (strictly increasing) and the same
// value Rest at each of the K − len(Index) unlisted cells. Estimates list
// the observed cells; Rest is the common estimate of the never-observed ones.
type Vector struct {
	K     uint64
	Index []uint64
	Value []float64
	Rest  float64
}

// MaxDense is the largest K that Dense expands (2^27 cells, 1 GiB).
const MaxDense = 1 << 27

// FromDense returns the Vector listing every cell of x (K = len(x)).
func FromDense(x []float64) Vector {
	v := Vector{K: uint64(len(x)), Index: make([]uint64, len(x)), Value: slices.Clone(x)}
	for g := range v.Index {
		v.Index[g] = uint64(g)
	}
	return v
}

// Dense returns all K values; it refuses K > MaxDense.
func (v Vector) Dense() ([]float64, error) {
	if v.K > MaxDense {
		return nil, fmt.Errorf("estimate.Vector.Dense: K = %d exceeds %d cells", v.K, MaxDense)
	}
	x := make([]float64, v.K)
	for g := range x {
		x[g] = v.Rest
	}
	for i, g := range v.Index {
		x[g] = v.Value[i]
	}
	return x, nil
}

// At returns the value of cell g (binary search, O(log listed)).
func (v Vector) At(g uint64) float64 {
	if i, ok := slices.BinarySearch(v.Index, g); ok {
		return v.Value[i]
	}
	return v.Rest
}

// Unlisted returns K − len(Index), the number of cells holding Rest.
func (v Vector) Unlisted() uint64 { return v.K - uint64(len(v.Index)) }

// Sum returns Σ_g v(g) (Neumaier-compensated over the listed cells).
func (v Vector) Sum() float64 {
	var s, comp float64
	add := func(x float64) {
		t := s + x
		if math.Abs(s) >= math.Abs(x) {
			comp += (s - t) + x
		} else {
			comp += (x - t) + s
		}
		s = t
	}
	for _, x := range v.Value {
		add(x)
	}
	add(float64(v.Unlisted()) * v.Rest)
	return s + comp
}

// validate checks the invariants documented on Vector.
func (v Vector) validate() error {
	if v.K < 1 || v.K > pram.MaxJointSize {
		return fmt.Errorf("alphabet size K must be in [1, 2^62], got %d", v.K)
	}
	if len(v.Index) != len(v.Value) {
		return fmt.Errorf("%d indexes but %d values", len(v.Index), len(v.Value))
	}
	for i, g := range v.Index {
		if g >= v.K || (i > 0 && g <= v.Index[i-1]) {
			return fmt.Errorf("index %d at position %d outside [0, %d) or out of order", g, i, v.K)
		}
		if math.IsNaN(v.Value[i]) || math.IsInf(v.Value[i], 0) {
			return fmt.Errorf("value %v at cell %d", v.Value[i], g)
		}
	}
	if math.IsNaN(v.Rest) || math.IsInf(v.Rest, 0) {
		return fmt.Errorf("rest value %v", v.Rest)
	}
	return nil
}

// L2 returns the ℓ2 distance ‖est − truth‖₂ over all K cells, the paper's
// utility measure (§II-C): sqrt(Σ_g (est(g) − truth(g))²). Cells listed in
// neither vector contribute (est.Rest − truth.Rest)² each.
func L2(est, truth Vector) (float64, error) {
	if err := est.validate(); err != nil {
		return 0, fmt.Errorf("estimate.L2: estimate: %w", err)
	}
	if err := truth.validate(); err != nil {
		return 0, fmt.Errorf("estimate.L2: truth: %w", err)
	}
	if est.K != truth.K {
		return 0, fmt.Errorf("estimate.L2: estimate has K = %d, truth K = %d", est.K, truth.K)
	}
	var ss float64
	union := uint64(0)
	i, j := 0, 0
	for i < len(est.Index) || j < len(truth.Index) {
		var d float64
		switch {
		case j == len(truth.Index) || (i < len(est.Index) && est.Index[i] < truth.Index[j]):
			d = est.Value[i] - truth.Rest
			i++
		case i == len(est.Index) || truth.Index[j] < est.Index[i]:
			d = est.Rest - truth.Value[j]
			j++
		default:
			d = est.Value[i] - truth.Value[j]
			i++
			j++
		}
		ss += d * d
		union++
	}
	d := est.Rest - truth.Rest
	ss += float64(est.K-union) * d * d
	return math.Sqrt(ss), nil
}

// Marginal sums a joint vector over the components not in keep:
//
//	v_keep(h) = Σ_{g : g restricted to keep = h} v(g),
//
// for the joint alphabet d (d.Size() = v.K) and component numbers keep
// (strictly increasing, 0-based). It returns the marginal vector over the
// sub-domain of the kept components, and that sub-domain. Sparse input stays
// sparse: each of the K/K_keep joint cells over a marginal cell h holds
// v.Rest unless listed, so v_keep(h) = v.Rest·K/K_keep + Σ_{listed g → h}
// (v(g) − v.Rest), and unlisted marginal cells get v.Rest·K/K_keep.
func Marginal(v Vector, d pram.Domain, keep []int) (Vector, pram.Domain, error) {
	if err := v.validate(); err != nil {
		return Vector{}, pram.Domain{}, fmt.Errorf("estimate.Marginal: %w", err)
	}
	if d.Size() != v.K {
		return Vector{}, pram.Domain{}, fmt.Errorf("estimate.Marginal: domain has K = %d, vector %d", d.Size(), v.K)
	}
	if len(keep) == 0 {
		return Vector{}, pram.Domain{}, fmt.Errorf("estimate.Marginal: no components to keep")
	}
	ks := d.Alphabets()
	sub := make([]uint32, len(keep))
	for i, j := range keep {
		if j < 0 || j >= len(ks) || (i > 0 && j <= keep[i-1]) {
			return Vector{}, pram.Domain{}, fmt.Errorf("estimate.Marginal: keep %v must be strictly increasing component numbers in [0, %d)", keep, len(ks))
		}
		sub[i] = ks[j]
	}
	sd, err := pram.NewDomain(sub)
	if err != nil {
		return Vector{}, pram.Domain{}, fmt.Errorf("estimate.Marginal: %w", err)
	}
	mult := float64(v.K / sd.Size()) // joint cells per marginal cell
	type term struct {
		h uint64
		x float64
	}
	terms := make([]term, len(v.Index))
	x := make([]uint32, len(ks))
	y := make([]uint32, len(keep))
	for i, g := range v.Index {
		if err := d.Decode(g, x); err != nil {
			return Vector{}, pram.Domain{}, fmt.Errorf("estimate.Marginal: %w", err)
		}
		for a, j := range keep {
			y[a] = x[j]
		}
		h, _ := sd.Encode(y) // components come from d, so they are in range
		terms[i] = term{h, v.Value[i] - v.Rest}
	}
	slices.SortFunc(terms, func(a, b term) int { return cmp.Compare(a.h, b.h) })
	out := Vector{K: sd.Size(), Rest: v.Rest * mult}
	for _, t := range terms {
		if n := len(out.Index); n > 0 && out.Index[n-1] == t.h {
			out.Value[n-1] += t.x
			continue
		}
		out.Index = append(out.Index, t.h)
		out.Value = append(out.Value, out.Rest+t.x)
	}
	return out, sd, nil
}
