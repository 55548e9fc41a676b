package countquery

import (
	"fmt"
	"math"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/rng"
)

// figure3 builds the 4×4 matrix a_ij of Figure 3 written out by hand.
func figure3(a01 float64, l int) [4][4]float64 {
	lf := float64(l)
	return [4][4]float64{
		{1 - a01, a01, 0, 0},
		{(lf - 1) / lf, 1 / lf, 0, 0},
		{0, 0, 1 - a01, a01},
		{0, 0, (lf - 1) / lf, 1 / lf},
	}
}

// kron returns the Kronecker product of dense square matrices.
func kron(a, b [][]float64) [][]float64 {
	n, m := len(a), len(b)
	out := make([][]float64, n*m)
	for i := range out {
		out[i] = make([]float64, n*m)
	}
	for i := range n {
		for j := range n {
			for k := range m {
				for l := range m {
					out[i*m+k][j*m+l] = a[i][j] * b[k][l]
				}
			}
		}
	}
	return out
}

// expectedY returns yᵀ = xᵀM: the expected published state counts.
func expectedY(x []float64, m [][]float64) []float64 {
	y := make([]float64, len(x))
	for i := range x {
		for j := range y {
			y[j] += x[i] * m[i][j]
		}
	}
	return y
}

var tight = Options{Tolerance: 1e-13, MaxIter: 2_000_000}

// Noise-free y = Mᵀx: the update's fixed point is x itself (Eq. 12).
func TestPredicateRecoversXFromExpectedCounts(t *testing.T) {
	tests := []struct {
		x     [4]float64
		l     int
		exact bool
	}{
		{[4]float64{14000, 1400, 4000, 600}, 5, false},
		{[4]float64{14000, 1400, 4000, 600}, 5, true},
		{[4]float64{500, 50, 300, 30}, 2, true},
		{[4]float64{1000, 10, 100, 1}, 10, false},
		{[4]float64{30000, 3000, 2000, 900}, 7, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%v/l=%d/exact=%v", tc.x, tc.l, tc.exact), func(t *testing.T) {
			n := tc.x[0] + tc.x[1] + tc.x[2] + tc.x[3]
			fs := tc.x[1] + tc.x[3]
			a := figure3(DecoyProb(fs, n, tc.l, tc.exact), tc.l)
			m := make([][]float64, 4)
			for i := range m {
				m[i] = a[i][:]
			}
			yy := expectedY(tc.x[:], m)
			opt := tight
			opt.ExactDecoy = tc.exact
			opt.Frequencies = []float64{fs}
			est, err := Predicate([4]float64(yy), tc.l, opt)
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range tc.x {
				if math.Abs(est.X[i]-want) > 1e-6*math.Max(want, 1) {
					t.Errorf("x[%d] = %.6f, want %v (%d iterations, converged %v)", i, est.X[i], want, est.Iterations, est.Converged)
				}
			}
		})
	}
}

// drawY simulates Figure 3's model: each of the x_i rows of state i moves to
// state j with probability a_ij.
func drawY(x [4]int, a [4][4]float64, r interface{ Float64() float64 }) [4]float64 {
	var y [4]float64
	for i, n := range x {
		for range n {
			u := r.Float64()
			for j := range 4 {
				u -= a[i][j]
				if u < 0 || j == 3 {
					y[j]++
					break
				}
			}
		}
	}
	return y
}

// Under the model with f_s known, the update converges to the MLE
// (y_3 − n_P a01)/(1/ℓ′ − a01), unbiased while inside [0, n_P].
func TestPredicateUnbiasedUnderModel(t *testing.T) {
	const l, runs = 5, 400
	x := [4]int{14000, 1400, 4000, 600}
	n := float64(x[0] + x[1] + x[2] + x[3])
	fs := float64(x[1] + x[3])
	for _, exact := range []bool{false, true} {
		t.Run(fmt.Sprintf("exact=%v", exact), func(t *testing.T) {
			a01 := DecoyProb(fs, n, l, exact)
			a := figure3(a01, l)
			r := rng.NewSeeded(21)
			opt := Options{Tolerance: 1e-10, MaxIter: 1_000_000, ExactDecoy: exact, Frequencies: []float64{fs}}
			var sum float64
			for range runs {
				est, err := Predicate(drawY(x, a, r), l, opt)
				if err != nil {
					t.Fatal(err)
				}
				sum += est.Count
			}
			// Var(y3 | n_P) = x3·(1/ℓ′)(1 − 1/ℓ′) + x2·a01(1 − a01); the estimate
			// divides y3 by 1/ℓ′ − a01.
			p := 1.0 / l
			sd := math.Sqrt(float64(x[3])*p*(1-p)+float64(x[2])*a01*(1-a01)) / (p - a01)
			stattest.AssertMean(t, "x3 estimate", sum/runs, float64(x[3]), sd, runs, 1e-6) // false alarm 1e-6
		})
	}
}

