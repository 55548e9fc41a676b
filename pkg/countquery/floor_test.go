package countquery

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/adultquery"
	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/rng"
)

// The Cramér–Rao algebra of NoiseFloor, checked against an independent
// computation on random queries: the Fisher information JᵀΣ⁻¹J from a
// numerical Jacobian of (E y3, E y1) in (x, z), inverted; and the
// delta-method variance of the converged estimate (PredicateMLE) from its
// numerical gradient in (y3, y1) at the expected counts, which must equal
// the bound (the MLE attains it). Both with Σ for independent rows and with
// a covariance (variance overrides). Deterministic: no false alarms.
func TestNoiseFloorIsTheInverseFisherInformation(t *testing.T) {
	r := rng.NewSeeded(8)
	for trial := range 500 {
		l := 2 + r.IntN(6)
		lf := float64(l)
		n := float64(2000 + r.IntN(100000))
		fs := math.Round((0.05 + 0.9*r.Float64()) * n / lf)
		nP := math.Round((0.02 + 0.9*r.Float64()) * n)
		lo, hi := math.Max(1, fs-(n-nP)), math.Min(nP, fs)
		if lo >= hi {
			continue
		}
		x := math.Round(lo + r.Float64()*(hi-lo))
		q := FloorQuery{N: n, NP: nP, FS: fs, X: x}
		if trial%2 == 1 { // a design's variances: some of the independent ones
			ind, err := NoiseFloor(q, l)
			if err != nil {
				t.Fatal(err)
			}
			q.VarP, q.VarPbar = ind.VarP*(0.9+0.1*r.Float64()), ind.VarPbar*(0.8+0.2*r.Float64())
		}
		fl, err := NoiseFloor(q, l)
		if err != nil {
			t.Fatalf("trial %d: %+v: %v", trial, q, err)
		}
		// Mean of (y3, y1) at (x, z) with a = ā01(x + z).
		mu := func(x, z float64) (float64, float64) {
			a := DecoyProb(x+z, n, l, true)
			return x/lf + (nP-x)*a, z/lf + (n-nP-z)*a
		}
		z := fs - x
		const h = 1e-3
		var j [2][2]float64
		for k, d := range [2][2]float64{{h, 0}, {0, h}} {
			p3, p1 := mu(x+d[0], z+d[1])
			m3, m1 := mu(x-d[0], z-d[1])
			j[0][k], j[1][k] = (p3-m3)/(2*h), (p1-m1)/(2*h)
		}
		// I = Jᵀ Σ⁻¹ J, Σ = [[V3, C], [C, V1]].
		v3, v1, c := fl.VarP, fl.VarPbar, fl.Cov
		det := v3*v1 - c*c
		si := [2][2]float64{{v1 / det, -c / det}, {-c / det, v3 / det}}
		var info [2][2]float64
		for a := range 2 {
			for b := range 2 {
				for i := range 2 {
					for k := range 2 {
						info[a][b] += j[i][a] * si[i][k] * j[k][b]
					}
				}
			}
		}
		crb := info[1][1] / (info[0][0]*info[1][1] - info[0][1]*info[1][0])
		if math.Abs(crb-fl.SD*fl.SD) > 1e-5*crb {
			t.Fatalf("trial %d (%+v, ℓ′ = %d): inverse Fisher information %.9g, NoiseFloor σ² %.9g", trial, q, l, crb, fl.SD*fl.SD)
		}
		// Delta method for the unclipped inversion at y = E y.
		y3, y1 := mu(x, z)
		est := func(y3, y1 float64) float64 {
			a := DecoyProb(y1+y3, n, l, true)
			return (y3 - nP*a) / (1/lf - a)
		}
		if e := est(y3, y1); math.Abs(e-x) > 1e-6*x {
			t.Fatalf("trial %d: the inversion at the expected counts gives %v, want %v", trial, e, x)
		}
		g3 := (est(y3+h, y1) - est(y3-h, y1)) / (2 * h)
		g1 := (est(y3, y1+h) - est(y3, y1-h)) / (2 * h)
		dm := g3*g3*v3 + g1*g1*v1 + 2*g3*g1*c
		if math.Abs(dm-fl.SD*fl.SD) > 1e-5*dm {
			t.Fatalf("trial %d (%+v, ℓ′ = %d): delta-method variance of the MLE %.9g, NoiseFloor σ² %.9g", trial, q, l, dm, fl.SD*fl.SD)
		}
		if want := math.Sqrt(2/math.Pi) * fl.SD / x; math.Abs(fl.RelErr-want) > 1e-12 {
			t.Fatalf("trial %d: RelErr %v, want %v", trial, fl.RelErr, want)
		}
	}
}

