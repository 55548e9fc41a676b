package pram

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestComposedEpsilonGammasHandChecked(t *testing.T) {
	for _, tt := range []struct {
		name   string
		n, m   int
		gammas []float64
		want   float64
	}{
		// Γ = 2·3 = 6: ln((100 + 10·5)/100) = ln 1.5.
		{"two", 100, 10, []float64{2, 3}, math.Log(1.5)},
		// Γ = 2·2·5 = 20: ln((1000 + 100·19)/1000) = ln 2.9.
		{"three", 1000, 100, []float64{2, 2, 5}, math.Log(2.9)},
		// One release is Theorem III.2: ln((10 + 5·3)/10) = ln 2.5.
		{"one", 10, 5, []float64{4}, math.Log(2.5)},
		// m = n: ε = ln Γ = ln 1e300 + ln 1e300 (Γ overflows float64).
		{"overflow", 7, 7, []float64{1e300, 1e300}, 600 * math.Ln10},
	} {
		got, err := ComposedEpsilonGammas(tt.n, tt.m, tt.gammas)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if math.Abs(got-tt.want) > 1e-12*math.Max(1, tt.want) {
			t.Errorf("%s: %.17g, want %.17g", tt.name, got, tt.want)
		}
	}
	// Equal γ's agree with ComposedEpsilon.
	a, _ := ComposedEpsilonGammas(32561, 2057, []float64{8, 8, 8})
	b, _ := ComposedEpsilon(32561, 2057, 8, 3)
	if math.Abs(a-b) > 1e-14 {
		t.Errorf("ComposedEpsilonGammas %v ≠ ComposedEpsilon %v", a, b)
	}
	for _, bad := range [][]float64{nil, {2, 1}, {math.Inf(1)}, {math.NaN()}} {
		if _, err := ComposedEpsilonGammas(10, 5, bad); err == nil {
			t.Errorf("ComposedEpsilonGammas(%v): no error", bad)
		}
	}
}

func TestCombineGammasHandChecked(t *testing.T) {
	for _, tt := range []struct {
		name   string
		K      uint64
		gammas []float64
		want   float64
	}{
		// a = 1·2/(1 + 2 + 3) = 1/3.
		{"two", 3, []float64{2, 3}, 1 + 1.0/3},
		// a = 4·4/(4 + 4 + 2) = 1.6, then 1.6·9/(1.6 + 9 + 2) = 14.4/12.6 = 8/7.
		{"three", 2, []float64{5, 5, 10}, 1 + 8.0/7},
		{"one", 16, []float64{7}, 7},
	} {
		got, err := CombineGammas(tt.K, tt.gammas)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if math.Abs(got-tt.want) > 1e-14*tt.want {
			t.Errorf("%s: %.17g, want %.17g", tt.name, got, tt.want)
		}
	}
	for _, bad := range [][]float64{nil, {2, 0.5}, {math.NaN()}} {
		if _, err := CombineGammas(4, bad); err == nil {
			t.Errorf("CombineGammas(%v): no error", bad)
		}
	}
	if _, err := CombineGammas(1<<62, []float64{1 + 1e-9, 1 + 1e-9}); err == nil {
		t.Error("a chain that rounds γ to 1: no error")
	}
}

// TestCombineGammasIsTheMatrixProduct multiplies the K×K matrices A(γ_i)
// and checks the product is A(CombineGammas(γ's)) entry by entry, and that
// the order of the perturbations does not matter.
func TestCombineGammasIsTheMatrixProduct(t *testing.T) {
	const K = 5
	gammas := []float64{3, 1.5, 40, 2.2}
	mat := func(g float64) [K][K]float64 {
		var a [K][K]float64
		q := g + K - 1
		for i := range K {
			for j := range K {
				a[i][j] = 1 / q
			}
			a[i][i] = g / q
		}
		return a
	}
	prod := mat(gammas[0])
	for _, g := range gammas[1:] {
		b := mat(g)
		var c [K][K]float64
		for i := range K {
			for j := range K {
				for l := range K {
					c[i][j] += prod[i][l] * b[l][j]
				}
			}
		}
		prod = c
	}
	g, err := CombineGammas(K, gammas)
	if err != nil {
		t.Fatal(err)
	}
	want := mat(g)
	for i := range K {
		for j := range K {
			if math.Abs(prod[i][j]-want[i][j]) > 1e-15 {
				t.Fatalf("entry (%d,%d): product %v, A(%v) %v", i, j, prod[i][j], g, want[i][j])
			}
		}
	}
	rev, _ := CombineGammas(K, []float64{2.2, 40, 1.5, 3})
	if math.Abs(rev-g) > 1e-14*g {
		t.Errorf("order matters: %v vs %v", rev, g)
	}
}