// The update multiplies nonnegative numbers: no state count goes below 0,
// even where the linear inverse would, and the P and P̄ totals of y are kept.
func TestPredicateNeverNegative(t *testing.T) {
	r := rng.NewSeeded(22)
	cases := [][4]float64{
		{9000, 950, 990, 10}, // linear inverse of x3: (10 − 1000·a01)/(…) < 0
		{0, 0, 5, 0},
		{0, 3, 0, 0},
		{1, 0, 0, 1},
	}
	for range 500 {
		var y [4]float64
		for j := range y {
			if r.IntN(4) > 0 {
				y[j] = float64(r.IntN(5000))
			}
		}
		if y[0]+y[1]+y[2]+y[3] > 0 {
			cases = append(cases, y)
		}
	}
	for _, y := range cases {
		for _, opt := range []Options{{}, {ExactDecoy: true}, {UpdateFrequencies: true}, {Tolerance: 1e-7}} {
			l := 2 + r.IntN(9)
			est, err := Predicate(y, l, opt)
			if err != nil {
				t.Fatalf("y %v l %d: %v", y, l, err)
			}
			for i, v := range est.X {
				if !(v >= 0) || math.IsInf(v, 0) {
					t.Fatalf("y %v l %d opt %+v: x[%d] = %v", y, l, opt, i, v)
				}
			}
			if d := math.Abs(est.X[2] + est.X[3] - y[2] - y[3]); d > 1e-9*math.Max(y[2]+y[3], 1) {
				t.Fatalf("y %v: P total %v, want %v", y, est.X[2]+est.X[3], y[2]+y[3])
			}
		}
	}
}

// Eq. 13 with w = 1 is Eq. 12: same iterations, same numbers.
func TestPredicateMultiW1MatchesPredicate(t *testing.T) {
	r := rng.NewSeeded(23)
	opts := []Options{{}, {ExactDecoy: true}, {UpdateFrequencies: true}, {ExactDecoy: true, UpdateFrequencies: true}, {Tolerance: 1e-8}, {Frequencies: []float64{700}}}
	bitwise, compared := 0, 0
	for trial := range 300 {
		var y [4]float64
		for j := range y {
			y[j] = float64(r.IntN(20000))
		}
		y[1] += 700 // keep Frequencies = 700 within [0, N]
		l := 2 + r.IntN(9)
		for _, opt := range opts {
			one, err1 := Predicate(y, l, opt)
			multi, err2 := PredicateMulti(y[:], l, opt)
			if err1 != nil || err2 != nil {
				t.Fatalf("trial %d: %v, %v", trial, err1, err2)
			}
			if one.Iterations != multi.Iterations || one.Converged != multi.Converged {
				t.Fatalf("trial %d opt %+v: %d vs %d iterations", trial, opt, one.Iterations, multi.Iterations)
			}
			// Both evaluate the same sums in the same order; the 1e-12 slack only
			// allows for a compiler fusing multiply-adds differently.
			for i := range 4 {
				compared++
				if one.X[i] == multi.X[i] {
					bitwise++
				}
				if math.Abs(one.X[i]-multi.X[i]) > 1e-12*math.Max(math.Abs(one.X[i]), 1) {
					t.Fatalf("trial %d opt %+v: x[%d] %v vs %v", trial, opt, i, one.X[i], multi.X[i])
				}
			}
		}
	}
	t.Logf("%d of %d state estimates bitwise equal", bitwise, compared)
}

// Noise-free y = Mᵀx with M = I ⊗ M1 ⊗ … ⊗ Mw formed densely here: the
// factor-wise update recovers x.
func TestPredicateMultiRecoversXFromExpectedCounts(t *testing.T) {
	r := rng.NewSeeded(24)
	for _, w := range []int{1, 2, 3} {
		for _, exact := range []bool{false, true} {
			t.Run(fmt.Sprintf("w=%d/exact=%v", w, exact), func(t *testing.T) {
				const l = 4
				k := 1 << (w + 1)
				// Rows holding s_k are rarer (×0.1 per value held), keeping every
				// f_{s_k} below N/ℓ′ as eligibility does.
				x := make([]float64, k)
				for i := range x {
					x[i] = float64(500 + r.IntN(30000))
					for b := i & (k/2 - 1); b != 0; b &= b - 1 {
						x[i] *= 0.1
					}
				}
				var n float64
				for _, v := range x {
					n += v
				}
				fs := make([]float64, w)
				marginals(x, w, fs)
				m := [][]float64{{1, 0}, {0, 1}}
				for att := range w {
					a01 := DecoyProb(fs[att], n, l, exact)
					m = kron(m, [][]float64{{1 - a01, a01}, {float64(l-1) / l, 1.0 / l}})
				}
				yy := expectedY(x, m)
				opt := tight
				opt.ExactDecoy = exact
				opt.Frequencies = fs
				est, err := PredicateMulti(yy, l, opt)
				if err != nil {
					t.Fatal(err)
				}
				for i, want := range x {
					if math.Abs(est.X[i]-want) > 1e-5*want {
						t.Errorf("x[%d] = %.4f, want %v (%d iterations)", i, est.X[i], want, est.Iterations)
					}
				}
				if est.Count != est.X[k-1] {
					t.Errorf("Count %v is not x_{K−1} %v", est.Count, est.X[k-1])
				}
			})
		}
	}
}