func TestNoiseFloorRefusesImpossibleQueries(t *testing.T) {
	ok := FloorQuery{N: 1000, NP: 300, FS: 150, X: 60}
	if _, err := NoiseFloor(ok, 5); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		q    FloorQuery
		l    int
		want string
	}{
		{ok, 1, "ℓ′ must be at least 2"},
		{FloorQuery{N: 1000, NP: 1000, FS: 150, X: 60}, 5, "n_P"},
		{FloorQuery{N: 1000, NP: 300, FS: 200, X: 60}, 5, "N/ℓ′"},
		{FloorQuery{N: 1000, NP: 300, FS: 150, X: 0}, 5, "n_{P,s}"},
		{FloorQuery{N: 1000, NP: 300, FS: 150, X: 160}, 5, "n_{P,s}"},
		{FloorQuery{N: 1000, NP: 990, FS: 150, X: 100}, 5, "n_{P,s}"}, // 50 s rows in 10 rows outside P
		{FloorQuery{N: 1000, NP: 300, FS: 150, X: 60, VarP: 10}, 5, "give both"},
		{FloorQuery{N: math.NaN(), NP: 300, FS: 150, X: 60}, 5, "not finite"},
	} {
		if _, err := NoiseFloor(c.q, c.l); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NoiseFloor(%+v, %d) = %v, want an error with %q", c.q, c.l, err, c.want)
		}
	}
}

// figuresQuery is one count query of make figures with the true counts of
// its predicate by value.
type figuresQuery struct {
	Pred, S int
	NPv     []float64 // rows of P by value
	Q       FloorQuery
}

// figuresQueries returns make figures' count queries of selectivity 2–5 %
// at ℓ′ = l (scripts/figures: 1500 random predicates from the stream
// "figures/anonymize/predicates" of seed 1, each × every occupation; true
// count in [0.02n, 0.05n], n the N − N mod ℓ′ published rows), with their
// true counts over the whole table, and the table's value counts.
func figuresQueries(tab *adultTable, preds []adultquery.Predicate, l int) (qs []figuresQuery, f []float64) {
	n := float64(tab.N - anonymize.DropCount(tab.N, l))
	f = make([]float64, tab.V)
	for _, s := range tab.S {
		f[s]++
	}
	for pi, p := range preds {
		npv := make([]float64, tab.V)
		for _, row := range p.Rows {
			npv[tab.S[row]]++
		}
		for s, x := range npv {
			if x < 0.02*n || x > 0.05*n {
				continue
			}
			qs = append(qs, figuresQuery{Pred: pi, S: s, NPv: npv,
				Q: FloorQuery{N: n, NP: float64(len(p.Rows)), FS: f[s], X: x}})
		}
	}
	return qs, f
}

// figuresPredicates are make figures' 1500 predicates on Adult.
func figuresPredicates(tab *adultTable) []adultquery.Predicate {
	return adultquery.RandomPredicates(&tab.Table, 1500, rng.Derive(1, "figures/anonymize/predicates"))
}

// scheduleReplays replays the randomized design runs times on counts f
// (N mod ℓ′ rows taken from the largest value, as a drop would, up to
// which value) and returns c[r][v][s], the groups holding both v and s in
// replay r, and the counts used.
func scheduleReplays(t testing.TB, f []float64, l, runs int, seed uint64) ([][][]float64, []float64) {
	t.Helper()
	cnt := make([]int64, len(f))
	var n int64
	for v, x := range f {
		cnt[v] = int64(x)
		n += cnt[v]
	}
	cnt[slices.Index(cnt, slices.Max(cnt))] -= n % int64(l)
	kept := make([]float64, len(f))
	for v, x := range cnt {
		kept[v] = float64(x)
	}
	r := rng.NewSeeded(seed)
	out := make([][][]float64, runs)
	for k := range out {
		sched, err := anonymize.NewSchedule(cnt, l, anonymize.GroupingRandom, r)
		if err != nil {
			t.Fatal(err)
		}
		c := make([][]float64, len(f))
		for v := range c {
			c[v] = make([]float64, len(f))
		}
		for _, st := range sched.Types {
			for _, a := range st.Values {
				for _, b := range st.Values {
					c[a][b] += float64(st.Groups)
				}
			}
		}
		out[k] = c
	}
	return out, kept
}

// designFloor returns the floor of query q with the design's exact
// variances from the replays c.
func designFloor(t testing.TB, q figuresQuery, f []float64, c [][][]float64, l int) Floor {
	t.Helper()
	cs := make([][]float64, len(c))
	for r := range c {
		cs[r] = make([]float64, len(f))
		for v := range f {
			cs[r][v] = c[r][v][q.S]
		}
	}
	npv := slices.Clone(q.NPv)
	for v := range npv {
		npv[v] = math.Min(npv[v], f[v]) // the replays' drop
	}
	vp, vpb, err := DesignVariances(npv, f, q.S, l, cs)
	if err != nil {
		t.Fatal(err)
	}
	dq := q.Q
	dq.VarP, dq.VarPbar = vp, vpb
	fl, err := NoiseFloor(dq, l)
	if err != nil {
		t.Fatal(err)
	}
	return fl
}

