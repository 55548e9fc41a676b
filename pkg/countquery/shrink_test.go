package countquery

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/adultquery"
	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/release"
	"github.com/pramkit/pramkit/pkg/rng"
)

// ShrinkPredicate on hand-made counts. Deterministic: no false alarms.
//   - Every estimate lies between x₀_v = n_P·f′_v/N and the converged
//     estimate (PredicateMLE), with one weight w for all values:
//     x̃_v − x₀_v = w·(x̂_v − x₀_v), w in [0, 1], and w = max(0, 1 −
//     (p − 3)/S) recomputed here.
//   - Three values or fewer: the converged estimates, unshrunk.
//   - P distributed exactly like the table (y_P ∝ f′): the estimates are
//     x₀ (S = 0, w = 0).
//   - A value no row publishes gets 0; a value at f′ = N/ℓ′ gets x₀.
func TestShrinkPredicateIsJamesSteinTowardIndependence(t *testing.T) {
	mle := func(yP, f []float64, v, l int) float64 {
		var n, nP float64
		for k := range f {
			n, nP = n+f[k], nP+yP[k]
		}
		y := [4]float64{n - nP - (f[v] - yP[v]), f[v] - yP[v], nP - yP[v], yP[v]}
		x, err := PredicateMLE(y, l, true)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	r := rng.NewSeeded(12)
	var few, many, between int
	for trial := range 400 {
		k := 3 + r.IntN(11)
		f := make([]float64, k)
		yP := make([]float64, k)
		var n, fmax float64
		for v := range f {
			f[v] = float64(100 + r.IntN(2000))
			yP[v] = math.Floor(r.Float64() * f[v] * 0.4)
			n += f[v]
			fmax = math.Max(fmax, f[v])
		}
		// The largest ℓ′ ≤ 4 that keeps every value below N/ℓ′.
		l := min(4, int(math.Ceil(n/fmax))-1)
		if l < 2 {
			continue
		}
		got, err := ShrinkPredicate(yP, f, l)
		if err != nil {
			t.Fatal(err)
		}
		var nP float64
		for v := range f {
			nP += yP[v]
		}
		var s float64
		xh := make([]float64, k)
		for v := range f {
			xh[v] = mle(yP, f, v, l)
			d := xh[v] - nP*f[v]/n
			s += d * d / inversionVariance(n, nP, f[v], xh[v], l)
		}
		w := 1.0
		if k > 3 {
			w = math.Max(0, 1-float64(k-3)/s)
			many++
			if w > 0 && w < 1 {
				between++
			}
		} else {
			few++
		}
		for v := range f {
			x0 := nP * f[v] / n
			if want := x0 + w*(xh[v]-x0); math.Abs(got[v]-want) > 1e-9*math.Max(1, want) {
				t.Fatalf("trial %d, %d values, ℓ′ = %d, value %d: %v, want x₀ %v + w %v·(x̂ %v − x₀) = %v", trial, k, l, v, got[v], x0, w, xh[v], want)
			}
		}
	}
	if few < 10 || many < 100 || between < 20 {
		t.Fatalf("only %d trials with 3 values, %d with more, %d of them with 0 < w < 1", few, many, between)
	}
	const l = 4
	// P distributed like the table: nothing to keep of the estimates.
	f := []float64{240, 230, 200, 150, 100, 80} // N/ℓ′ = 250
	yP := []float64{24, 23, 20, 15, 10, 8}
	got, err := ShrinkPredicate(yP, f, l)
	if err != nil {
		t.Fatal(err)
	}
	for v := range f {
		if math.Abs(got[v]-yP[v]) > 1e-9 {
			t.Errorf("P like the table: value %d estimated %v, want x₀ = %v", v, got[v], yP[v])
		}
	}
	// A value no row publishes, and one at N/ℓ′ (N = 1200: 300).
	f = []float64{300, 0, 290, 250, 200, 160}
	yP = []float64{50, 0, 90, 10, 30, 20}
	got, err = ShrinkPredicate(yP, f, l)
	if err != nil {
		t.Fatal(err)
	}
	if got[1] != 0 || math.Abs(got[0]-200*300/1200.0) > 1e-9 {
		t.Errorf("f′ = 0 gives %v (want 0), f′ = N/ℓ′ gives %v (want x₀ = 50)", got[1], got[0])
	}
	for _, c := range []struct {
		yP, f []float64
		l     int
		want  string
	}{
		{[]float64{1, 2}, []float64{10, 10}, 1, "ℓ′ must be at least 2"},
		{[]float64{1}, []float64{10, 10}, 3, "1 counts in P but 2"},
		{[]float64{11, 2}, []float64{10, 10}, 3, "value 0"},
		{[]float64{1, math.NaN()}, []float64{10, 10}, 3, "value 1"},
		{[]float64{0, 0}, []float64{0, 0}, 3, "no rows"},
	} {
		if _, err := ShrinkPredicate(c.yP, c.f, c.l); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ShrinkPredicate(%v, %v, %d) = %v, want an error with %q", c.yP, c.f, c.l, err, c.want)
		}
	}
}

