package countquery

import (
	"math"
	"slices"
	"testing"

	"github.com/pramkit/pramkit/internal/adultquery"

	"github.com/pramkit/pramkit/pkg/anonymize"
	"github.com/pramkit/pramkit/pkg/rng"
)

// Why A′ misses the paper's ≈ 20 % on Adult: an experiment, not an
// estimator. Anatomy's group creation takes the ℓ′ largest buckets, so which
// values share decoy groups is decided by the bucket sizes alone: a row of
// value v shares a group with s with probability C[v][s]/f_v, where C counts
// the groups holding both. The 4-state model of Figure 3 uses one a01 for
// every row without s. Here the transition of the P rows without s is
// instead the exact mixture
//
//	a23(P, s) = Σ_{v≠s} w_v · C[v][s]/(ℓ′ f_v) / Σ_{v≠s} w_v
//
// for a composition w of those rows (and likewise a01 for the P̄ rows), with
// C from replaying the group creation on value counts.

// groupPairs replays Anatomy's group creation on value counts (not rows):
// C[a][b] is the number of groups holding both a and b (C[a][a] = f_a).
// Ties go to the smaller value index, as in anonymize.NewPartition.
func groupPairs(counts []int64, l int) [][]float64 {
	v := len(counts)
	cnt := slices.Clone(counts)
	c := make([][]float64, v)
	for i := range c {
		c[i] = make([]float64, v)
	}
	idx := make([]int, v)
	for i := range idx {
		idx[i] = i
	}
	for {
		slices.SortStableFunc(idx, func(a, b int) int {
			if cnt[a] != cnt[b] {
				if cnt[a] > cnt[b] {
					return -1
				}
				return 1
			}
			return a - b
		})
		if cnt[idx[l-1]] == 0 {
			return c
		}
		for _, a := range idx[:l] {
			for _, b := range idx[:l] {
				c[a][b]++
			}
			cnt[a]--
		}
	}
}

// capCounts makes published counts eligible (every count ≤ N/ℓ′) by moving
// the excess to the largest counts below the cap, so that the replay runs.
func capCounts(f []int64, n int64, l int) []int64 {
	f = slices.Clone(f)
	top := n / int64(l)
	var excess int64
	for i := range f {
		if f[i] > top {
			excess += f[i] - top
			f[i] = top
		}
	}
	for ; excess > 0; excess-- {
		best := -1
		for i := range f {
			if f[i] < top && (best < 0 || f[i] > f[best]) {
				best = i
			}
		}
		f[best]++
	}
	return f
}

// transitions turns C into P(publish b | true a) = C[a][b]/(ℓ′ f_a).
func transitions(c [][]float64, f []int64, l int) [][]float64 {
	tm := make([][]float64, len(f))
	for a := range tm {
		tm[a] = make([]float64, len(f))
		for b := range tm[a] {
			if f[a] > 0 {
				tm[a][b] = c[a][b] / (float64(l) * float64(f[a]))
			}
		}
	}
	return tm
}

// ibu4 runs Eq. 12 with separate a01 (P̄ rows) and a23 (P rows).
func ibu4(y [4]float64, l, a01, a23, tol float64) float64 {
	a := [4][4]float64{{1 - a01, a01, 0, 0}, {(l - 1) / l, 1 / l, 0, 0}, {0, 0, 1 - a23, a23}, {0, 0, (l - 1) / l, 1 / l}}
	x := y
	for range 100_000 {
		var ratio [4]float64
		for j := range 4 {
			var z float64
			for r := range 4 {
				z += a[r][j] * x[r]
			}
			if y[j] > 0 && z > 0 {
				ratio[j] = y[j] / z
			}
		}
		done := true
		var next [4]float64
		for i := range 4 {
			var s float64
			for j := range 4 {
				s += a[i][j] * ratio[j]
			}
			next[i] = x[i] * s
			if math.Abs(next[i]-x[i]) > tol*math.Max(x[i], 1) {
				done = false
			}
		}
		x = next
		if done {
			break
		}
	}
	return x[3]
}