func TestStateIndexesFollowFigure3(t *testing.T) {
	tests := []struct {
		inP  bool
		has  []bool
		want int
	}{
		{false, []bool{false}, 0}, {false, []bool{true}, 1}, {true, []bool{false}, 2}, {true, []bool{true}, 3},
		{true, []bool{false, true}, 5}, {false, []bool{true, false}, 2}, {true, []bool{true, true, true}, 15},
	}
	for _, tc := range tests {
		if got := State(tc.inP, tc.has...); got != tc.want {
			t.Errorf("State(%v, %v) = %d, want %d", tc.inP, tc.has, got, tc.want)
		}
	}
}

// The exact a01 makes the expected count of s in D′ equal f_s (Theorem 3);
// the paper's does not.
func TestDecoyProbKeepsValueCountUnbiased(t *testing.T) {
	for _, tc := range []struct {
		fs, n float64
		l     int
	}{{100, 1000, 5}, {4140, 32561, 5}, {9, 32561, 7}, {500, 1000, 2}} {
		exact := DecoyProb(tc.fs, tc.n, tc.l, true)
		if got := tc.fs/float64(tc.l) + (tc.n-tc.fs)*exact; math.Abs(got-tc.fs) > 1e-9*tc.fs {
			t.Errorf("%+v: E[f′_s] = %v with the exact a01, want %v", tc, got, tc.fs)
		}
		if paper := DecoyProb(tc.fs, tc.n, tc.l, false); paper != tc.fs/tc.n {
			t.Errorf("%+v: paper a01 = %v, want f_s/N", tc, paper)
		}
	}
	// Clamped at f_s = N/ℓ′, where every non-s row shares a group with s.
	if got := DecoyProb(600, 1000, 2, true); got != 0.5 {
		t.Errorf("a01 above N/ℓ′ = %v, want 1/ℓ′ = 0.5", got)
	}
}

func TestPredicateRejectsBadArguments(t *testing.T) {
	y := [4]float64{10, 2, 5, 1}
	nan := math.NaN()
	tests := []struct {
		name string
		y    [4]float64
		l    int
		opt  Options
	}{
		{"l = 1", y, 1, Options{}},
		{"negative count", [4]float64{10, -1, 5, 1}, 5, Options{}},
		{"NaN count", [4]float64{10, nan, 5, 1}, 5, Options{}},
		{"infinite count", [4]float64{10, math.Inf(1), 5, 1}, 5, Options{}},
		{"no rows", [4]float64{}, 5, Options{}},
		{"negative tolerance", y, 5, Options{Tolerance: -0.1}},
		{"NaN tolerance", y, 5, Options{Tolerance: nan}},
		{"negative MaxIter", y, 5, Options{MaxIter: -1}},
		{"frequency above N", y, 5, Options{Frequencies: []float64{19}}},
		{"NaN frequency", y, 5, Options{Frequencies: []float64{nan}}},
		{"two frequencies for one attribute", y, 5, Options{Frequencies: []float64{1, 2}}},
		{"frequencies and updates", y, 5, Options{Frequencies: []float64{3}, UpdateFrequencies: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Predicate(tc.y, tc.l, tc.opt); err == nil {
				t.Error("Predicate accepted")
			}
			if _, err := PredicateMulti(tc.y[:], tc.l, tc.opt); err == nil {
				t.Error("PredicateMulti accepted")
			}
		})
	}
	for _, k := range []int{0, 2, 3, 6, 12} {
		if _, err := PredicateMulti(make([]float64, k), 5, Options{}); err == nil {
			t.Errorf("PredicateMulti accepted %d state counts", k)
		}
	}
}

func BenchmarkPredicate(b *testing.B) {
	y := [4]float64{28000, 3400, 1100, 140}
	for b.Loop() {
		if _, err := Predicate(y, 5, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPredicateMultiW2(b *testing.B) {
	y := []float64{20000, 2000, 3000, 400, 1500, 200, 300, 40}
	for b.Loop() {
		if _, err := PredicateMulti(y, 5, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