// ShrinkPredicate on UCI Adult with random decoy groups (occupation;
// make figures' 1500 predicates, each with all 15 occupations; 3
// releases per ℓ′ from randomRelease, the law of anonymize --grouping
// random, with seeds used by no other test): mean relative error at
// selectivity 2–5 % (large) and on counts 1–10 (small), next to the
// converged update (PredicateMLE, efficient: it attains the floor,
// TestNoiseFloorMatchesReleases), the discrepancy rule (estimate's auto)
// and NoiseFloor's mean over the same queries. Measured with these seeds:
//
//	ℓ′                      2      3      4      5      6      7      sum
//	noise floor (unbiased)  0.042  0.077  0.124  0.197  0.330  0.682
//	converged               0.041  0.072  0.122  0.184  0.377  0.573  1.369
//	discrepancy             0.057  0.099  0.148  0.192  0.259  0.294  1.048
//	shrink                  0.040  0.072  0.120  0.169  0.266  0.303  0.970
//	small counts, shrink    1.12   2.00   2.83   3.39   3.61   3.69
//
// Shrinking gains nothing at ℓ′ = 2–3 (the noise is small, w ≈ 1), 8 %
// against converged at ℓ′ = 5, and at ℓ′ = 6–7 it is as good as the
// discrepancy rule (within 0.01) where converging is far worse. Issue 12's
// 0.16 at ℓ′ = 5 is still not met. Counts of 1–10 keep errors above 1.
//
// The estimator and its one choice (shrinking the clipped estimates, not
// the unclipped inversion: same at ℓ′ ≤ 5, better at 7) were picked on
// the releases of TestAdultDiscrepancyRuleAcrossL and checked on a second
// set (figures' predicates, other releases) before these seeds were run:
// ℓ′ = 5 gave shrink 0.172 / 0.175 against converged 0.197 / 0.197 there.
// Guards (paired differences: same queries, same releases; se with the
// predicates as clusters, logged):
//   - ℓ′ = 5: shrink − converged < 0 (measured −0.015, se 0.004: 3.7 se);
//   - every ℓ′: shrink − converged < 0.005 (≥ 4 se from each measured
//     value);
//   - sum over ℓ′ of shrink − discrepancy < 0 (−0.078, se 0.008);
//   - ℓ′ = 5: shrink below the floor (0.169 and, on the two other sets,
//     0.172 and 0.175 against 0.197);
//   - counts 1–10: error ≥ 0.4 at every ℓ′ (§9.3's small-count privacy;
//     measured ≥ 1.1).
//
// False-alarm rate < 0.2 % for each of the first three (normal means),
// the last two far from their guards.
func TestAdultShrinkBeatsTheNoiseFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("Adult releases")
	}
	tab := loadAdult(t)
	preds := figuresPredicates(tab)
	disc := Options{ExactDecoy: true, Tolerance: ConvergedTolerance, MaxIter: ConvergedMaxIter, Discrepancy: true}
	var sumShrink, sumDisc, sumSeDisc float64
	for l := 2; l <= 7; l++ {
		fq, _ := figuresQueries(tab, preds, l)
		var floor float64
		for _, q := range fq {
			floor += mustFloor(t, q.Q, l).RelErr / float64(len(fq))
		}
		var errL, errS [3]float64 // converged, discrepancy, shrink
		var nl, ns float64
		// Paired differences shrink − converged and shrink − discrepancy,
		// summed per predicate (the cluster) over the releases.
		dConv := make([]float64, len(preds))
		dDisc := make([]float64, len(preds))
		size := make([]float64, len(preds))
		for k := range uint64(3) {
			pub := randomRelease(t, tab.S, tab.V, l, anonymize.GroupingRandom, rng.NewSeeded(31000+uint64(100*l)+k))
			n := float64(len(pub) - len(pub)%l)
			all := adultquery.Observe(&tab.Table, preds, pub, math.Inf(-1), math.Inf(1))
			for lo := 0; lo < len(all); lo += tab.V {
				qs := all[lo : lo+tab.V]
				yP := make([]float64, tab.V)
				f := make([]float64, tab.V)
				for _, q := range qs {
					if q.Pred != qs[0].Pred {
						t.Fatal("Observe did not return every value of a predicate together")
					}
					yP[q.S], f[q.S] = q.Y[3], q.Y[1]+q.Y[3]
				}
				shrunk, err := ShrinkPredicate(yP, f, l)
				if err != nil {
					t.Fatal(err)
				}
				for _, q := range qs {
					x := q.Truth
					large := x >= 0.02*n && x <= 0.05*n
					if !large && !(x >= 1 && x <= 10) {
						continue
					}
					conv, err := PredicateMLE(q.Y, l, true)
					if err != nil {
						t.Fatal(err)
					}
					d, err := Predicate(q.Y, l, disc)
					if err != nil {
						t.Fatal(err)
					}
					e := [3]float64{math.Abs(conv-x) / x, math.Abs(d.Count-x) / x, math.Abs(shrunk[q.S]-x) / x}
					if !large {
						ns++
						for i := range e {
							errS[i] += e[i]
						}
						continue
					}
					nl++
					for i := range e {
						errL[i] += e[i]
					}
					size[q.Pred]++
					dConv[q.Pred] += e[2] - e[0]
					dDisc[q.Pred] += e[2] - e[1]
				}
			}
		}
		for i := range errL {
			errL[i] /= nl
			errS[i] /= ns
		}
		// The cluster-robust se of a mean of paired differences: each
		// predicate's total minus its size times the mean.
		se := func(d []float64, mean float64) float64 {
			var ss, c float64
			for i, x := range d {
				if size[i] > 0 {
					ss += (x - size[i]*mean) * (x - size[i]*mean)
					c++
				}
			}
			return math.Sqrt(ss*c/(c-1)) / nl
		}
		mConv, mDisc := errL[2]-errL[0], errL[2]-errL[1]
		seConv, seDisc := se(dConv, mConv), se(dDisc, mDisc)
		t.Logf("ℓ′ = %d (%d large / %d small queries): floor %.3f; converged %.3f / %.2f, discrepancy %.3f / %.2f, shrink %.3f / %.2f; shrink − converged %+.3f (se %.3f), shrink − discrepancy %+.3f (se %.3f)",
			l, int(nl), int(ns), floor, errL[0], errS[0], errL[1], errS[1], errL[2], errS[2], mConv, seConv, mDisc, seDisc)
		sumShrink += errL[2]
		sumDisc += errL[1]
		sumSeDisc += seDisc * seDisc
		if errS[2] < 0.4 {
			t.Errorf("ℓ′ = %d: shrink's mean relative error on counts 1–10 is %.3f, want ≥ 0.4", l, errS[2])
		}
		if mConv > 0.005 {
			t.Errorf("ℓ′ = %d: shrink is worse than converged by %.3f (se %.3f)", l, mConv, seConv)
		}
		if l == 5 && mConv >= 0 {
			t.Errorf("ℓ′ = 5: shrink − converged %+.3f (se %.3f), want < 0", mConv, seConv)
		}
		if l == 5 && errL[2] >= floor {
			t.Errorf("ℓ′ = 5: shrink %.3f is not below the noise floor %.3f", errL[2], floor)
		}
	}
	t.Logf("sum over ℓ′ = 2..7: shrink %.3f, discrepancy %.3f (difference se %.3f)", sumShrink, sumDisc, math.Sqrt(sumSeDisc))
	if sumShrink >= sumDisc {
		t.Errorf("summed over ℓ′ = 2..7, shrink %.3f is not below discrepancy %.3f", sumShrink, sumDisc)
	}
}

