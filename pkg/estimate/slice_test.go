package estimate

import (
	"math"
	"testing"

	"github.com/pramkit/pramkit/pkg/rng"
)

func TestProjectSlice(t *testing.T) {
	cases := []struct{ x, want []float64 }{
		{[]float64{0.2, 0.3, 0.5}, []float64{0.2, 0.3, 0.5}},
		{[]float64{1, 1}, []float64{0.5, 0.5}},
		{[]float64{2, 0}, []float64{1, 0}},
		{[]float64{0.5, 0.4, -0.3}, []float64{0.55, 0.45, 0}},
		{[]float64{-1, -1, -1, -1}, []float64{0.25, 0.25, 0.25, 0.25}},
		{[]float64{3}, []float64{1}},
	}
	for _, c := range cases {
		got, err := ProjectSlice(c.x)
		if err != nil {
			t.Fatal(err)
		}
		if d, _ := L2Slice(got, c.want); d > 1e-15 {
			t.Errorf("ProjectSlice(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	for _, bad := range [][]float64{nil, {math.NaN(), 1}, {math.Inf(1)}} {
		if _, err := ProjectSlice(bad); err == nil {
			t.Errorf("ProjectSlice(%v) accepted", bad)
		}
	}
}

func TestProjectSliceIsTheClosestDistribution(t *testing.T) {
	// p is the projection of x iff p is in the simplex and ⟨x − p, e_i − p⟩
	// ≤ 0 for every vertex e_i (variational inequality; by convexity the
	// vertices suffice).
	g := rng.NewSeeded(4)
	for trial := range 2000 {
		x := make([]float64, 1+trial%9)
		for i := range x {
			x[i] = 3*g.Float64() - 1
		}
		p, _ := ProjectSlice(x)
		var sum, inner float64
		for i := range p {
			if p[i] < 0 {
				t.Fatalf("negative entry: %v → %v", x, p)
			}
			sum += p[i]
			inner += (x[i] - p[i]) * p[i]
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Fatalf("sum %v: %v → %v", sum, x, p)
		}
		for i := range p {
			if v := (x[i] - p[i]) - inner; v > 1e-12 {
				t.Fatalf("not the projection (vertex %d: %g > 0): %v → %v", i, v, x, p)
			}
		}
	}
	if _, err := L2Slice([]float64{1}, []float64{1, 2}); err == nil {
		t.Error("L2Slice accepted different lengths")
	}
}
