package estimate

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/pramkit/pramkit/pkg/rng"
)

func TestHistogramOfCountsItsCells(t *testing.T) {
	c := Counts{K: 20, Index: []uint64{1, 4, 6, 7, 9, 12, 19}, Count: []int64{1, 5, 3, 1, 5, 1, 1}}
	h := HistogramOf(c)
	if !slices.Equal(h.Count, []int64{5, 3, 1}) || !slices.Equal(h.Cells, []uint64{2, 1, 4}) {
		t.Fatalf("histogram %v × %v, want [5 3 1] × [2 1 4]", h.Count, h.Cells)
	}
	if h.M() != c.M() || h.Observed() != 7 {
		t.Errorf("m = %d, observed = %d; want %d, 7", h.M(), h.Observed(), c.M())
	}
	for _, bad := range []Histogram{
		{K: 3, Count: []int64{2}, Cells: []uint64{4}},             // more cells than K
		{K: 9, Count: []int64{1, 2}, Cells: []uint64{1, 1}},       // not decreasing
		{K: 9, Count: []int64{2, 0}, Cells: []uint64{1, 1}},       // a zero count
		{K: 9, Count: []int64{2}, Cells: []uint64{0}},             // no cells
		{K: 9, Count: []int64{math.MaxInt64}, Cells: []uint64{2}}, // m overflows
		{K: 9},
	} {
		if _, err := bad.validate(); err == nil {
			t.Errorf("%+v: accepted", bad)
		}
		if _, err := InverseRule(bad, 2); err == nil {
			t.Errorf("InverseRule(%+v): accepted", bad)
		}
	}
	if r := (Rule{Count: []int64{4, 2}, Value: []float64{0.5, 0.25}, Rest: 0.1}); r.At(2) != 0.25 || r.At(0) != 0.1 || !math.IsNaN(r.At(3)) {
		t.Errorf("Rule.At: %v %v %v, want 0.25 0.1 NaN", r.At(2), r.At(0), r.At(3))
	}
}

// The Rules, computed from the Histogram alone, give every cell what the
// estimators computed cell by cell give: Inverse and the Wilson intervals
// bit for bit, Projected up to the order of a sum, and LoglikGap the
// Frank–Wolfe gap of an independent computation (mle_test.go), for the
// exact MLE and for EM stopped early.
func TestRulesAreTheCellByCellEstimates(t *testing.T) {
	r := rng.NewSeeded(43)
	for _, tt := range []struct {
		K        uint64
		observed int
		gamma    float64
	}{{5, 3, 2.5}, {12, 12, 4}, {300, 25, 30}, {300, 60, 1.2}, {1 << 40, 200, 1e9}} {
		name := fmt.Sprintf("K=%d observed≈%d γ=%v", tt.K, tt.observed, tt.gamma)
		c := randomCounts(t, r, tt.K, tt.observed)
		h := HistogramOf(c)

		inv, _ := Inverse(c, tt.gamma)
		ir, err := InverseRule(h, tt.gamma)
		if err != nil {
			t.Fatal(err)
		}
		if got := ir.Vector(c); !slices.Equal(got.Value, inv.Value) || got.Rest != inv.Rest {
			t.Errorf("%s: InverseRule differs from Inverse", name)
		}

		iv, _ := InverseInterval(c, tt.gamma, 0.9)
		lo, hi, err := WilsonRule(h, tt.gamma, 0.9)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(lo.Vector(c).Value, iv.Lo) || !slices.Equal(hi.Vector(c).Value, iv.Hi) || lo.Rest != iv.RestLo || hi.Rest != iv.RestHi {
			t.Errorf("%s: WilsonRule differs from InverseInterval", name)
		}

		proj, _ := Projected(c, tt.gamma)
		pr, err := ProjectedRule(h, tt.gamma)
		if err != nil {
			t.Fatal(err)
		}
		assertClose(t, name+" projected", pr.Vector(c).Value, proj.Value, 1e-13)
		if math.Abs(pr.Rest-proj.Rest) > 1e-13 {
			t.Errorf("%s: projected rest %v, want %v", name, pr.Rest, proj.Rest)
		}

		mr, ll, err := MLERule(h, tt.gamma)
		if err != nil {
			t.Fatal(err)
		}
		x := mr.Vector(c)
		if gap, want := LoglikGap(h, tt.gamma, mr), frankWolfeGap(c, tt.gamma, x); math.Abs(gap-max(want, 0)) > 1e-9*float64(c.M()) || gap > 1e-9*float64(c.M()) {
			t.Errorf("%s: the exact MLE's gap %v (independently %v), want 0", name, gap, want)
		}
		var wantLL float64
		q := tt.gamma + float64(c.K-1)
		for i, n := range c.Count {
			wantLL += float64(n) * math.Log(((tt.gamma-1)*x.Value[i]+1)/q)
		}
		if math.Abs(ll-wantLL) > 1e-9*math.Abs(wantLL) {
			t.Errorf("%s: log-likelihood %v, want %v", name, ll, wantLL)
		}

		em, _ := MLE(c, tt.gamma, EMOptions{Iterative: true, MaxIter: 3, Tol: 1e-300})
		if gap, want := LoglikGap(h, tt.gamma, RuleOf(h, c, em.Estimate)), frankWolfeGap(c, tt.gamma, em.Estimate); math.Abs(gap-want) > 1e-9*max(1, want) {
			t.Errorf("%s: EM's gap %v, want %v", name, gap, want)
		}
	}
}
