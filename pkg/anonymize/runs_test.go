package anonymize

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/pramkit/pramkit/pkg/rng"
)

// perGroupSets is the random grouping as issue 12 first defined it and as
// randomSets did before its runs: one draw per group. The reference for
// TestRandomRunsArePerGroupUpToT and TestRandomRunsDecoyProbability.
func perGroupSets(counts []int64, l int, groups int64, r *rand.Rand, b *setBag) error {
	cnt := slices.Clone(counts)
	free := newUrn(cnt)
	set := make([]uint32, l)
	f := 0
	for n := groups; n > 0; n-- {
		for {
			v, c := free.largest()
			if c < n {
				break
			}
			if c > n || f == l {
				return errGrouping
			}
			set[f] = uint32(v)
			f++
			free.set(v, 0)
		}
		for i := f; i < l; i++ {
			total := free.total()
			if total <= 0 {
				return errGrouping
			}
			v := free.find(r.Int64N(total))
			set[i] = uint32(v)
			free.set(v, 0)
		}
		b.add(set, 1)
		for _, v := range set {
			cnt[v]--
		}
		for _, v := range set[f:] {
			free.set(int(v), cnt[v])
		}
	}
	return nil
}

func sumCounts(c []int64) int64 {
	var n int64
	for _, x := range c {
		n += x
	}
	return n
}

// TestRandomRunsProperties: with T (the runs aimed at) far below the
// groups, so that runs are longer than one group, the random grouping
// still gives groups of ℓ′ distinct values that use the counts exactly,
// never gets stuck, and records at most T + V + ℓ′ + 1 runs — over random
// count vectors including the extreme eligible ones, where up to ℓ′ values
// have count N/ℓ′ and are forced into every group.
func TestRandomRunsProperties(t *testing.T) {
	r := rng.NewSeeded(1212)
	cases, long, short := 0, 0, 0
	for trial := range 4000 {
		l := 2 + r.IntN(6)
		v := l + r.IntN(40)
		groups := int64(1 + r.IntN(600))
		f := 0
		if trial%3 != 0 {
			f = 1 + r.IntN(l) // 1..ℓ′ values at the boundary
		}
		counts := randomCounts(r, groups, v, l, f)
		if counts == nil {
			continue
		}
		cases++
		T := int64(1 + r.IntN(30))
		b := newSetBag(l, v)
		if err := randomSetsRuns(counts, l, groups, T, r, b); err != nil {
			t.Fatalf("counts %v, ℓ′ = %d, T = %d: %v", counts, l, T, err)
		}
		s := &Schedule{L: l, V: v, Grouping: GroupingRandom, Types: b.types()}
		checkSchedule(t, s, counts, l)
		if bound := T + int64(v+l) + 1; b.adds > bound || int64(len(s.Types)) > bound {
			t.Fatalf("counts %v, ℓ′ = %d, T = %d: %d runs, %d types, more than T + V + ℓ′ + 1 = %d", counts, l, T, b.adds, len(s.Types), bound)
		}
		k := (groups + T - 1) / T
		if k > 1 {
			long++
			if b.adds > (groups+k-1)/k {
				short++ // some run ended before k groups
			}
		}
	}
	if cases < 2000 || long < 1000 || short < 200 {
		t.Fatalf("only %d eligible count vectors, %d with k > 1, %d with runs cut short", cases, long, short)
	}
}