// TestChainedMechanismsFollowCombinedGamma perturbs one row value three
// times with Mechanism and checks the frequency of keeping it against
// γ/q of the combined γ. 200,000 draws; the tolerance is 5 standard
// deviations of a binomial frequency, a false alarm probability below
// 6·10⁻⁷.
func TestChainedMechanismsFollowCombinedGamma(t *testing.T) {
	d, _ := NewDomain([]uint32{4, 3})
	gammas := []float64{6, 9, 4}
	mechs := make([]*Mechanism, len(gammas))
	for i, g := range gammas {
		m, err := NewMechanism(g, d)
		if err != nil {
			t.Fatal(err)
		}
		mechs[i] = m
	}
	gc, _ := CombineGammas(d.Size(), gammas)
	p := gc / (gc + float64(d.Size()) - 1)
	r := rand.New(rand.NewPCG(1, 2))
	const draws = 200000
	kept := 0
	cols := [][]uint32{make([]uint32, draws), make([]uint32, draws)}
	for i := range draws {
		cols[0][i], cols[1][i] = 2, 1
	}
	for _, m := range mechs {
		if err := m.PerturbColumns(r, cols); err != nil {
			t.Fatal(err)
		}
	}
	for i := range draws {
		if cols[0][i] == 2 && cols[1][i] == 1 {
			kept++
		}
	}
	sd := math.Sqrt(p * (1 - p) / draws)
	if got := float64(kept) / draws; math.Abs(got-p) > 5*sd {
		t.Errorf("kept %.5f of rows, combined γ = %.4f predicts %.5f ± %.5f", got, gc, p, sd)
	}
}

func TestComposedEpsilonProduct(t *testing.T) {
	// Γ = γ² gives the ε of the same γ used twice (ComposedEpsilon).
	n, m, g := 32561, 2057, 28.2
	want, err := ComposedEpsilon(n, m, g, 2)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ComposedEpsilonProduct(n, m, g*g)
	if err != nil || math.Abs(got-want) > 1e-12*want {
		t.Errorf("ComposedEpsilonProduct(Γ = γ²) = %v, %v; want %v", got, err, want)
	}
	// … and ComposedEpsilonGammas of any split of Γ.
	want2, _ := ComposedEpsilonGammas(n, m, []float64{4, g * g / 4})
	if math.Abs(got-want2) > 1e-12*want2 {
		t.Errorf("ComposedEpsilonProduct = %v, ComposedEpsilonGammas = %v", got, want2)
	}
	for _, bad := range []float64{1, 0.5, math.NaN(), math.Inf(1)} {
		if _, err := ComposedEpsilonProduct(n, m, bad); err == nil {
			t.Errorf("ComposedEpsilonProduct(Γ = %v) accepted", bad)
		}
	}
}

func TestTwoGammas(t *testing.T) {
	gs, err := TwoGammas(12, 3)
	if err != nil || len(gs) != 2 || gs[0] != 4 || gs[1] != 3 {
		t.Errorf("TwoGammas(12, 3) = %v, %v; want [4 3]", gs, err)
	}
	for _, c := range [][2]float64{{3, 3}, {2, 3}, {math.NaN(), 3}} {
		if _, err := TwoGammas(c[0], c[1]); err == nil {
			t.Errorf("TwoGammas(%v, %v) accepted a first γ ≤ 1", c[0], c[1])
		}
	}
}