// The planner with Options.Shrink: a query of P and one sensitive value is
// ShrinkPredicate on the counts of every value of the column among P's
// rows, gathered row by row here, whichever values the queries name (one
// query of P or several); a lone sensitive value is still f′_s and a query
// of two sensitive values still the update. A plan made without the
// counts of every value, or the paper's a01, is refused. Deterministic: no
// false alarms.
func TestPlanShrinkIsShrinkPredicateOnTheRows(t *testing.T) {
	syn := newPlanSynth(t, 3000, release.MechanismDiverted)
	opt := Options{Tolerance: ConvergedTolerance, MaxIter: ConvergedMaxIter, ExactDecoy: true, Shrink: true}
	plan := func(queries []string, opt Options, shrinkCounts bool) *Plan {
		in := syn.reader(t, syn.rows)
		var qs []Query
		for _, s := range queries {
			conds, err := Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			qs = append(qs, Query{Text: s, Conds: conds})
		}
		popt := opt
		popt.Shrink = shrinkCounts
		p, err := NewPlanFor(syn.rel, in.Schema(), nil, qs, "q.csv", popt)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.ScanRelease(in, nil); err != nil {
			t.Fatal(err)
		}
		return p
	}
	answer := func(queries []string) []Answer {
		a, err := plan(queries, opt, true).Answers(opt)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	// brute: the shrunk estimate of query "P,s=v" from the rows.
	labels := syn.rel.Columns[0].Labels()
	brute := func(pred map[string]string, value string) float64 {
		yP := make([]float64, len(labels))
		f := make([]float64, len(labels))
		for _, r := range syn.rows {
			v := slices.Index(labels, r[2])
			f[v]++
			if (pred["a"] == "" || pred["a"] == r[0]) && (pred["b"] == "" || pred["b"] == r[1]) {
				yP[v]++
			}
		}
		x, err := ShrinkPredicate(yP, f, syn.rel.L)
		if err != nil {
			t.Fatal(err)
		}
		return x[slices.Index(labels, value)]
	}
	queries := []string{"a=y,s=s1", "a=y,s=s2", "b=p,s=s1", "a=z,b=p,s=s3", "s=s1", "a=x,s=s0,u=u1"}
	got := answer(queries)
	for i, c := range []struct {
		pred  map[string]string
		value string
	}{{map[string]string{"a": "y"}, "s1"}, {map[string]string{"a": "y"}, "s2"}, {map[string]string{"b": "p"}, "s1"}, {map[string]string{"a": "z", "b": "p"}, "s3"}} {
		want := brute(c.pred, c.value)
		if math.Abs(got[i].Estimate-want) > 1e-9*math.Max(1, want) {
			t.Errorf("%q: plan %v, ShrinkPredicate on the rows %v", queries[i], got[i].Estimate, want)
		}
		if one := answer([]string{queries[i]})[0]; math.Abs(one.Estimate-got[i].Estimate) > 1e-9*math.Max(1, want) {
			t.Errorf("%q: alone %v, among others %v", queries[i], one.Estimate, got[i].Estimate)
		}
	}
	unshrunk := Options{Tolerance: ConvergedTolerance, MaxIter: ConvergedMaxIter, ExactDecoy: true}
	for i := 4; i < 6; i++ {
		if want := syn.brute(t, queries[i], unshrunk); math.Abs(got[i].Estimate-want) > 1e-9*math.Max(1, want) {
			t.Errorf("%q: plan with Shrink %v, without %v", queries[i], got[i].Estimate, want)
		}
	}
	if got[0].Estimate == syn.brute(t, queries[0], unshrunk) {
		t.Errorf("%q: Shrink left the converged estimate %v unchanged", queries[0], got[0].Estimate)
	}
	if _, err := plan(queries[:1], opt, false).Answers(opt); err == nil || !strings.Contains(err.Error(), "NewPlanFor") {
		t.Errorf("Shrink on a plan without every value's counts: %v", err)
	}
	paper := opt
	paper.ExactDecoy = false
	if _, err := plan(queries[:1], paper, true).Answers(paper); err == nil || !strings.Contains(err.Error(), "exact a01") {
		t.Errorf("Shrink with the paper's a01: %v", err)
	}
}
