package anonymize

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/rng"
)

// streamRun runs streaming A′ (Plan) on one column and returns, per row,
// the value set of its slot (fmt of the sorted values, "dropped" for a
// dropped row) and its published value (NotPublished when dropped).
func streamRun(t *testing.T, s []uint32, v, l int, g Grouping, r *rand.Rand) ([]string, []uint32) {
	t.Helper()
	p, err := NewPlan([]int{v}, l, g)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range s {
		if err := p.Count([]uint32{x}, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Finish(r); err != nil {
		t.Fatal(err)
	}
	sets := make([]string, len(s))
	pub := make([]uint32, len(s))
	d := p.dealers[0]
	for row, x := range s {
		// Plan.Divert, unrolled to see the slot's type.
		p.row++
		if p.next < len(p.Dropped) && p.Dropped[p.next] == int64(row) {
			p.next++
			sets[row], pub[row] = "dropped", NotPublished
			continue
		}
		ty, err := d.Deal(x, r)
		if err != nil {
			t.Fatal(err)
		}
		vals := p.Schedules[0].Types[ty].Values
		sets[row], pub[row] = fmt.Sprint(vals), vals[r.IntN(len(vals))]
	}
	if err := p.Done(); err != nil {
		t.Fatal(err)
	}
	return sets, pub
}

// memoryRun is SPEC §4's algorithm in memory: random ids, the N mod ℓ′
// largest ids dropped, groups formed by the grouping, each value's rows
// dealt to its groups in id order, a uniform member of the group published.
// For anatomy it is the package's NewPartition + Divert; for random, the
// random schedule's groups laid out in the order of their sets.
func memoryRun(t *testing.T, s []uint32, v, l int, g Grouping, r *rand.Rand) ([]string, []uint32) {
	t.Helper()
	n := len(s)
	ids, err := AssignIDs(n, r)
	if err != nil {
		t.Fatal(err)
	}
	var p *Partition
	if g == GroupingAnatomy {
		if p, err = NewPartition(ids, s, v, l); err != nil {
			t.Fatal(err)
		}
	} else {
		byID := make([]uint32, n)
		for row, id := range ids {
			byID[id] = uint32(row)
		}
		keep := n - n%l
		counts := make([]int64, v)
		buckets := make([][]uint32, v) // rows of each value in id order
		for _, row := range byID[:keep] {
			counts[s[row]]++
			buckets[s[row]] = append(buckets[s[row]], row)
		}
		sch, err := NewSchedule(counts, l, GroupingRandom, r)
		if err != nil {
			t.Fatal(err)
		}
		p = &Partition{L: l, N: n, Dropped: slices.Sorted(slices.Values(byID[keep:]))}
		for _, st := range sch.Types {
			for range st.Groups {
				for _, x := range st.Values {
					p.Members = append(p.Members, buckets[x][0])
					buckets[x] = buckets[x][1:]
				}
			}
		}
	}
	pub, err := p.Divert(s, r)
	if err != nil {
		t.Fatal(err)
	}
	sets := make([]string, n)
	for _, row := range p.Dropped {
		sets[row] = "dropped"
	}
	for gi := range p.Groups() {
		var vals []uint32
		for _, row := range p.Group(gi) {
			vals = append(vals, s[row])
		}
		slices.Sort(vals)
		for _, row := range p.Group(gi) {
			sets[row] = fmt.Sprint(vals)
		}
	}
	return sets, pub
}

// twoSample runs a chi-square test of homogeneity on two equally large
// samples of outcomes: cells with fewer than 10 outcomes in both samples
// together are pooled into one. It fails t when the p-value is below
// alpha, the false-alarm rate.
func twoSample(t *testing.T, name string, a, b map[string]int64, alpha float64) {
	t.Helper()
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var stat float64
	var pa, pb int64
	cells := 0
	for k := range keys {
		x, y := a[k], b[k]
		if x+y < 10 {
			pa, pb = pa+x, pb+y
			continue
		}
		stat += float64((x-y)*(x-y)) / float64(x+y)
		cells++
	}
	if pa+pb > 0 {
		stat += float64((pa-pb)*(pa-pb)) / float64(pa+pb)
		cells++
	}
	if cells < 2 {
		t.Fatalf("%s: only %d cells", name, cells)
	}
	pv := distuv.ChiSquared{K: float64(cells - 1)}.Survival(stat)
	if pv < alpha {
		t.Errorf("%s: the two laws differ: χ² = %.1f on %d df, p = %.2g < %g", name, stat, cells-1, pv, alpha)
	}
}

// TestStreamMatchesMemoryJoint: the joint law over all rows of a small
// table of (the row's decoy set, the row's published value) is the same
// for streaming A′ and for SPEC §4's in-memory algorithm, for both
// groupings and with a drop (the decoy sets' joint law alone on the larger
// tables). Two-sample chi-square on 20,000 runs each, false-alarm rate
// 1e-4 per test. The input is sorted by value, the case
// an order-dependent dealing would get wrong.
func TestStreamMatchesMemoryJoint(t *testing.T) {
	for _, c := range []struct {
		s    []uint32
		v, l int
	}{
		{[]uint32{0, 0, 0, 1, 1, 2, 2}, 3, 2},       // 1 row dropped, 2 groupings of sets
		{[]uint32{0, 0, 1, 1, 2, 2, 3, 3, 3}, 4, 3}, // ℓ′ = 3, none dropped
		{[]uint32{0, 0, 1, 1, 2, 3, 3, 2}, 4, 3},    // 2 rows dropped
	} {
		for _, g := range Groupings {
			r := rng.NewSeeded(uint64(len(c.s)*10 + c.l))
			full := map[string]int64{}   // joint law of the sets and published values of all rows
			groups := map[string]int64{} // joint law of the sets alone
			mem := map[string]int64{}
			memGroups := map[string]int64{}
			for range 20000 {
				sets, pub := streamRun(t, c.s, c.v, c.l, g, r)
				full[fmt.Sprint(sets, pub)]++
				groups[fmt.Sprint(sets)]++
				sets, pub = memoryRun(t, c.s, c.v, c.l, g, r)
				mem[fmt.Sprint(sets, pub)]++
				memGroups[fmt.Sprint(sets)]++
			}
			name := fmt.Sprintf("%s, %v, ℓ′ = %d", g, c.s, c.l)
			twoSample(t, name+": decoy sets", groups, memGroups, 1e-4)
			if len(c.s) <= 7 { // beyond, the 2^rows published vectors are too many cells
				twoSample(t, name+": sets and published values", full, mem, 1e-4)
			}
		}
	}
}

// TestStreamMatchesMemoryPerRow: on a larger table (Adult-like skewed
// counts, sorted input), the per-row law of (true value, decoy set,
// published value) is the same for streaming and in-memory A′, for both
// groupings. Two-sample chi-square on 3,000 runs each, false-alarm rate
// 1e-4 per grouping.
func TestStreamMatchesMemoryPerRow(t *testing.T) {
	counts := []int{9, 8, 6, 5, 3, 2, 1, 1}
	var s []uint32
	for x, c := range counts {
		for range c {
			s = append(s, uint32(x))
		}
	}
	const l = 3
	for _, g := range Groupings {
		a, b := perRowLaws(t, s, len(counts), l, g, rng.NewSeeded(99))
		twoSample(t, string(g)+": per row", a, b, 1e-4)
	}
}

// perRowLaws publishes column s (v values) at ℓ′ = l with grouping g 3,000
// times by streaming and 3,000 times in memory, alternately from r, and
// returns the counts of (row, decoy set, published value) of each.
func perRowLaws(t *testing.T, s []uint32, v, l int, g Grouping, r *rand.Rand) (stream, memory map[string]int64) {
	t.Helper()
	stream, memory = map[string]int64{}, map[string]int64{}
	for range 3000 {
		sets, pub := streamRun(t, s, v, l, g, r)
		for row := range s {
			stream[fmt.Sprint(row, sets[row], pub[row])]++
		}
		sets, pub = memoryRun(t, s, v, l, g, r)
		for row := range s {
			memory[fmt.Sprint(row, sets[row], pub[row])]++
		}
	}
	return stream, memory
}

// TestReservoirDropIsUniform: the dropped rows are a uniformly random
// (N mod ℓ′)-subset of the N rows: N = 7, ℓ′ = 4 drops 3 of the ℓ′ − 1 = 3
// candidates, C(7, 3) = 35 subsets; N = 9, ℓ′ = 4 drops 1 of 3 candidates.
// Chi-square on 35,000 and 9,000 draws, false-alarm rate 1e-6 each.
func TestReservoirDropIsUniform(t *testing.T) {
	r := rng.NewSeeded(5)
	for _, c := range []struct{ n, l, draws int }{{7, 4, 35000}, {9, 4, 9000}} {
		seen := map[string]int64{}
		for range c.draws {
			res := NewReservoir(c.l-1, 1)
			for row := range c.n {
				res.Offer(int64(row), []uint32{uint32(row)}, r)
			}
			rows, vals, err := res.Drop(c.n%c.l, r)
			if err != nil {
				t.Fatal(err)
			}
			for i, row := range rows {
				if vals[i][0] != uint32(row) || (i > 0 && rows[i-1] >= row) {
					t.Fatalf("drop %v %v: values not their rows' or rows not ascending", rows, vals)
				}
			}
			seen[fmt.Sprint(rows)]++
		}
		keys := make([]string, 0, len(seen))
		for k := range seen {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		want := binom(c.n, c.n%c.l)
		if len(keys) != want {
			t.Fatalf("N = %d, ℓ′ = %d: %d distinct drops seen, want all %d", c.n, c.l, len(keys), want)
		}
		obs := make([]int64, len(keys))
		probs := make([]float64, len(keys))
		for i, k := range keys {
			obs[i], probs[i] = seen[k], 1/float64(want)
		}
		stattest.AssertChiSquare(t, fmt.Sprintf("drop of %d of %d rows", c.n%c.l, c.n), obs, probs, 1e-6)
	}
}

func binom(n, k int) int {
	b := 1
	for i := range k {
		b = b * (n - i) / (i + 1)
	}
	return b
}

// TestPlanPublishesOnlyGroupValues: every published value is a member of
// the row's decoy set, every value's slots are all dealt, and a second
// pass with more rows of a value than the first is refused.
func TestPlanPublishesOnlyGroupValues(t *testing.T) {
	r := rng.NewSeeded(3)
	for trial := range 200 {
		l := 2 + r.IntN(4)
		v := l + r.IntN(6)
		s := randomEligibleColumn(r, l+r.IntN(300), v, l, trial%2 == 0)
		if s == nil {
			continue
		}
		for _, g := range Groupings {
			sets, pub := streamRun(t, s, v, l, g, r)
			dropped := 0
			for row := range s {
				if sets[row] == "dropped" {
					dropped++
					continue
				}
				if !strings.Contains(" "+strings.Trim(sets[row], "[]")+" ", fmt.Sprintf(" %d ", pub[row])) ||
					!strings.Contains(" "+strings.Trim(sets[row], "[]")+" ", fmt.Sprintf(" %d ", s[row])) {
					t.Fatalf("row %d of value %d published %d from set %s", row, s[row], pub[row], sets[row])
				}
			}
			if dropped != len(s)%l {
				t.Fatalf("%d rows dropped, want %d", dropped, len(s)%l)
			}
		}
	}
	p, _ := NewPlan([]int{3}, 2, GroupingRandom)
	for _, x := range []uint32{0, 1, 2, 0} {
		p.Count([]uint32{x}, r)
	}
	if err := p.Finish(r); err != nil {
		t.Fatal(err)
	}
	out := make([]uint32, 1)
	var err error
	for _, x := range []uint32{0, 0, 0, 1} {
		if _, err = p.Divert([]uint32{x}, out, r); err != nil {
			break
		}
	}
	if err == nil {
		t.Fatal("a third row of value 0 in pass 2 was dealt a slot")
	}
}

// TestRandomGroupingPublishesUniformlyInTheSet: under the random grouping,
// a row publishes each value of its decoy set with probability 1/ℓ′ — its
// own with 1/ℓ′, each other member with 1/ℓ′ — whatever its own value's
// place in the set: chi-square of the published value's place given the
// true value's place, against uniform, on 300 runs of a 30-row table at
// ℓ′ = 3; false-alarm rate 1e-4 per place of the true value.
func TestRandomGroupingPublishesUniformlyInTheSet(t *testing.T) {
	counts := []int{8, 7, 6, 5, 2, 1, 1}
	var s []uint32
	for x, c := range counts {
		for range c {
			s = append(s, uint32(x))
		}
	}
	const l = 3
	r := rng.NewSeeded(17)
	obs := make([][]int64, l)
	for i := range obs {
		obs[i] = make([]int64, l)
	}
	for range 300 {
		sets, pub := streamRun(t, s, len(counts), l, GroupingRandom, r)
		for row, x := range s {
			if sets[row] == "dropped" {
				continue
			}
			var vals []uint32
			for _, f := range strings.Fields(strings.Trim(sets[row], "[]")) {
				y, _ := strconv.Atoi(f)
				vals = append(vals, uint32(y))
			}
			obs[slices.Index(vals, x)][slices.Index(vals, pub[row])]++
		}
	}
	uniform := []float64{1.0 / l, 1.0 / l, 1.0 / l}
	for i := range l {
		stattest.AssertChiSquare(t, fmt.Sprintf("published place given the true value at place %d", i), obs[i], uniform, 1e-4)
	}
}