// TestRandomRunsArePerGroupUpToT: with at most T groups, the random
// grouping is the per-group draw, draw for draw: same schedule and same
// consumption of the random stream (so seeded releases of tables of up to
// T·ℓ′ rows, Adult's among them, are unchanged). Above T it is not.
func TestRandomRunsArePerGroupUpToT(t *testing.T) {
	r := rng.NewSeeded(99)
	check := func(counts []int64, l int, seed uint64) bool {
		t.Helper()
		groups := sumCounts(counts) / int64(l)
		a, b := rng.NewSeeded(seed), rng.NewSeeded(seed)
		ba, bb := newSetBag(l, len(counts)), newSetBag(l, len(counts))
		if err := randomSets(counts, l, groups, a, ba); err != nil {
			t.Fatal(err)
		}
		if err := perGroupSets(counts, l, groups, b, bb); err != nil {
			t.Fatal(err)
		}
		same := slices.EqualFunc(ba.types(), bb.types(), func(x, y SetType) bool {
			return x.Groups == y.Groups && slices.Equal(x.Values, y.Values)
		})
		return same && a.Uint64() == b.Uint64()
	}
	for trial := range 300 {
		l := 2 + r.IntN(6)
		v := l + r.IntN(70) // both urn modes (flat up to 64 values)
		groups := int64(1 + r.IntN(3000))
		counts := randomCounts(r, groups, v, l, trial%2)
		if counts == nil {
			continue
		}
		if !check(counts, l, uint64(trial)) {
			t.Fatalf("counts %v, ℓ′ = %d (%d ≤ T groups): schedule or stream differs from the per-group draw", counts, l, groups)
		}
	}
	// Exactly T groups, and T + 1 (k = 2: runs of two groups).
	for _, extra := range []int64{0, 1} {
		groups := randomRuns + extra
		counts := make([]int64, 15)
		for i := range 5 * groups {
			counts[i%15]++
		}
		if got := check(counts, 5, 7); got != (extra == 0) {
			t.Errorf("%d groups, T = %d: equal to the per-group draw = %v, want %v", groups, randomRuns, got, extra == 0)
		}
	}
}

// heapInUse returns the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// col60 returns the counts of a 60-value column of n rows (the bench's
// "job": 15 skewed occupations × 4) after the drop of n mod l rows.
func col60(n int64, l int) []int64 {
	counts := make([]int64, 60)
	var sum int64
	for v := range counts {
		counts[v] = int64(skewedShares[v/4] / 4 * float64(n))
		sum += counts[v]
	}
	counts[0] += n - sum
	counts[0] -= n % int64(l)
	return counts
}

// TestRandomScheduleMemoryBounded: the random grouping's schedule and
// pass 2's dealer for 4M rows of a 60-value column at ℓ′ = 5 (800,000
// groups, C(60, 5) = 5.5M possible sets) hold at most T + V + ℓ′ + 1 set types
// and a few MB, not one type per group (the per-group draw kept ≈ 800,000
// types, 238 MB for anonymize in all). The heap figure is measured, with
// the collector run before each reading; the bound is 3× the measured
// 4.5 MB.
func TestRandomScheduleMemoryBounded(t *testing.T) {
	const l = 5
	counts := col60(4_000_000, l)
	before := heapInUse()
	s, err := NewSchedule(counts, l, GroupingRandom, rng.NewSeeded(3))
	if err != nil {
		t.Fatal(err)
	}
	d := NewDealer(s)
	used := int64(heapInUse()) - int64(before)
	runtime.KeepAlive(d)
	checkSchedule(t, s, counts, l)
	if bound := randomRuns + 60 + l + 1; int64(len(s.Types)) > bound {
		t.Errorf("%d set types, more than T + V + ℓ′ + 1 = %d", len(s.Types), bound)
	}
	t.Logf("4M rows, V = 60, ℓ′ = 5: %d groups, %d set types, schedule + dealer %.1f MB (%.0f bytes per type)",
		s.Groups(), len(s.Types), float64(used)/(1<<20), float64(used)/float64(len(s.Types)))
	if used > 14<<20 {
		t.Errorf("schedule + dealer hold %.1f MB, more than 14 MB", float64(used)/(1<<20))
	}
}