// NoiseFloor on replayed releases of the randomized design (randomRelease:
// the law of anonymize --grouping random) on UCI Adult at ℓ′ = 5, for the
// 832 queries of make figures (selectivity 2–5 %): 400 releases, the
// converged estimate (PredicateMLE) of each query in each.
//
//   - The bound is attained: the converged estimate's variance over the
//     releases divided by σ²_CR (with DesignVariances) averages 0.998 over
//     the queries, jackknife se 0.008 (10 batches of releases; queries of
//     one release are correlated, the batches are not). It must lie in
//     [0.95, 1.05]: ≥ 6 se from the measured value (false-alarm rate
//     < 1e-6 for a normal mean, still < 1e-3 allowing for the jackknife's
//     own error); a bound wrong by 2.5 % in sd fails it.
//   - The design's Var y3 (DesignVariances) is the releases': ratio 0.997,
//     se 0.011, same band [0.95, 1.05] (≥ 4.5 se, < 1e-4).
//   - Per query, for the first query of 6 values: the converged estimate's
//     variance over 400 releases is at least 0.75·σ²_CR. Its ratio is
//     χ²_399/399 for a normal error, sd 0.071; 0.75 is 3.5 sd below 1
//     (false-alarm rate 2e-4 each, 1.2e-3 for the 6).
func TestNoiseFloorMatchesReleases(t *testing.T) {
	if testing.Short() {
		t.Skip("Adult releases")
	}
	tab := loadAdult(t)
	const l = 5
	preds := figuresPredicates(tab)
	all, f := figuresQueries(tab, preds, l)
	var keep []adultquery.Predicate
	idx := map[int]int{} // figures' predicate → index in keep
	for _, q := range all {
		if _, ok := idx[q.Pred]; !ok {
			idx[q.Pred] = len(keep)
			keep = append(keep, preds[q.Pred])
		}
	}
	c, kept := scheduleReplays(t, f, l, 200, 3)
	const runs, batches = 400, 10
	type acc struct{ e, e2, y, y2 [batches]float64 }
	sums := make(map[[2]int]*acc)
	r := rng.NewSeeded(99)
	n0 := all[0].Q.N
	for k := range runs {
		pub := randomRelease(t, tab.S, tab.V, l, anonymize.GroupingRandom, r)
		// The truth over each release's rows moves by the dropped row: a
		// wider range keeps every query.
		for _, q := range adultquery.Observe(&tab.Table, keep, pub, 0.015*n0, 0.055*n0) {
			mle, err := PredicateMLE(q.Y, l, true)
			if err != nil {
				t.Fatal(err)
			}
			key := [2]int{q.Pred, int(q.S)}
			a := sums[key]
			if a == nil {
				a = &acc{}
				sums[key] = a
			}
			b := k % batches
			e := mle - q.Truth
			a.e[b] += e
			a.e2[b] += e * e
			a.y[b] += q.Y[3]
			a.y2[b] += q.Y[3] * q.Y[3]
		}
	}
	// Index batches is every batch; index b < batches leaves batch b out.
	var ratio, ratioY [batches + 1]float64
	checked := map[int]bool{}
	for _, q := range all {
		a := sums[[2]int{idx[q.Pred], q.S}]
		if a == nil {
			t.Fatalf("query %+v never observed", q.Q)
		}
		fl := designFloor(t, q, kept, c, l)
		for b := range batches + 1 {
			var e, e2, y, y2, m float64
			for bb := range batches {
				if bb != b {
					e, e2, y, y2 = e+a.e[bb], e2+a.e2[bb], y+a.y[bb], y2+a.y2[bb]
					m += runs / batches
				}
			}
			ve, vy := e2/m-(e/m)*(e/m), y2/m-(y/m)*(y/m)
			ratio[b] += ve / (fl.SD * fl.SD) / float64(len(all))
			ratioY[b] += vy / fl.VarP / float64(len(all))
			if b == batches && !checked[q.S] && len(checked) < 6 {
				checked[q.S] = true
				t.Logf("value %2d, x = %4.0f, n_P = %5.0f, f_s = %4.0f: sd over %d releases %.1f, σ_CR %.1f (rows independent %.1f, a01 known %.1f)",
					q.S, q.Q.X, q.Q.NP, q.Q.FS, runs, math.Sqrt(ve), fl.SD, mustFloor(t, q.Q, l).SD, fl.NaiveSD)
				if ve < 0.75*fl.SD*fl.SD {
					t.Errorf("value %d, x = %.0f: the converged estimate's variance %.1f is below 0.75·σ²_CR = %.1f", q.S, q.Q.X, ve, 0.75*fl.SD*fl.SD)
				}
			}
		}
	}
	jackknife := func(x [batches + 1]float64) (mean, se float64) {
		var s2 float64
		for b := range batches {
			s2 += (x[b] - x[batches]) * (x[b] - x[batches])
		}
		return x[batches], math.Sqrt(s2 * (batches - 1) / batches)
	}
	m, se := jackknife(ratio)
	my, sey := jackknife(ratioY)
	t.Logf("%d queries, %d releases: variance of the converged estimate / σ²_CR %.3f (se %.3f); variance of y3 / DesignVariances %.3f (se %.3f)", len(all), runs, m, se, my, sey)
	if m < 0.95 || m > 1.05 {
		t.Errorf("the converged estimate's variance is %.3f·σ²_CR on average (se %.3f), want within [0.95, 1.05]", m, se)
	}
	if my < 0.95 || my > 1.05 {
		t.Errorf("Var y3 over the releases is %.3f times DesignVariances' on average (se %.3f), want within [0.95, 1.05]", my, sey)
	}
}

