package countquery

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/pramkit/pramkit/internal/adultquery"

	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/rng"
)

// The randomized decoy design (issue 12; doc.go, "Randomized decoy
// groups"): group after group, the ℓ′ values of a group are every value
// whose remaining count equals the number of groups still to form, then
// values drawn one at a time with probability proportional to their
// remaining counts among those not yet in the group (anonymize.NewSchedule
// with GroupingRandom). These tests check the a01 the estimator uses and
// the estimator on releases drawn from that schedule.

// randomRelease publishes column s (values < v) with A′ over decoy groups
// of grouping g: N mod ℓ′ uniformly random rows are dropped, each value's
// rows fill its slots of the schedule in uniformly random order (the law
// of SPEC §4 with random ids), and each row publishes a uniform member of
// its group's set.
func randomRelease(t testing.TB, s []uint32, v, l int, g anonymize.Grouping, r *rand.Rand) []uint32 {
	t.Helper()
	rows := r.Perm(len(s))
	drop := len(s) % l
	pub := make([]uint32, len(s))
	for _, row := range rows[:drop] {
		pub[row] = anonymize.NotPublished
	}
	bucket := make([][]int, v)
	f := make([]int64, v)
	for _, row := range rows[drop:] { // a random order within each value
		bucket[s[row]] = append(bucket[s[row]], row)
		f[s[row]]++
	}
	sched, err := anonymize.NewSchedule(f, l, g, r)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sched.Types {
		for range st.Groups {
			for _, val := range st.Values {
				row := bucket[val][0]
				bucket[val] = bucket[val][1:]
				pub[row] = st.Values[r.IntN(l)]
			}
		}
	}
	return pub
}

// adultCounts are UCI Adult's occupation counts (adult.data, "?" one of
// them), largest first.
var adultCounts = []int64{4140, 4099, 4066, 3770, 3650, 3295, 2002, 1843, 1597, 1370, 994, 928, 649, 149, 9}

// decoyRatios replays the design runs times on counts f and returns
// a01(v→s)/ā01(s), where a01(v→s) = E[C_vs]/(ℓ′ f_v) is the chance that a
// row of v publishes s ≠ v and ā01(s) = DecoyProb(f_s, N, ℓ′, true), and
// the row-weighted average of a01(v→s) over v ≠ s divided by ā01(s).
func decoyRatios(f []int64, l, runs int, r *rand.Rand) (ratio [][]float64, avg []float64, err error) {
	v := len(f)
	c := make([][]float64, v)
	for i := range c {
		c[i] = make([]float64, v)
	}
	for range runs {
		sched, err := anonymize.NewSchedule(f, l, anonymize.GroupingRandom, r)
		if err != nil {
			return nil, nil, err
		}
		for _, st := range sched.Types {
			for _, a := range st.Values {
				for _, b := range st.Values {
					c[a][b] += float64(st.Groups)
				}
			}
		}
	}
	var n float64
	for _, x := range f {
		n += float64(x)
	}
	lf := float64(l)
	ratio = make([][]float64, v)
	avg = make([]float64, v)
	for a := range v {
		ratio[a] = make([]float64, v)
	}
	for s := range v {
		bar := DecoyProb(float64(f[s]), n, l, true)
		var w float64
		for a := range v {
			if a == s || f[a] == 0 {
				continue
			}
			a01 := c[a][s] / float64(runs) / (lf * float64(f[a]))
			ratio[a][s] = a01 / bar
			avg[s] += float64(f[a]) * a01
			w += float64(f[a])
		}
		avg[s] /= w * bar
	}
	return ratio, avg, nil
}

// The decoy probability per value under the randomized design. The
// row-weighted average of a01(v→s) over v ≠ s is ā01(s) exactly for any
// ℓ′-diverse grouping (each s row has ℓ′−1 partners); the test checks the
// replay reproduces it to 1e-9 (an identity of the counts, no noise). The
// spread over v is the design's: on Adult's occupation counts at ℓ′ = 5,
// a01(v→s)/ā01(s) lies in [0.89, 1.06] for every pair of values with at
// least 600 rows each (measured over 400 replays: 0.91–1.05; the Monte Carlo
// standard error of a ratio is below 0.006 for these pairs, so the bounds
// sit more than 5 se outside the measured range: false-alarm rate < 1e-6
// per pair). Anatomy's group creation on the same counts puts the ratio
// anywhere from 0 to above 4 (adult_groups_test.go).
func TestRandomDesignDecoyProbabilityPerValue(t *testing.T) {
	f := append([]int64(nil), adultCounts...)
	var n int64
	for _, x := range f {
		n += x
	}
	f[0] -= n % 5 // N a multiple of ℓ′
	ratio, avg, err := decoyRatios(f, 5, 400, rng.NewSeeded(5))
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for s := range f {
		if math.Abs(avg[s]-1) > 1e-9 {
			t.Errorf("value %d (f = %d): row-weighted a01 is %.12f·ā01, want exactly ā01", s, f[s], avg[s])
		}
		for v := range f {
			if v == s || f[v] < 600 || f[s] < 600 {
				continue
			}
			lo, hi = math.Min(lo, ratio[v][s]), math.Max(hi, ratio[v][s])
			if ratio[v][s] < 0.89 || ratio[v][s] > 1.06 {
				t.Errorf("a01(%d→%d)/ā01 = %.3f, outside [0.89, 1.06] (f_v = %d, f_s = %d)", v, s, ratio[v][s], f[v], f[s])
			}
		}
	}
	t.Logf("Adult occupation counts, ℓ′ = 5, randomized design: a01(v→s)/ā01(s) in [%.3f, %.3f] over values with ≥ 600 rows", lo, hi)
	for v := range f {
		t.Logf("  row value %2d (f = %4d): a01(v→s)/ā01(s) for s = 0..%d: %.3f", v, f[v], len(f)-1, ratio[v])
	}
}

