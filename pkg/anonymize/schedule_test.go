package anonymize

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/rng"
)

// randomCounts draws counts over v values summing to a multiple of l, every
// count ≤ N/l; tight puts f values exactly at N/l (the eligibility
// boundary, where they are forced into every group). It returns nil when
// no such vector exists.
func randomCounts(r *rand.Rand, groups int64, v, l, f int) []int64 {
	n := groups * int64(l)
	if int64(v)*groups < n || f > l {
		return nil
	}
	counts := make([]int64, v)
	left := n
	for i := range f {
		counts[i] = groups
		left -= groups
	}
	if f == l {
		return counts
	}
	if int64(v-f)*(groups-1) < left && f > 0 {
		return nil // the rest cannot stay strictly below N/l
	}
	limit := groups
	if f > 0 {
		limit = groups - 1
	}
	for left > 0 {
		x := f + r.IntN(v-f)
		if counts[x] < limit {
			counts[x]++
			left--
		}
	}
	r.Shuffle(len(counts), func(i, j int) { counts[i], counts[j] = counts[j], counts[i] })
	return counts
}

// checkSchedule fails t unless s splits counts into groups of ℓ′ distinct
// values using every count exactly.
func checkSchedule(t *testing.T, s *Schedule, counts []int64, l int) {
	t.Helper()
	used := make([]int64, len(counts))
	var n int64
	for _, c := range counts {
		n += c
	}
	for i, st := range s.Types {
		if len(st.Values) != l || st.Groups <= 0 {
			t.Fatalf("type %d: %v × %d, want %d values and a positive count", i, st.Values, st.Groups, l)
		}
		for j := 1; j < l; j++ {
			if st.Values[j] <= st.Values[j-1] {
				t.Fatalf("type %d: values %v not distinct and ascending", i, st.Values)
			}
		}
		if i > 0 && slices.Compare(s.Types[i-1].Values, st.Values) >= 0 {
			t.Fatalf("types %d and %d out of order or repeated: %v, %v", i-1, i, s.Types[i-1].Values, st.Values)
		}
		for _, v := range st.Values {
			used[v] += st.Groups
		}
	}
	if !slices.Equal(used, counts) {
		t.Fatalf("schedule uses counts %v, want %v", used, counts)
	}
	if s.Groups()*int64(l) != n {
		t.Fatalf("%d groups for %d rows at ℓ′ = %d", s.Groups(), n, l)
	}
	slots := s.Slots()
	for v, ts := range slots {
		var k int64
		for _, ti := range ts {
			k += s.Types[ti].Groups
		}
		if k != counts[v] {
			t.Fatalf("value %d has %d slots, count %d", v, k, counts[v])
		}
	}
}

// TestScheduleProperties: over random count vectors — including the
// extreme eligible ones where up to ℓ′ values have count N/ℓ′ — both
// groupings give groups of ℓ′ distinct values that use the counts exactly,
// and never get stuck.
func TestScheduleProperties(t *testing.T) {
	r := rng.NewSeeded(12)
	cases := 0
	for trial := range 3000 {
		l := 2 + r.IntN(6)
		v := l + r.IntN(12)
		groups := int64(1 + r.IntN(60))
		f := 0
		if trial%3 != 0 {
			f = 1 + r.IntN(l) // 1..ℓ′ values at the boundary
		}
		counts := randomCounts(r, groups, v, l, f)
		if counts == nil {
			continue
		}
		cases++
		for _, g := range Groupings {
			s, err := NewSchedule(counts, l, g, r)
			if err != nil {
				t.Fatalf("%s, counts %v, ℓ′ = %d: %v", g, counts, l, err)
			}
			checkSchedule(t, s, counts, l)
		}
	}
	if cases < 1000 {
		t.Fatalf("only %d eligible count vectors drawn", cases)
	}
}

// TestScheduleRefusesIneligible: counts above N/ℓ′ or not summing to a
// multiple of ℓ′ are refused, not scheduled.
func TestScheduleRefusesIneligible(t *testing.T) {
	for _, g := range Groupings {
		if _, err := NewSchedule([]int64{3, 1, 0, 0}, 2, g, rng.NewSeeded(1)); err == nil {
			t.Errorf("%s: count 3 > N/ℓ′ = 2 accepted", g)
		}
		if _, err := NewSchedule([]int64{1, 1, 1}, 2, g, rng.NewSeeded(1)); err == nil {
			t.Errorf("%s: N = 3 not a multiple of ℓ′ = 2 accepted", g)
		}
	}
}