func mustFloor(t testing.TB, q FloorQuery, l int) Floor {
	t.Helper()
	fl, err := NoiseFloor(q, l)
	if err != nil {
		t.Fatal(err)
	}
	return fl
}

// Issue 12's goal (mean relative error ≤ 0.16 at ℓ′ = 5 on Adult for the
// queries of selectivity 2–5 % of make figures) against the noise floor of
// one release: the mean over those queries of sqrt(2/π)·σ_CR/x
// (NoiseFloor with the design's exact variances, 200 replays of the
// schedule per ℓ′), next to the errors measured by make figures
// (docs/figures/anonymize_error_vs_l.csv, 3 releases per ℓ′):
//
//	ℓ′                       2      3      4      5      6      7
//	noise floor              0.042  0.077  0.124  0.197  0.330  0.682
//	measured, converged      0.044  0.076  0.123  0.206  0.321  0.600
//	measured, discrepancy    0.054  0.106  0.152  0.198  0.235  0.309
//
// The converged estimate sits on the floor up to ℓ′ = 5 (it is the
// efficient estimator, TestNoiseFloorMatchesReleases); above, clipping to
// [0, n_P] (a bias) takes it under. The discrepancy rule is biased and the
// bound does not apply to it: it reaches the floor at ℓ′ = 5 and beats it
// at 6 and 7 by shrinking.
//
// What the test asserts: at ℓ′ = 5 the mean floor is above 0.18, the goal
// plus 12 % (measured 0.197; the floor is deterministic given the seeds, and
// TestNoiseFloorMatchesReleases pins σ_CR within 2.5 %). So no unbiased
// estimator reaches 0.16 from one release at ℓ′ = 5, whatever the decoy
// grouping's details; only a biased one (shrinkage, a prior) or several
// independent releases (k of them divide the floor by sqrt(k)) can.
//
// Rows independent (NoiseFloor's default) against the design's exact
// variance: the mean ratio of Var y3 is logged per ℓ′ (0.93 at ℓ′ = 2 to
// 0.99 at 7, 0.976 at 5: the dealing without replacement within a value
// outweighs the randomness of the schedule), and the mean floor is the
// same to 3 decimals at every ℓ′: y3 and y1 are negatively correlated
// (−0.14 at ℓ′ = 2, −0.04 at 5), which makes up for it.
func TestAdultGoalIsBelowTheNoiseFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("Adult schedules")
	}
	tab := loadAdult(t)
	preds := figuresPredicates(tab)
	var at5 float64
	for l := 2; l <= 7; l++ {
		qs, f := figuresQueries(tab, preds, l)
		c, kept := scheduleReplays(t, f, l, 200, uint64(100+l))
		var floor, indep, naive, varRatio, corr float64
		for _, q := range qs {
			d := designFloor(t, q, kept, c, l)
			i := mustFloor(t, q.Q, l)
			floor += d.RelErr
			indep += i.RelErr
			naive += math.Sqrt(2/math.Pi) * i.NaiveSD / q.Q.X
			varRatio += d.VarP / i.VarP
			corr += d.Cov / math.Sqrt(d.VarP*d.VarPbar)
		}
		k := float64(len(qs))
		t.Logf("ℓ′ = %d, %d queries: mean noise floor %.3f (rows independent %.3f, a01 known %.3f); design's Var y3 / independent rows' %.3f, correlation of y3 and y1 %.3f",
			l, len(qs), floor/k, indep/k, naive/k, varRatio/k, corr/k)
		if l == 5 {
			at5 = floor / k
		}
	}
	if at5 <= 0.18 {
		t.Errorf("ℓ′ = 5: mean noise floor %.3f, measured 0.197; want > 0.18 for the goal 0.16 to be out of reach of unbiased estimators", at5)
	}
}