// convergedOpt is the update estimate runs on randomized-group releases.
var convergedOpt = Options{ExactDecoy: true, Tolerance: ConvergedTolerance, MaxIter: ConvergedMaxIter}

// adultDesignQueries publishes occupation runs times at ℓ′ = l with
// grouping g and returns the queries of selectivity 2–5 % and of true
// count 1–10.
func adultDesignQueries(t testing.TB, tab *adultTable, preds []adultquery.Predicate, l, runs int, g anonymize.Grouping, seed uint64) (large, small []adultquery.Query) {
	for k := range uint64(runs) {
		pub := randomRelease(t, tab.S, tab.V, l, g, rng.NewSeeded(seed+k))
		n := float64(len(pub) - len(pub)%l)
		large = append(large, adultquery.Observe(&tab.Table, preds, pub, 0.02*n, 0.05*n)...)
		small = append(small, adultquery.Observe(&tab.Table, preds, pub, 1, 10)...)
	}
	return large, small
}

// Issue 12's table on UCI Adult at ℓ′ = 5 (occupation, the figures' pool of
// 1500 predicates combined with every occupation, 4 releases per grouping):
// mean relative error of A′ with exact a01 for {Anatomy, randomized}
// grouping × {the paper's 1 % rule, converged}.
//
// Measured with these seeds: anatomy 0.264 (1 %) / 0.324 (converged),
// random 0.253 / 0.201 at selectivity 2–5 % (3 304 queries); counts 1–10
// 3.1–4.2 everywhere (19 140 queries). The goal of ≤ 0.16 for the
// random design is not met by the 4-state estimator: the rest is the
// mechanism's noise (TestAdultRandomDesignErrorIsNoise), which no stopping
// rule removes (TestAdultDiscrepancyRuleAcrossL). Guards: the per-query sd is ≈ 0.25 and queries of one predicate
// are correlated, so the se of a mean is ≈ 0.015; each guard sits ≥ 3 se
// above its measured value and the ordering checks need a ≥ 3 se swing
// (false-alarm rate < 0.2 % each).
func TestAdultRandomDesignAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("Adult releases")
	}
	tab := loadAdult(t)
	preds := adultquery.RandomPredicates(&tab.Table, 1500, rng.NewSeeded(41))
	const l = 5
	var cells [2][2][2]float64 // [grouping][1 %, converged][large, small]
	for gi, g := range []anonymize.Grouping{anonymize.GroupingAnatomy, anonymize.GroupingRandom} {
		large, small := adultDesignQueries(t, tab, preds, l, 4, g, 700)
		for ci, opt := range []Options{{ExactDecoy: true}, convergedOpt} {
			cells[gi][ci][0] = meanRelErr(large, ibu(t, l, opt))
			cells[gi][ci][1] = meanRelErr(small, ibu(t, l, opt))
		}
		t.Logf("ℓ′ = %d, %s grouping (%d large, %d small queries): 1 %% rule %.3f / %.3f, converged %.3f / %.3f (selectivity 2–5 %% / counts 1–10)",
			l, g, len(large), len(small), cells[gi][0][0], cells[gi][0][1], cells[gi][1][0], cells[gi][1][1])
	}
	if e := cells[1][1][0]; e > 0.25 {
		t.Errorf("randomized groups, converged update: mean relative error %.3f at selectivity 2–5 %%, measured 0.201, guard 0.25", e)
	}
	if !(cells[1][1][0] < cells[1][0][0]-0.045) {
		t.Errorf("randomized groups: converged %.3f does not beat the 1 %% rule %.3f by 0.045 (measured 0.052)", cells[1][1][0], cells[1][0][0])
	}
	if !(cells[1][1][0] < cells[0][0][0]-0.045) {
		t.Errorf("randomized groups converged %.3f does not beat Anatomy's grouping at the 1 %% rule %.3f by 0.045 (measured 0.063)", cells[1][1][0], cells[0][0][0])
	}
	for gi := range 2 {
		for ci := range 2 {
			if e := cells[gi][ci][1]; e < 0.4 {
				t.Errorf("grouping %d, rule %d: mean relative error %.3f on counts 1–10, want ≥ 0.4 (small-count privacy, §9.3)", gi, ci, e)
			}
		}
	}
}

