package countquery

import (
	"math"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/rng"
)

func TestValueCounts(t *testing.T) {
	got, err := ValueCounts([]uint32{2, 0, 2, 2, 1}, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{1, 1, 3, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ValueCounts = %v, want %v", got, want)
		}
	}
	if _, err := ValueCounts([]uint32{4}, 4); err == nil {
		t.Error("value outside codebook accepted")
	}
	if _, err := ValueCounts(nil, 0); err == nil {
		t.Error("V = 0 accepted")
	}
}

// Xiao and Tao's estimate written out: two groups of 4, P matches 3 and 1
// of their rows, s has counts 2 and 1 → 3·2/4 + 1·1/4 = 1.75.
func TestAnatomyCountHandExample(t *testing.T) {
	got, err := AnatomyCount([]int64{3, 1}, []int64{2, 1}, []int64{4, 4})
	if err != nil {
		t.Fatal(err)
	}
	if got != 1.75 {
		t.Errorf("got %v, want 1.75", got)
	}
	for _, bad := range [][3][]int64{
		{{1}, {1}, {0}},           // empty group
		{{5}, {1}, {4}},           // more matches than rows
		{{1}, {5}, {4}},           // more s than rows
		{{1, 1}, {1}, {4}},        // length mismatch
		{{-1}, {1}, {4}},          // negative
		{{1}, {1, 1}, {4, 4}},     // length mismatch
		{{1, 1}, {1, -1}, {4, 4}}, // negative count
	} {
		if _, err := AnatomyCount(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("accepted %v", bad)
		}
	}
}

// The mechanism A estimate is unbiased: averaged over releases of
// anonymize.Randomize it matches the true count of (P, s).
func TestGlobalCountUnbiased(t *testing.T) {
	const v, keep, runs = 8, 0.3, 300
	// 2000 rows satisfy P: 400 of them hold s = 3, the rest other values.
	s := make([]uint32, 2000)
	for i := range s {
		if i < 400 {
			s[i] = 3
		} else {
			s[i] = uint32(i % 3) // values 0..2
		}
	}
	r := rng.NewSeeded(31)
	var sum float64
	for range runs {
		pub, err := anonymize.Randomize(s, v, keep, r)
		if err != nil {
			t.Fatal(err)
		}
		var y int64
		for _, x := range pub {
			if x == 3 {
				y++
			}
		}
		est, err := GlobalCount(y, int64(len(s)), v, keep)
		if err != nil {
			t.Fatal(err)
		}
		sum += est
	}
	// y is a sum of independent Bernoullis: 400 with p1 = keep + (1−keep)/V,
	// 1600 with p0 = (1−keep)/V; the estimate divides by keep.
	p1, p0 := keep+(1-keep)/v, (1-keep)/v
	sd := math.Sqrt(400*p1*(1-p1)+1600*p0*(1-p0)) / keep
	stattest.AssertMean(t, "mechanism A estimate", sum/runs, 400, sd, runs, 1e-6) // false alarm 1e-6
}

func TestGlobalCountRejectsBadArguments(t *testing.T) {
	for _, tc := range []struct {
		y, nP int64
		v     int
		p     float64
	}{
		{1, 10, 0, 0.5}, {1, 10, 5, 0}, {1, 10, 5, 1.5}, {1, 10, 5, math.NaN()}, {11, 10, 5, 0.5}, {-1, 10, 5, 0.5},
	} {
		if _, err := GlobalCount(tc.y, tc.nP, tc.v, tc.p); err == nil {
			t.Errorf("accepted %+v", tc)
		}
	}
}