// decoyStats replays a grouping reps times on counts and returns, per pair
// (v, s), the decoy probability over its design average,
// a01(v→s)/ā01(s) with a01(v→s) = E[C_vs]/(ℓ′ f_v) (package countquery,
// "The decoy probability a01"), and the per-release coefficient of
// variation of C_vs, sd/mean.
func decoyStats(t *testing.T, counts []int64, l int, reps int, sets func(b *setBag) error) (ratio, cv [][]float64) {
	t.Helper()
	v := len(counts)
	sum := make([][]float64, v)
	sq := make([][]float64, v)
	c := make([][]float64, v)
	for i := range v {
		sum[i], sq[i], c[i] = make([]float64, v), make([]float64, v), make([]float64, v)
	}
	for range reps {
		b := newSetBag(l, v)
		if err := sets(b); err != nil {
			t.Fatal(err)
		}
		for i := range c {
			clear(c[i])
		}
		for _, st := range b.types() {
			for _, x := range st.Values {
				for _, y := range st.Values {
					c[x][y] += float64(st.Groups)
				}
			}
		}
		for x := range v {
			for y := range v {
				sum[x][y] += c[x][y]
				sq[x][y] += c[x][y] * c[x][y]
			}
		}
	}
	n := float64(sumCounts(counts))
	lf := float64(l)
	ratio, cv = make([][]float64, v), make([][]float64, v)
	for x := range v {
		ratio[x], cv[x] = make([]float64, v), make([]float64, v)
		for y := range v {
			if x == y || counts[x] == 0 || counts[y] == 0 {
				continue
			}
			mean := sum[x][y] / float64(reps)
			bar := float64(counts[y]) * (lf - 1) / (lf * (n - float64(counts[y])))
			ratio[x][y] = mean / (lf * float64(counts[x])) / bar
			cv[x][y] = math.Sqrt(max(0, sq[x][y]/float64(reps)-mean*mean)) / mean
		}
	}
	return ratio, cv
}

// TestRandomRunsDecoyProbability measures what the runs cost against the
// per-group draw on the same counts: the decoy probability a01(v→s) =
// E[C_vs]/(ℓ′ f_v) over its design average ā01(s), whose spread the
// estimator's bias depends on, and the per-release variability of C_vs. A
// 60-value column of 200,000 rows at ℓ′ = 5 (40,000 groups) with T = 800
// has runs of k = 50 groups, as 4M rows have with the shipped T = 2^14
// (k = 49). 150 per-group releases and 7,500 run releases, so that a
// pair's ratio has a standard error ≈ 0.006 in both.
//
// Measured: a01(v→s)/ā01(s) in [0.963, 1.024] per group and [0.944,
// 1.030] with runs; the pairs' differences are noise (mean z² 1.04, z the
// difference over its standard error): the runs leave E[C_vs], hence the
// a01 the estimator needs, as it was. What they change is the variability
// of C_vs from one release to the next: its coefficient of variation
// averages 0.074 per group and 0.53 with runs, ×7.1 = √k, that of a
// schedule of T = 800 independent draws. Guards: mean z² ≤ 1.3 (1770
// distinct pairs, sd of the mean ≈ 0.034 under independence: false-alarm
// rate < 1e-6), and the CV ratio within [√k/2, 2√k].
func TestRandomRunsDecoyProbability(t *testing.T) {
	if testing.Short() {
		t.Skip("7,650 schedules")
	}
	const l, repsG, repsR, T = 5, 150, 7500, 800
	counts := col60(200_000, l)
	groups := sumCounts(counts) / l
	k := (groups + T - 1) / T
	rg, rr := rng.NewSeeded(31), rng.NewSeeded(32)
	ratioG, cvG := decoyStats(t, counts, l, repsG, func(b *setBag) error { return perGroupSets(counts, l, groups, rg, b) })
	ratioR, cvR := decoyStats(t, counts, l, repsR, func(b *setBag) error { return randomSetsRuns(counts, l, groups, T, rr, b) })
	loG, hiG, loR, hiR := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	var z2, sumG, sumR float64
	pairs := 0
	for v := range counts {
		for s := range counts {
			if v == s {
				continue
			}
			loG, hiG = min(loG, ratioG[v][s]), max(hiG, ratioG[v][s])
			loR, hiR = min(loR, ratioR[v][s]), max(hiR, ratioR[v][s])
			se := math.Hypot(cvG[v][s]*ratioG[v][s]/math.Sqrt(repsG), cvR[v][s]*ratioR[v][s]/math.Sqrt(repsR))
			z := (ratioR[v][s] - ratioG[v][s]) / se
			z2 += z * z
			sumG += cvG[v][s]
			sumR += cvR[v][s]
			pairs++
		}
	}
	z2 /= float64(pairs)
	mG, mR := sumG/float64(pairs), sumR/float64(pairs)
	t.Logf("60 values, %d groups, ℓ′ = %d, runs of k = %d: a01(v→s)/ā01(s) in [%.3f, %.3f] per group, [%.3f, %.3f] with runs; differences: mean z² %.2f",
		groups, l, k, loG, hiG, loR, hiR, z2)
	t.Logf("per-release CV of C_vs: %.3f per group, %.3f with runs (×%.1f; √k = %.1f)", mG, mR, mR/mG, math.Sqrt(float64(k)))
	if z2 > 1.3 {
		t.Errorf("runs change E[C_vs]: mean z² %.2f over %d pairs, guard 1.3", z2, pairs)
	}
	if q, sk := mR/mG, math.Sqrt(float64(k)); q < sk/2 || q > 2*sk {
		t.Errorf("CV ratio %.2f outside [√k/2, 2√k] = [%.1f, %.1f]", q, sk/2, 2*sk)
	}
}