// The converged update is the maximum-likelihood estimate of the 4-state
// model. With a01 fixed, the P and P̄ halves are two binomials whose
// success probability θ = a01 + (x3/n_P)(1/ℓ′ − a01) is one-to-one in x3,
// so the MLE is the inversion (y3 − n_P·a01)/(1/ℓ′ − a01) clipped to
// [0, n_P] (PredicateMLE). The converged rule must land on it (within 1e-6
// relative) on random y, interior and boundary, for Predicate and for
// PredicateMulti with w = 1. Deterministic: no false alarms.
func TestConvergedUpdateIsTheClippedInversion(t *testing.T) {
	r := rng.NewSeeded(77)
	tried := 0
	for trial := range 3000 {
		l := 2 + r.IntN(6)
		var y [4]float64
		for i := range y {
			y[i] = float64(1 + r.IntN(2000))
		}
		n := y[0] + y[1] + y[2] + y[3]
		if y[1]+y[3] > 0.9*n/float64(l) { // keep f′_s eligible, as in a release
			continue
		}
		tried++
		a := DecoyProb(y[1]+y[3], n, l, true)
		want := func(yIn, yOut float64) float64 { // MLE of the s count of one half
			m := yIn + yOut
			return math.Min(math.Max((yIn-m*a)/(1/float64(l)-a), 0), m)
		}
		wantX3, wantX1 := want(y[3], y[2]), want(y[1], y[0])
		mle, err := PredicateMLE(y, l, true)
		if err != nil || mle != wantX3 {
			t.Fatalf("trial %d: PredicateMLE %v (%v), want %v", trial, mle, err, wantX3)
		}
		for _, multi := range []bool{false, true} {
			var e Estimate
			var err error
			if multi {
				e, err = PredicateMulti(y[:], l, convergedOpt)
			} else {
				e, err = Predicate(y, l, convergedOpt)
			}
			if err != nil {
				t.Fatal(err)
			}
			if !e.Converged {
				t.Fatalf("trial %d (y = %v, ℓ′ = %d): not converged after %d steps", trial, y, l, e.Iterations)
			}
			if math.Abs(e.X[3]-wantX3) > 1e-6*math.Max(wantX3, 1) || math.Abs(e.X[1]-wantX1) > 1e-6*math.Max(wantX1, 1) {
				t.Fatalf("trial %d (y = %v, ℓ′ = %d, multi %v): x3 = %.9g, x1 = %.9g, MLE %.9g, %.9g (%d steps)", trial, y, l, multi, e.X[3], e.X[1], wantX3, wantX1, e.Iterations)
			}
		}
	}
	if tried < 200 {
		t.Fatalf("only %d eligible draws", tried)
	}
}

// Under the randomized design, for a predicate P whose rows are a random
// subset of the table (independent of the values), the published counts
// are unbiased (E f′_s = f_s, Theorem 3) and so is the converged estimate
// of the count of P ∧ s: its mean over 400 releases (fixed seed) is within
// 4 standard errors of the truth for every s (false-alarm rate 6.3e-5 per
// check, < 1e-3 for the 12). The estimate check fails with the paper's
// a01 = f_s/N, which overstates a01 by about ℓ′/(ℓ′−1).
func TestRandomDesignEstimatorUnbiased(t *testing.T) {
	r := rng.NewSeeded(31)
	f := []int{900, 850, 700, 600, 450, 301} // N = 3801 = 3·1267: no row dropped
	const l = 3
	var s []uint32
	for v, c := range f {
		for range c {
			s = append(s, uint32(v))
		}
	}
	n := len(s)
	inP := make([]bool, n)
	truth := make([]float64, len(f))
	var nP float64
	for row := range n {
		if r.Float64() < 0.3 {
			inP[row] = true
			truth[s[row]]++
			nP++
		}
	}
	const runs = 400
	var sum, sum2, fsum, fsum2 [6]float64
	for range runs {
		pub := randomRelease(t, s, len(f), l, anonymize.GroupingRandom, r)
		var fp, yP [6]float64
		for row, x := range pub {
			fp[x]++
			if inP[row] {
				yP[x]++
			}
		}
		for v := range f {
			y := [4]float64{float64(n) - nP - (fp[v] - yP[v]), fp[v] - yP[v], nP - yP[v], yP[v]}
			e, err := Predicate(y, l, convergedOpt)
			if err != nil {
				t.Fatal(err)
			}
			sum[v] += e.Count
			sum2[v] += e.Count * e.Count
			fsum[v] += fp[v]
			fsum2[v] += fp[v] * fp[v]
		}
	}
	for v := range f {
		check := func(what string, s1, s2, want float64) {
			mean := s1 / runs
			se := math.Sqrt((s2/runs - mean*mean) / runs)
			if math.Abs(mean-want) > 4*se {
				t.Errorf("value %d: mean %s %.2f over %d releases, truth %.0f, se %.2f", v, what, mean, runs, want, se)
			}
		}
		check("published count", fsum[v], fsum2[v], float64(f[v]))
		check("converged estimate of P ∧ s", sum[v], sum2[v], truth[v])
	}
}
