package estimate

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/adulttest"
	"github.com/pramkit/pramkit/pkg/pram"
	"github.com/pramkit/pramkit/pkg/rng"
)

// Codebooks from adult.names (value order as declared there).
var (
	educationCodebook = []string{"Bachelors", "Some-college", "11th", "HS-grad", "Prof-school",
		"Assoc-acdm", "Assoc-voc", "9th", "7th-8th", "12th", "Masters", "1st-4th", "10th",
		"Doctorate", "5th-6th", "Preschool"}
	incomeCodebook = []string{">50K", "<=50K"}
)

// adultEducationIncome returns Adult's training table (n = 32561) as
// education × income joint rows (K = 32).
func adultEducationIncome(t *testing.T) population {
	t.Helper()
	rows := adulttest.Load(t, "data")
	index := func(codebook []string, v string) uint32 {
		for i, s := range codebook {
			if s == v {
				return uint32(i)
			}
		}
		t.Fatalf("value %q not in codebook %v", v, codebook)
		return 0
	}
	d, err := pram.NewDomain([]uint32{uint32(len(educationCodebook)), uint32(len(incomeCodebook))})
	if err != nil {
		t.Fatal(err)
	}
	joint := make([]uint64, len(rows))
	for i, row := range rows {
		g, err := d.Encode([]uint32{index(educationCodebook, row[3]), index(incomeCodebook, row[14])})
		if err != nil {
			t.Fatal(err)
		}
		joint[i] = g
	}
	return newPopulation(t, d, joint)
}

// meanErrors returns the mean ℓ2 error of the three estimators over runs
// seeded releases of m rows, and checks per release that the projection is
// no further from the truth than the inverse (non-expansiveness).
func meanErrors(t *testing.T, rel *releaser, m, runs int, mech *pram.Mechanism, seed uint64) map[Method]float64 {
	t.Helper()
	r := rng.NewSeeded(seed)
	sum := map[Method]float64{}
	for range runs {
		c := rel.release(t, r, m, mech)
		errs := map[Method]float64{}
		for _, method := range []Method{MethodInverse, MethodProjected, MethodMLE} {
			est, err := Run(method, c, mech.Gamma(), EMOptions{})
			if err != nil {
				t.Fatal(err)
			}
			e, err := L2(est, rel.pop.truth)
			if err != nil {
				t.Fatal(err)
			}
			errs[method] = e
			sum[method] += e
		}
		if errs[MethodProjected] > errs[MethodInverse]+1e-12 {
			t.Errorf("m=%d: projected error %v above inverse %v", m, errs[MethodProjected], errs[MethodInverse])
		}
	}
	for k := range sum {
		sum[k] /= float64(runs)
	}
	return sum
}

func TestAdultErrorAtPlannedSampleSize(t *testing.T) {
	// Adult education × income (n = 32561, K = 32): 20 seeded releases at
	// m = m* for ε ∈ {0.5, 1, 2}. The mean ℓ2 error of each estimator must
	// be under the Theorem III.4 bound, and the simplex-respecting
	// estimators no worse than the inverse on average.
	const runs = 20
	pop := adultEducationIncome(t)
	rel := newReleaser(pop)
	for i, eps := range []float64{0.5, 1, 2} {
		plan, err := NewPlan(len(pop.rows), pop.domain.Size(), eps)
		if err != nil {
			t.Fatal(err)
		}
		mech := mustMechanism(t, plan.Gamma, pop.domain)
		mean := meanErrors(t, rel, plan.M, runs, mech, 60+uint64(i))
		t.Logf("ε=%.1f m*=%d γ=%.3f bound %.4f | mean ℓ2: inverse %.4f projected %.4f mle %.4f",
			eps, plan.M, plan.Gamma, plan.Bound, mean[MethodInverse], mean[MethodProjected], mean[MethodMLE])
		for method, e := range mean {
			if e >= plan.Bound {
				t.Errorf("ε=%v: %v mean error %.4f not below the bound %.4f", eps, method, e, plan.Bound)
			}
		}
		for _, method := range []Method{MethodProjected, MethodMLE} {
			if mean[method] > mean[MethodInverse] {
				t.Errorf("ε=%v: %v mean error %.4f worse than inverse %.4f", eps, method, mean[method], mean[MethodInverse])
			}
		}
	}
}

func TestAdultErrorCurveMinimumNearMStar(t *testing.T) {
	// SPEC §6 / the paper's experiment: at ε = 1, mean ℓ2 error over 20
	// seeded releases for 8 sample sizes from m*/8 to n: m*·2^k for
	// k = −3 … 3, then n (PRAM alone). The paper predicts the minimum near
	// m*; we require the best of the 8 within a factor 2 of m*, i.e. one of
	// m*/2, m*, 2m*, for each estimator (which also means sampling + PRAM
	// beats PRAM alone at m = n). The grid is anchored at m* so that
	// "within a factor 2" is a statement about neighbouring grid points, not
	// about where a geometric grid happens to fall.
	const runs, eps = 20, 1.0
	pop := adultEducationIncome(t)
	n := len(pop.rows)
	plan, err := NewPlan(n, pop.domain.Size(), eps)
	if err != nil {
		t.Fatal(err)
	}
	rel := newReleaser(pop)
	var grid []int
	for k := -3; k <= 3; k++ {
		grid = append(grid, min(int(math.Round(math.Ldexp(plan.MStar, k))), n))
	}
	grid = append(grid, n)
	best := map[Method]int{}
	bestErr := map[Method]float64{}
	var table strings.Builder
	fmt.Fprintf(&table, "%8s %8s %9s %9s %9s %9s\n", "m", "γ", "bound", "inverse", "projected", "mle")
	for i, m := range grid {
		gamma, err := pram.GammaFromEpsilon(n, m, eps)
		if err != nil {
			t.Fatal(err)
		}
		bound, _ := Bound(pop.domain.Size(), gamma, m)
		mean := meanErrors(t, rel, m, runs, mustMechanism(t, gamma, pop.domain), 70+uint64(i))
		fmt.Fprintf(&table, "%8d %8.3f %9.4f %9.4f %9.4f %9.4f\n", m, gamma, bound, mean[MethodInverse], mean[MethodProjected], mean[MethodMLE])
		for method, e := range mean {
			if e >= bound {
				t.Errorf("m=%d: %v mean error %.4f not below the bound %.4f", m, method, e, bound)
			}
			if _, ok := best[method]; !ok || e < bestErr[method] {
				best[method], bestErr[method] = m, e
			}
		}
	}
	t.Logf("ε=1, m*=%d (unrounded %.1f), mean ℓ2 error over %d releases:\n%s", plan.M, plan.MStar, runs, table.String())
	for _, method := range []Method{MethodInverse, MethodProjected, MethodMLE} {
		m := best[method]
		t.Logf("%v: best m = %d (%.2f·m*)", method, m, float64(m)/plan.MStar)
		if float64(m) < plan.MStar/2*(1-1e-9) || float64(m) > 2*plan.MStar*(1+1e-9) {
			t.Errorf("%v: best m = %d is not within a factor 2 of m* = %.1f", method, m, plan.MStar)
		}
	}
}
