package estimate

import (
	"math"
	"testing"

	"github.com/pramkit/pramkit/pkg/pram"
)

func TestNewPlanAdultEducationIncome(t *testing.T) {
	// Adult (n = 32561), education × income (K = 16·2 = 32), ε = 1:
	//   n(e − 1)     = 32561 · 1.718281828 = 55948.97
	//   √K + 1       = 5.656854 + 1        = 6.656854
	//   K^{3/2}      = 32 · 5.656854       = 181.01934
	//   m*           = 55948.97 · 6.656854 / 181.01934 = 2057.48
	// so m* = 2057 (nearest); γ = 1 + (32561/2057)(e − 1) = 28.1993 and
	// c = 1 + 32/27.1993 = 2.17650, bound = (2.17650·5.656854 + 1)/√2057
	// = 13.31229/45.35416 = 0.293515.
	p, err := NewPlan(32561, 32, 1)
	if err != nil {
		t.Fatal(err)
	}
	if p.M != 2057 && p.M != 2058 {
		t.Fatalf("m* = %d (unrounded %v), want 2057 or 2058", p.M, p.MStar)
	}
	if math.Abs(p.MStar-2057.48) > 0.01 || math.Abs(p.Gamma-28.1993) > 1e-4 || math.Abs(p.Bound-0.293515) > 1e-6 {
		t.Errorf("plan %+v, want m* ≈ 2057.48, γ ≈ 28.1993, bound ≈ 0.293515", p)
	}
	eps, _ := pram.EpsilonFromGamma(p.N, p.M, p.Gamma)
	if math.Abs(eps-1) > 1e-12 {
		t.Errorf("ε at the plan = %v, want 1", eps)
	}
}

func TestNewPlanMinimisesTheBound(t *testing.T) {
	// The bound at the planned m is no larger than at its neighbours and at
	// m*/2, 2m* (same ε, γ from Theorem III.2 at each m).
	for _, tt := range []struct {
		n   int
		K   uint64
		eps float64
	}{{32561, 32, 0.5}, {32561, 32, 2}, {100000, 200, 1}, {1000, 4, 0.1}} {
		p, err := NewPlan(tt.n, tt.K, tt.eps)
		if err != nil {
			t.Fatal(err)
		}
		at := func(m int) float64 {
			g, err := pram.GammaFromEpsilon(tt.n, m, tt.eps)
			if err != nil {
				t.Fatal(err)
			}
			b, err := Bound(tt.K, g, m)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		for _, m := range []int{p.M - 1, p.M + 1, p.M / 2, 2 * p.M} {
			if m >= 1 && m <= tt.n && at(m) < p.Bound*(1-1e-12) {
				t.Errorf("%+v: bound %v at m = %d below the plan's %v at %d", tt, at(m), m, p.Bound, p.M)
			}
		}
	}
}

func TestNewPlanClampsAndValidates(t *testing.T) {
	// ε = 10: m* = 100·(e^10 − 1)·3/8 ≈ 826 > n = 100 → m = n.
	p, err := NewPlan(100, 4, 10)
	if err != nil || p.M != 100 {
		t.Fatalf("plan %+v, %v; want m = n = 100", p, err)
	}
	// Tiny ε: m* < 0.5 → m = 1.
	if p, err := NewPlan(100, 1<<20, 0.01); err != nil || p.M != 1 {
		t.Fatalf("plan %+v, %v; want m = 1", p, err)
	}
	for _, bad := range []struct {
		n   int
		K   uint64
		eps float64
	}{{0, 4, 1}, {10, 0, 1}, {10, 1<<62 + 1, 1}, {10, 4, 0}, {10, 4, math.NaN()}, {10, 4, math.Inf(1)}} {
		if _, err := NewPlan(bad.n, bad.K, bad.eps); err == nil {
			t.Errorf("NewPlan%+v accepted", bad)
		}
	}
}

func TestBoundHandValue(t *testing.T) {
	// K = 4, γ = 3, m = 100: c = 1 + 4/2 = 3, bound = (3·2 + 1)/10 = 0.7.
	b, err := Bound(4, 3, 100)
	if err != nil || math.Abs(b-0.7) > 1e-15 {
		t.Fatalf("Bound = %v, %v; want 0.7", b, err)
	}
	for _, bad := range []struct {
		K     uint64
		gamma float64
		m     int
	}{{0, 3, 1}, {4, 1, 1}, {4, math.NaN(), 1}, {4, 3, 0}} {
		if _, err := Bound(bad.K, bad.gamma, bad.m); err == nil {
			t.Errorf("Bound%+v accepted", bad)
		}
	}
}
