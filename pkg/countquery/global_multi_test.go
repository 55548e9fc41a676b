package countquery

import (
	"math"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/rng"
)

// With one attribute the tensor inversion is GlobalCount's closed form.
func TestGlobalCountMultiOneAttributeIsGlobalCount(t *testing.T) {
	for _, tc := range []struct {
		y, nP int64
		v     int
		p     float64
	}{
		{0, 0, 5, 0.5}, {30, 100, 15, 0.1429}, {100, 100, 2, 1}, {7, 1000, 40, 0.05},
	} {
		want, err := GlobalCount(tc.y, tc.nP, tc.v, tc.p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := GlobalCountMulti([]float64{float64(tc.nP - tc.y), float64(tc.y)}, []int{tc.v}, []float64{tc.p})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("%+v: GlobalCountMulti %v, GlobalCount %v", tc, got, want)
		}
	}
}

// Without randomization (p = 1) the estimate is the observed count of the
// all-true state, exactly.
func TestGlobalCountMultiNoNoiseIsExact(t *testing.T) {
	z := []float64{5, 7, 11, 13, 17, 19, 23, 29}
	got, err := GlobalCountMulti(z, []int{3, 4, 5}, []float64{1, 1, 1})
	if err != nil {
		t.Fatal(err)
	}
	if got != 29 {
		t.Errorf("got %v, want 29", got)
	}
}

// Two attributes randomized independently by anonymize.Randomize: the
// estimate of the count of (s1, s2) among the P rows averages to the truth.
func TestGlobalCountMultiUnbiased(t *testing.T) {
	const runs = 400
	v := []int{4, 3}
	keep := []float64{0.5, 0.3}
	// 1200 P rows: 300 hold (s1, s2) = (2, 1), 300 (2, 0), 300 (0, 1), 300 (1, 2).
	a := make([]uint32, 1200)
	b := make([]uint32, 1200)
	for i := range a {
		switch i / 300 {
		case 0:
			a[i], b[i] = 2, 1
		case 1:
			a[i], b[i] = 2, 0
		case 2:
			a[i], b[i] = 0, 1
		default:
			a[i], b[i] = 1, 2
		}
	}
	r := rng.NewSeeded(77)
	var sum, sumSq float64
	for range runs {
		pa, err := anonymize.Randomize(a, v[0], keep[0], r)
		if err != nil {
			t.Fatal(err)
		}
		pb, err := anonymize.Randomize(b, v[1], keep[1], r)
		if err != nil {
			t.Fatal(err)
		}
		z := make([]float64, 4)
		for i := range pa {
			k := 0
			if pa[i] == 2 {
				k |= 2
			}
			if pb[i] == 1 {
				k |= 1
			}
			z[k]++
		}
		est, err := GlobalCountMulti(z, v, keep)
		if err != nil {
			t.Fatal(err)
		}
		sum += est
		sumSq += est * est
	}
	mean := sum / runs
	// The estimate's sd is taken from the runs (400 draws make the normal
	// approximation of the mean sound).
	sd := math.Sqrt((sumSq - runs*mean*mean) / (runs - 1))
	stattest.AssertMean(t, "two-attribute mechanism A estimate", mean, 300, sd, runs, 1e-6) // false alarm 1e-6
	// A wrong inversion (e.g. q and r swapped) is off by far more than this.
	if sd > 150 {
		t.Errorf("sd %v of the estimate is implausibly large", sd)
	}
}

func TestGlobalCountMultiRejectsBadArguments(t *testing.T) {
	for _, tc := range []struct {
		z []float64
		v []int
		p []float64
	}{
		{[]float64{1, 2}, nil, nil},
		{[]float64{1, 2, 3}, []int{2}, []float64{0.5}},
		{[]float64{1, 2}, []int{2}, []float64{0}},
		{[]float64{1, 2}, []int{2}, []float64{math.NaN()}},
		{[]float64{1, 2}, []int{0}, []float64{0.5}},
		{[]float64{1, -2}, []int{2}, []float64{0.5}},
		{[]float64{1, math.Inf(1)}, []int{2}, []float64{0.5}},
		{[]float64{1, 2}, []int{2, 2}, []float64{0.5}},
	} {
		if _, err := GlobalCountMulti(tc.z, tc.v, tc.p); err == nil {
			t.Errorf("accepted %+v", tc)
		}
	}
}