// ibuV is the iterative Bayesian update over the V values of the P rows
// with transition matrix tm, stopped by the paper's 1 % rule.
func ibuV(y []float64, tm [][]float64) []float64 {
	v := len(y)
	x := slices.Clone(y)
	den := make([]float64, v)
	next := make([]float64, v)
	for range 10_000 {
		for s := range v {
			den[s] = 0
			for r := range v {
				den[s] += tm[r][s] * x[r]
			}
		}
		done := true
		for i := range v {
			var acc float64
			for s := range v {
				if y[s] > 0 && den[s] > 0 {
					acc += y[s] * tm[i][s] / den[s]
				}
			}
			next[i] = x[i] * acc
			if math.Abs(next[i]-x[i]) > DefaultTolerance*math.Max(x[i], 1) {
				done = false
			}
		}
		copy(x, next)
		if done {
			break
		}
	}
	return x
}

func TestAdultGroupPairingExplainsTheError(t *testing.T) {
	if testing.Short() {
		t.Skip("an experiment on Adult")
	}
	tab := loadAdult(t)
	preds := adultquery.RandomPredicates(&tab.Table, adultPreds, rng.NewSeeded(41))
	const l = adultL
	sum := map[string]float64{}
	var nq int
	variants := []string{
		"4-state, exact a01 (estimate's default)",
		"oracle: C from true counts, a01/a23 from the true composition",
		"C from published counts, true composition",
		"C from published counts, composition = published P rows",
		"C from published counts, V-state update (1 % rule)",
	}
	for seed := range uint64(adultRuns) {
		rel, err := anonymize.Anonymize([]anonymize.Column{{Values: tab.S, V: tab.V}}, l, rng.NewSeeded(100+seed))
		if err != nil {
			t.Fatal(err)
		}
		pub := rel.Published[0]
		n := int64(len(rel.Order))
		fTrue, fPub := make([]int64, tab.V), make([]int64, tab.V)
		for _, row := range rel.Order {
			fTrue[tab.S[row]]++
			fPub[pub[row]]++
		}
		tmTrue := transitions(groupPairs(fTrue, l), fTrue, l)
		fCap := capCounts(fPub, n, l)
		tmPub := transitions(groupPairs(fCap, l), fCap, l)
		for _, p := range preds {
			y, truth := make([]float64, tab.V), make([]float64, tab.V)
			var nP float64
			for _, row := range p.Rows {
				if pub[row] != anonymize.NotPublished {
					y[pub[row]]++
					truth[tab.S[row]]++
					nP++
				}
			}
			var xV []float64
			for s := range tab.V {
				if truth[s] < 0.02*float64(n) || truth[s] > 0.05*float64(n) {
					continue
				}
				if xV == nil {
					xV = ibuV(y, tmPub)
				}
				mix := func(w []float64, tm [][]float64) float64 {
					var num, den float64
					for v := range tab.V {
						if v != s {
							num += w[v] * tm[v][s]
							den += w[v]
						}
					}
					return num / den
				}
				rest, trueRest := make([]float64, tab.V), make([]float64, tab.V)
				for v := range tab.V {
					rest[v] = float64(fPub[v]) - y[v]
					trueRest[v] = float64(fTrue[v]) - truth[v]
				}
				yy := [4]float64{float64(n) - nP - (float64(fPub[s]) - y[s]), float64(fPub[s]) - y[s], nP - y[s], y[s]}
				exact, err := Predicate(yy, l, Options{ExactDecoy: true})
				if err != nil {
					t.Fatal(err)
				}
				est := []float64{
					exact.Count,
					ibu4(yy, l, mix(trueRest, tmTrue), mix(truth, tmTrue), 1e-9),
					ibu4(yy, l, mix(trueRest, tmPub), mix(truth, tmPub), 1e-9),
					ibu4(yy, l, mix(rest, tmPub), mix(y, tmPub), 1e-9),
					xV[s],
				}
				for i, e := range est {
					sum[variants[i]] += math.Abs(e-truth[s]) / truth[s]
				}
				nq++
			}
		}
	}
	t.Logf("Adult, occupation, ℓ′ = %d, %d queries of selectivity 2–5 %%, mean relative error:", l, nq)
	for _, v := range variants {
		sum[v] /= float64(nq)
		t.Logf("  %-64s %.3f", v, sum[v])
	}
	// The explanation holds if knowing the pairing and the composition
	// removes most of the gap to the paper's ≈ 20 % (measured 0.202 and
	// 0.221 against 0.264).
	if !(sum[variants[1]] < 0.23 && sum[variants[2]] < sum[variants[0]]-0.02) {
		t.Errorf("the group-pairing model does not explain the error: %v", sum)
	}
}
