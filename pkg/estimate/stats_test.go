package estimate

import (
	"fmt"
	"math"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/pram"
	"github.com/pramkit/pramkit/pkg/rng"
)

// smallSetting is the synthetic case of the statistical tests: a fixed
// table of n = 5000 rows over Z_4 × Z_3 (K = 12) drawn from skewed(12),
// released with m = 500 at ε = 1 (γ = 1 + 10(e − 1) = 18.18, q = 29.18).
func smallSetting(t testing.TB) (pop population, mech *pram.Mechanism, m int) {
	t.Helper()
	pop = syntheticPopulation(t, rng.NewSeeded(50), []uint32{4, 3}, skewed(12), 5000)
	const n, mm = 5000, 500
	gamma, err := pram.GammaFromEpsilon(n, mm, 1)
	if err != nil {
		t.Fatal(err)
	}
	return pop, mustMechanism(t, gamma, pop.domain), mm
}

// releaseLaw returns p_g = (A t)_g, the law of one released row.
func releaseLaw(truth []float64, gamma float64) []float64 {
	q := gamma + float64(len(truth)-1)
	p := make([]float64, len(truth))
	for g, tg := range truth {
		p[g] = ((gamma-1)*tg + 1) / q
	}
	return p
}

func TestInverseIsUnbiased(t *testing.T) {
	// Mean of T̂(g) over 400 seeded releases (sampling + PRAM) against the
	// full table's t(g). Tolerance from the per-release standard deviation
	// bound sd_g = (q/(γ − 1))·sqrt(p_g(1 − p_g)/m) (InverseInterval's
	// derivation; the true sd is at most this, so the test is conservative)
	// at alpha = 1e-6/12 per cell, 1e-6 over the 12 cells.
	const releases = 400
	pop, mech, m := smallSetting(t)
	gamma := mech.Gamma()
	q := mech.Q()
	truth, _ := pop.truth.Dense()
	p := releaseLaw(truth, gamma)
	rel := newReleaser(pop)
	r := rng.NewSeeded(51)
	sum := make([]float64, len(truth))
	for range releases {
		inv, err := Inverse(rel.release(t, r, m, mech), gamma)
		if err != nil {
			t.Fatal(err)
		}
		x, _ := inv.Dense()
		for g := range sum {
			sum[g] += x[g]
		}
	}
	for g := range sum {
		sd := q / (gamma - 1) * math.Sqrt(p[g]*(1-p[g])/float64(m))
		stattest.AssertMean(t, fmt.Sprintf("mean T̂(%d)", g), sum[g]/releases, truth[g], sd, releases, 1e-6/float64(len(sum)))
	}
}

func TestInverseIntervalCovers(t *testing.T) {
	// Over 400 releases, each cell's 95% interval must contain t(g) at
	// least as often as a Binomial(400, 0.95) count's lower 1e-6/12-level
	// bound (one-sided: the interval is conservative by construction).
	const releases, level = 400, 0.95
	pop, mech, m := smallSetting(t)
	truth, _ := pop.truth.Dense()
	rel := newReleaser(pop)
	r := rng.NewSeeded(52)
	covered := make([]int64, len(truth))
	var width float64
	for range releases {
		c := rel.release(t, r, m, mech)
		iv, err := InverseInterval(c, mech.Gamma(), level)
		if err != nil {
			t.Fatal(err)
		}
		for g, tg := range truth {
			lo, hi := iv.RestLo, iv.RestHi
			for i, idx := range iv.Index {
				if idx == uint64(g) {
					lo, hi = iv.Lo[i], iv.Hi[i]
				}
			}
			if lo <= tg && tg <= hi {
				covered[g]++
			}
			width += hi - lo
		}
	}
	lo, _ := stattest.BinomialInterval(releases, level, 2e-6/float64(len(truth)))
	for g, n := range covered {
		if n < lo {
			t.Errorf("cell %d (t = %.4f): covered %d of %d, below %d", g, truth[g], n, releases, lo)
		}
	}
	t.Logf("coverage per cell (of %d): %v; mean width %.4f", releases, covered, width/float64(releases*len(truth)))
}

