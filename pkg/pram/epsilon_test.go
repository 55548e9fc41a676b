package pram

import (
	"math"
	"testing"
)

func TestGammaFromEpsilonInvertsEpsilonFromGamma(t *testing.T) {
	tests := []struct {
		name      string
		n, m      int
		eps       float64
		wantGamma float64
	}{
		// γ = 1 + (100/10)(2 − 1) = 11; back: ln((100 + 10·10)/100) = ln 2.
		{"tenth sample", 100, 10, math.Ln2, 11},
		// γ = 1 + (1000/250)(5 − 1) = 17; back: ln((1000 + 250·16)/1000) = ln 5.
		{"quarter sample", 1000, 250, math.Log(5), 17},
		// m = n (PRAM alone): γ = 1 + (3 − 1) = 3 = e^ε, so ε = ln γ.
		{"no sampling", 7, 7, math.Log(3), 3},
		// γ = 1 + (4/1)(5/4 − 1) = 2; back: ln((4 + 1·1)/4) = ln 1.25.
		{"one of four", 4, 1, math.Log(1.25), 2},
	}
	for _, tt := range tests {
		gamma, err := GammaFromEpsilon(tt.n, tt.m, tt.eps)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if math.Abs(gamma-tt.wantGamma) > 1e-12*tt.wantGamma {
			t.Errorf("%s: gamma = %.17g, want %v", tt.name, gamma, tt.wantGamma)
		}
		eps, err := EpsilonFromGamma(tt.n, tt.m, tt.wantGamma)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if math.Abs(eps-tt.eps) > 1e-14 {
			t.Errorf("%s: epsilon = %.17g, want %.17g", tt.name, eps, tt.eps)
		}
	}
}

func TestGammaFromEpsilonKeepsPrecisionForSmallEpsilon(t *testing.T) {
	// n/m = 100, ε = 1e-12: γ − 1 = 100·(e^ε − 1) = 1e-10·(1 + 5e-13).
	// Computing e^ε − 1 as exp(ε) − 1 gives 1.0000889e-12 (relative error
	// 8.9e-5); Expm1 is exact to rounding, and γ = 1 + 1e-10 then carries
	// γ − 1 to ~2e-6 relative (one float64 ulp of 1 over 1e-10).
	gamma, err := GammaFromEpsilon(1000, 10, 1e-12)
	if err != nil {
		t.Fatal(err)
	}
	if rel := math.Abs((gamma-1)-1e-10) / 1e-10; rel > 1e-5 {
		t.Errorf("gamma − 1 = %.10g, relative error %.2g", gamma-1, rel)
	}
	eps, err := EpsilonFromGamma(1000, 10, gamma)
	if err != nil {
		t.Fatal(err)
	}
	if rel := math.Abs(eps-1e-12) / 1e-12; rel > 1e-5 {
		t.Errorf("epsilon back = %.10g, relative error %.2g", eps, rel)
	}
}

func TestRoundTripOverAGrid(t *testing.T) {
	for _, n := range []int{1, 10, 32561, 1_000_000_000} {
		for _, m := range []int{1, n / 3, n} {
			if m < 1 {
				continue
			}
			for _, eps := range []float64{1e-6, 0.01, 0.5, 1, 2, 10, 50} {
				gamma, err := GammaFromEpsilon(n, m, eps)
				if err != nil {
					t.Fatalf("n=%d m=%d eps=%v: %v", n, m, eps, err)
				}
				back, err := EpsilonFromGamma(n, m, gamma)
				if err != nil {
					t.Fatalf("n=%d m=%d eps=%v: %v", n, m, eps, err)
				}
				if math.Abs(back-eps) > 1e-9*eps+1e-15 {
					t.Errorf("n=%d m=%d eps=%v: gamma %v gives back %v", n, m, eps, gamma, back)
				}
			}
		}
	}
}

func TestEpsilonFunctionsRejectBadParameters(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	gammaCases := []struct {
		name  string
		n, m  int
		value float64
	}{
		{"m zero", 10, 0, 2},
		{"m above n", 10, 11, 2},
		{"n negative", -1, 1, 2},
		{"nonpositive", 10, 5, 0},
		{"negative", 10, 5, -1},
		{"NaN", 10, 5, nan},
		{"+Inf", 10, 5, inf},
		{"-Inf", 10, 5, -inf},
	}
	for _, tt := range gammaCases {
		if _, err := GammaFromEpsilon(tt.n, tt.m, tt.value); err == nil {
			t.Errorf("GammaFromEpsilon %s: no error", tt.name)
		}
		gamma := tt.value
		if tt.value == 0 {
			gamma = 1 // γ = 1 is the boundary that must be rejected
		}
		if _, err := EpsilonFromGamma(tt.n, tt.m, gamma); err == nil {
			t.Errorf("EpsilonFromGamma %s: no error", tt.name)
		}
		if _, err := ComposedEpsilon(tt.n, tt.m, gamma, 2); err == nil {
			t.Errorf("ComposedEpsilon %s: no error", tt.name)
		}
	}
	if _, err := GammaFromEpsilon(10, 1, 800); err == nil {
		t.Error("GammaFromEpsilon: e^800 overflow not reported")
	}
	if _, err := GammaFromEpsilon(10, 10, 1e-17); err == nil {
		t.Error("GammaFromEpsilon: gamma rounding to 1 not reported")
	}
	if _, err := ComposedEpsilon(10, 5, 2, 0); err == nil {
		t.Error("ComposedEpsilon: r = 0 accepted")
	}
}

func TestComposedEpsilon(t *testing.T) {
	tests := []struct {
		name  string
		n, m  int
		gamma float64
		r     int
		want  float64
	}{
		// r = 1 is Theorem III.2: ln((100 + 10·10)/100) = ln 2.
		{"one release", 100, 10, 11, 1, math.Ln2},
		// ln((100 + 10·(11² − 1))/100) = ln(1300/100) = ln 13 ≈ 2.565,
		// more than 2·ln 2 ≈ 1.386.
		{"two releases of a tenth sample", 100, 10, 11, 2, math.Log(13)},
		// m = n: ln γ^r = r·ln γ, basic composition is then exact.
		{"no sampling", 5, 5, 3, 4, 4 * math.Log(3)},
		// γ^r = e^1000 overflows: ln(m/n) + r ln γ = ln(1/2) + 1000.
		{"overflowing power", 2, 1, math.E, 1000, 1000 - math.Ln2},
	}
	for _, tt := range tests {
		got, err := ComposedEpsilon(tt.n, tt.m, tt.gamma, tt.r)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if math.Abs(got-tt.want) > 1e-12*math.Max(1, tt.want) {
			t.Errorf("%s: %.17g, want %.17g", tt.name, got, tt.want)
		}
		single, _ := EpsilonFromGamma(tt.n, tt.m, tt.gamma)
		if got < float64(tt.r)*single*(1-1e-12) {
			t.Errorf("%s: %v below r·ε = %v", tt.name, got, float64(tt.r)*single)
		}
	}
}