// TestAnatomyScheduleIsThePartitionsSets: the anatomy schedule, computed
// from the kept rows' counts, is exactly the multiset of value sets of
// NewPartition's groups.
func TestAnatomyScheduleIsThePartitionsSets(t *testing.T) {
	r := rng.NewSeeded(7)
	for trial := range 400 {
		l := 2 + r.IntN(5)
		v := l + r.IntN(10)
		n := l + r.IntN(400)
		s := randomEligibleColumn(r, n, v, l, trial%2 == 0)
		if s == nil {
			continue
		}
		ids, _ := AssignIDs(n, r)
		p, err := NewPartition(ids, s, v, l)
		if err != nil {
			t.Fatal(err)
		}
		counts, _ := Counts(s, v)
		for _, row := range p.Dropped {
			counts[s[row]]--
		}
		want := map[string]int64{}
		for g := range p.Groups() {
			var set []uint32
			for _, row := range p.Group(g) {
				set = append(set, s[row])
			}
			slices.Sort(set)
			want[fmt.Sprint(set)]++
		}
		sch, err := NewSchedule(counts, l, GroupingAnatomy, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		for _, st := range sch.Types {
			got[fmt.Sprint(st.Values)] += st.Groups
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("counts %v, ℓ′ = %d: schedule %v, partition %v", counts, l, got, want)
		}
	}
}

// TestAnatomyScheduleIsGroupByGroupCreation: with many values (up to 400,
// where the runs are short), the anatomy schedule equals Anatomy's group
// creation done one group at a time by re-sorting every bucket, the
// definition, on random eligible counts including the extreme case.
func TestAnatomyScheduleIsGroupByGroupCreation(t *testing.T) {
	r := rng.NewSeeded(11)
	for trial := range 200 {
		l := 2 + r.IntN(6)
		v := l + r.IntN(400)
		counts := make([]int64, v)
		var n int64
		for i := range counts {
			counts[i] = int64(r.IntN(1 + r.IntN(30)))
			n += counts[i]
		}
		if trial%3 == 0 { // the extreme eligible case: a value at N/ℓ′
			counts[r.IntN(v)] = 0
			n = 0
			for _, c := range counts {
				n += c
			}
			counts[0] = n / int64(l-1)
			n += counts[0]
		}
		for n%int64(l) != 0 { // trim to a multiple of ℓ′
			if i := r.IntN(v); counts[i] > 0 && i != 0 {
				counts[i]--
				n--
			}
		}
		if eligible(counts, l) != nil || n == 0 {
			continue
		}
		want := map[string]int64{}
		cnt := slices.Clone(counts)
		order := make([]uint32, v)
		for i := range order {
			order[i] = uint32(i)
		}
		for range n / int64(l) {
			slices.SortFunc(order, func(x, y uint32) int {
				if cnt[x] != cnt[y] {
					return int(cnt[y] - cnt[x])
				}
				return int(x) - int(y)
			})
			set := slices.Clone(order[:l])
			for _, x := range set {
				cnt[x]--
			}
			slices.Sort(set)
			want[fmt.Sprint(set)]++
		}
		sch, err := NewSchedule(counts, l, GroupingAnatomy, nil)
		if err != nil {
			t.Fatalf("counts %v, ℓ′ = %d: %v", counts, l, err)
		}
		got := map[string]int64{}
		for _, st := range sch.Types {
			got[fmt.Sprint(st.Values)] += st.Groups
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("counts %v, ℓ′ = %d: schedule %v, group by group %v", counts, l, got, want)
		}
	}
}

// exactRandomSchedules returns the law of the random grouping's schedule
// (as scheduleKey) by walking the draw tree: with n groups left, the values
// of count n are in the group, the others drawn successively without
// replacement in proportion to their counts.
func exactRandomSchedules(counts []int64, l int) map[string]float64 {
	return exactRunSchedules(counts, l, 1)
}

// exactRunSchedules is exactRandomSchedules for runs of up to k groups:
// each drawn set serves k′ = min(k, n, min over the set of cnt, n − max
// outside it of cnt) groups (randomSets).
func exactRunSchedules(counts []int64, l int, k int64) map[string]float64 {
	var n int64
	for _, c := range counts {
		n += c
	}
	out := map[string]float64{}
	var rec func(cnt []int64, groups int64, sets []string, p float64)
	rec = func(cnt []int64, groups int64, sets []string, p float64) {
		if groups == 0 {
			s := slices.Clone(sets)
			sort.Strings(s)
			out[strings.Join(s, " ")] += p
			return
		}
		var forced []int
		for v, c := range cnt {
			if c == groups {
				forced = append(forced, v)
			}
		}
		var draw func(in []int, p float64)
		draw = func(in []int, p float64) {
			if len(in) == l {
				run := min(k, groups)
				for v, c := range cnt {
					if slices.Contains(in, v) {
						run = min(run, c)
					} else {
						run = min(run, groups-c)
					}
				}
				next := slices.Clone(cnt)
				for _, v := range in {
					next[v] -= run
				}
				set := slices.Clone(in)
				slices.Sort(set)
				more := slices.Clone(sets)
				for range run {
					more = append(more, fmt.Sprint(set))
				}
				rec(next, groups-run, more, p)
				return
			}
			var total int64
			for v, c := range cnt {
				if !slices.Contains(in, v) {
					total += c
				}
			}
			for v, c := range cnt {
				if c > 0 && !slices.Contains(in, v) {
					draw(append(slices.Clone(in), v), p*float64(c)/float64(total))
				}
			}
		}
		draw(forced, p)
	}
	rec(slices.Clone(counts), n/int64(l), nil, 1)
	return out
}

func scheduleKey(s *Schedule) string {
	var sets []string
	for _, st := range s.Types {
		for range st.Groups {
			sets = append(sets, fmt.Sprint(st.Values))
		}
	}
	sort.Strings(sets)
	return strings.Join(sets, " ")
}

// TestRandomScheduleLaw: the random grouping's schedule follows the law of
// its definition (successive draws in proportion to the remaining counts,
// values at the bound forced), checked by a chi-square test against the
// exact law from the draw tree on small count vectors. 20,000 schedules
// per vector; false-alarm rate 1e-6 per vector.
func TestRandomScheduleLaw(t *testing.T) {
	r := rng.NewSeeded(2026)
	for _, c := range []struct {
		counts []int64
		l      int
	}{
		{[]int64{3, 2, 2, 1}, 2},       // no value forced at first
		{[]int64{4, 2, 1, 1}, 2},       // value 0 forced in every group
		{[]int64{2, 2, 1, 1, 1, 2}, 3}, // ℓ′ = 3
	} {
		assertScheduleLaw(t, fmt.Sprintf("random schedule of %v, ℓ′ = %d", c.counts, c.l), c.counts, c.l, exactRandomSchedules(c.counts, c.l), r)
	}
}

// assertScheduleLaw draws 20,000 random-grouping schedules of counts at
// ℓ′ = l and checks their frequencies against the exact law exact (by
// scheduleKey) by chi-square at false-alarm rate 1e-6; a schedule outside
// the law fails at once.
func assertScheduleLaw(t *testing.T, name string, counts []int64, l int, exact map[string]float64, r *rand.Rand) {
	t.Helper()
	keys := make([]string, 0, len(exact))
	for k := range exact {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	probs := make([]float64, len(keys))
	for i, k := range keys {
		probs[i] = exact[k]
	}
	obs := make([]int64, len(keys))
	for range 20000 {
		s, err := NewSchedule(counts, l, GroupingRandom, r)
		if err != nil {
			t.Fatal(err)
		}
		i, ok := slices.BinarySearch(keys, scheduleKey(s))
		if !ok {
			t.Fatalf("counts %v: schedule %q has probability 0", counts, scheduleKey(s))
		}
		obs[i]++
	}
	stattest.AssertChiSquare(t, name, obs, probs, 1e-6)
}

// TestUrnFind: find inverts the prefix sums, zero weights are never
// returned, largest finds the first largest weight.
func TestUrnFind(t *testing.T) {
	w := []int64{0, 3, 0, 1, 5, 0, 5, 2, 1}
	f := newUrn(w)
	if i, m := f.largest(); i != 4 || m != 5 {
		t.Fatalf("max = %d at %d, want 5 at 4", m, i)
	}
	var cum int64
	for i, x := range w {
		for u := cum; u < cum+x; u++ {
			if got := f.find(u); got != i {
				t.Fatalf("find(%d) = %d, want %d", u, got, i)
			}
		}
		cum += x
	}
}

// TestSetBagBytesPerSet: the bag holds a set of ℓ′ = 5 values in at most
// 36 bytes: its record (20 bytes of values, 4 of group count) and its
// table slot (4 bytes at most three quarters full: up to 10.7); a late bag
// (no table) in at most 25. A []SetType and a map keyed by the values
// took about 100, and records with an 8-byte group count in a slice of
// their own up to 48 (TestSetBagBytesPerSet fails on that code).
func TestSetBagBytesPerSet(t *testing.T) {
	const n, l, v = 300_000, 5, 300_000
	for _, late := range []bool{false, true} {
		r := rand.New(rand.NewPCG(1, 2))
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b := newSetBag(l, v)
		bound := 36.0
		if late {
			b, bound = newLateSetBag(l, v), 25
		}
		set := make([]uint32, l)
		for i := range n {
			// Distinct sets: the first value is i's own.
			set[0] = uint32(i)
			for j := 1; j < l; j++ {
				set[j] = uint32(n + j) // > every first value, distinct
			}
			r.Shuffle(l, func(a, b int) { set[a], set[b] = set[b], set[a] })
			b.add(set, int64(1+i%3))
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		per := float64(after.HeapAlloc-before.HeapAlloc) / n
		t.Logf("late %v: %d sets of %d values: %.1f bytes a set", late, n, l, per)
		if per > bound {
			t.Errorf("late %v: the bag takes %.1f bytes a set of %d values, more than %.0f", late, per, l, bound)
		}
		types := b.types()
		if len(types) != n {
			t.Fatalf("late %v: %d types, want %d", late, len(types), n)
		}
		for i, st := range types {
			if st.Values[0] != uint32(i) || st.Groups != int64(1+i%3) || !slices.IsSorted(st.Values) {
				t.Fatalf("late %v: type %d: %v", late, i, st)
			}
		}
	}
}

// TestLateSetBagMergesEqualSets: a late bag, which keeps every run and
// merges equal sets only when flattened, gives the types a bag merging
// them as they come gives — the same sets, in the same order, with the
// groups summed — on sets drawn from few values (many repeats, across
// several chunks) and from many (few).
func TestLateSetBagMergesEqualSets(t *testing.T) {
	for _, tc := range []struct{ v, pool int }{{70, 8}, {2000, 2000}} {
		const l, adds = 4, 3 * arenaSets
		v := tc.v
		r := rand.New(rand.NewPCG(5, uint64(v)))
		now, late := newSetBag(l, v), newLateSetBag(l, v)
		if !late.late || now.table == nil {
			t.Fatal("the bags do not merge as the test assumes")
		}
		set := make([]uint32, l)
		for range adds {
			// l distinct values of the pool, spread over the codebook.
			for j, x := range r.Perm(tc.pool)[:l] {
				set[j] = uint32(x * (v / tc.pool))
			}
			k := int64(1 + r.IntN(5))
			now.add(set, k)
			late.add(set, k)
		}
		want, got := now.types(), late.types()
		if !slices.EqualFunc(want, got, func(x, y SetType) bool { return x.Groups == y.Groups && slices.Equal(x.Values, y.Values) }) {
			t.Fatalf("V = %d: the late bag's %d types differ from the merging bag's %d", v, len(got), len(want))
		}
		if tc.pool < 10 && len(want) > adds/10 {
			t.Fatalf("V = %d: %d types of %d adds: too few repeats to test the merge", v, len(want), adds)
		}
		t.Logf("V = %d: %d types", v, len(want))
	}
}