func TestBootstrapIntervalCovers(t *testing.T) {
	// Parametric percentile bootstrap (100 replicates) for Projected and
	// MLE over 60 releases. Percentile intervals of estimators pinned at
	// the simplex boundary have no exact coverage guarantee, so this is a
	// calibration check with a wide margin: pooled coverage of the 12·60
	// cell intervals at nominal 95% must be at least 85%. A wrong centre or
	// a scale off by a factor 2 drops it far below that.
	if testing.Short() {
		t.Skip("bootstrap coverage takes a few seconds")
	}
	const releases, level = 60, 0.95
	pop, mech, m := smallSetting(t)
	truth, _ := pop.truth.Dense()
	rel := newReleaser(pop)
	for _, method := range []Method{MethodProjected, MethodMLE} {
		r := rng.NewSeeded(53)
		var covered, total int
		var width float64
		for range releases {
			c := rel.release(t, r, m, mech)
			iv, err := BootstrapInterval(r, method, c, mech.Gamma(), BootstrapOptions{Replicates: 100, Level: level})
			if err != nil {
				t.Fatal(err)
			}
			for g, tg := range truth {
				lo, hi := iv.RestLo, iv.RestHi
				for i, idx := range iv.Index {
					if idx == uint64(g) {
						lo, hi = iv.Lo[i], iv.Hi[i]
					}
				}
				if lo <= tg && tg <= hi {
					covered++
				}
				width += hi - lo
				total++
			}
		}
		frac := float64(covered) / float64(total)
		t.Logf("%v: pooled coverage %.3f (%d of %d), mean width %.4f", method, frac, covered, total, width/float64(total))
		if frac < 0.85 {
			t.Errorf("%v: pooled coverage %.3f below 0.85", method, frac)
		}
	}
}

func TestBootstrapIntervalRejectsBadInput(t *testing.T) {
	c, _ := CountsFromDense([]int64{3, 4, 5})
	r := rng.NewSeeded(1)
	if _, err := BootstrapInterval(r, MethodInverse, c, 2, BootstrapOptions{}); err == nil {
		t.Error("method inverse accepted")
	}
	if _, err := BootstrapInterval(nil, MethodMLE, c, 2, BootstrapOptions{}); err == nil {
		t.Error("nil source accepted")
	}
	if _, err := BootstrapInterval(r, MethodMLE, c, 2, BootstrapOptions{Replicates: 1}); err == nil {
		t.Error("one replicate accepted")
	}
	if _, err := BootstrapInterval(r, MethodMLE, c, 2, BootstrapOptions{Level: 1.5}); err == nil {
		t.Error("level 1.5 accepted")
	}
	if _, err := InverseInterval(c, 2, 0); err == nil {
		t.Error("InverseInterval accepted level 0")
	}
}

func TestBootstrapIntervalHandlesHugeK(t *testing.T) {
	// K = 2^40: the resampling relabels cells and never touches K-sized
	// memory; the unobserved cells get a proper interval around ~0.
	c := randomCounts(t, rng.NewSeeded(54), 1<<40, 15)
	iv, err := BootstrapInterval(rng.NewSeeded(55), MethodMLE, c, 1e9, BootstrapOptions{Replicates: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(iv.Lo) != len(c.Index) || iv.RestLo < 0 || iv.RestHi > 1e-6 {
		t.Fatalf("interval %+v", iv)
	}
	for i := range iv.Lo {
		if !(iv.Lo[i] <= iv.Hi[i]) {
			t.Fatalf("cell %d: [%v, %v]", iv.Index[i], iv.Lo[i], iv.Hi[i])
		}
	}
}

func TestAliasDrawsFollowTheWeights(t *testing.T) {
	// Chi-square of 100 000 draws against the normalised weights; the
	// zero-weight category must never appear. alpha = 1e-6.
	w := []float64{4, 2, 1, 1, 0, 0.5, 7.5}
	a, err := newAlias(w)
	if err != nil {
		t.Fatal(err)
	}
	r := rng.NewSeeded(56)
	counts := make([]int64, len(w))
	for range 100_000 {
		counts[a.draw(r)]++
	}
	p := make([]float64, len(w))
	for i, x := range w {
		p[i] = x / 16
	}
	stattest.AssertChiSquare(t, "alias", counts, p, 1e-6)
	if _, err := newAlias([]float64{0, 0}); err == nil {
		t.Error("all-zero weights accepted")
	}
	if _, err := newAlias([]float64{1, -1}); err == nil {
		t.Error("negative weight accepted")
	}
}

func TestBernoulliIsExactForTinyProbabilities(t *testing.T) {
	// The 128-bit threshold ⌊p·2^128⌋ is exact for float64 p: for
	// p = 3·2^-70 it is 3·2^58, i.e. hi = 0 and lo = 3·2^58, where a
	// comparison with a 53-bit uniform float would give probability 0.
	// And p = 0.3 draws Binomial(100 000, 0.3) (alpha = 1e-6).
	if b := newBernoulli(3 * math.Ldexp(1, -70)); b.hi != 0 || b.lo != 3<<58 {
		t.Fatalf("threshold (%d, %d), want (0, 3·2^58)", b.hi, b.lo)
	}
	if b := newBernoulli(0.75); b.hi != 3<<62 || b.lo != 0 {
		t.Fatalf("threshold (%d, %d), want (3·2^62, 0)", b.hi, b.lo)
	}
	r := rng.NewSeeded(57)
	fair := newBernoulli(0.3)
	var k int64
	for range 100_000 {
		if fair.draw(r) {
			k++
		}
	}
	stattest.AssertBinomial(t, "Bernoulli(0.3)", k, 100_000, 0.3, 1e-6)
}