// BenchmarkRandomScheduleTypes reports the schedule's and dealer's bytes
// per set type (per-group draw, 60 values, ℓ′ = 5, one type per group
// nearly), the figure randomRuns is chosen from.
func BenchmarkRandomScheduleTypes(b *testing.B) {
	const l = 5
	counts := col60(1_000_000, l)
	groups := sumCounts(counts) / l
	for b.Loop() {
		before := heapInUse()
		bag := newSetBag(l, len(counts))
		if err := perGroupSets(counts, l, groups, rng.NewSeeded(1), bag); err != nil {
			b.Fatal(err)
		}
		s := &Schedule{L: l, V: len(counts), Grouping: GroupingRandom, Types: bag.types()}
		d := NewDealer(s)
		used := float64(heapInUse() - before)
		runtime.KeepAlive(d)
		b.ReportMetric(used/float64(len(s.Types)), "B/type")
		b.ReportMetric(float64(len(s.Types)), "types")
	}
}

// withRuns sets T (randomRuns) for the rest of the test.
func withRuns(t *testing.T, runs int64) {
	old := randomRuns
	randomRuns = runs
	t.Cleanup(func() { randomRuns = old })
}

// TestRandomRunsScheduleLaw: with runs longer than one group (T = 2), the
// random grouping's schedule follows the law of its definition — a set
// drawn as for one group serves k′ = min(k, n, min_{v∈set} cnt(v),
// n − max_{v∉set} cnt(v)) groups — checked by a chi-square test against the
// exact law from the draw tree. 20,000 schedules per vector; false-alarm
// rate 1e-6 per vector.
func TestRandomRunsScheduleLaw(t *testing.T) {
	withRuns(t, 2)
	r := rng.NewSeeded(2027)
	for _, c := range []struct {
		counts []int64
		l      int
	}{
		{[]int64{3, 2, 2, 1}, 2},             // 4 groups, k = 2
		{[]int64{4, 2, 1, 1}, 2},             // value 0 forced in every group
		{[]int64{3, 3, 2, 2, 2, 3}, 3},       // 5 groups, k = 3: runs cut by the bound
		{[]int64{5, 4, 3, 2, 2, 2, 1, 1}, 4}, // 5 groups, ℓ′ = 4
	} {
		groups := sumCounts(c.counts) / int64(c.l)
		exact := exactRunSchedules(c.counts, c.l, (groups+1)/2)
		assertScheduleLaw(t, fmt.Sprintf("run schedule of %v, ℓ′ = %d, T = 2", c.counts, c.l), c.counts, c.l, exact, r)
	}
}

// TestStreamMatchesMemoryWithRuns: with runs of several groups (T = 2 on a
// 35-row table at ℓ′ = 3: 11 groups, k = 6), the per-row law of (true
// value, decoy set, published value) is the same for streaming and
// in-memory A′ with the random grouping, as TestStreamMatchesMemoryPerRow
// checks for single-group runs. Two-sample chi-square on 3,000 runs each,
// false-alarm rate 1e-4.
func TestStreamMatchesMemoryWithRuns(t *testing.T) {
	withRuns(t, 2)
	counts := []int{9, 8, 6, 5, 3, 2, 1, 1}
	var s []uint32
	for x, c := range counts {
		for range c {
			s = append(s, uint32(x))
		}
	}
	const l = 3
	a, b := perRowLaws(t, s, len(counts), l, GroupingRandom, rng.NewSeeded(98))
	twoSample(t, "random, T = 2: per row", a, b, 1e-4)
}
