package anonymize

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestScheduleValuesFlat: NewSchedule leaves its sets' values in one
// array in type order, which a Dealer's ownSets keeps instead of copying;
// a schedule whose Types no longer point into it is copied, with the
// same result.
func TestScheduleValuesFlat(t *testing.T) {
	counts := make([]int64, 300)
	r := rand.New(rand.NewPCG(1, 2))
	n := int64(0)
	for v := range counts {
		counts[v] = 1 + int64(r.IntN(9))
		n += counts[v]
	}
	counts[0] += 5 - n%5
	for _, g := range []Grouping{GroupingRandom, GroupingAnatomy} {
		s, err := NewSchedule(counts, 5, g, rand.New(rand.NewPCG(3, 4)))
		if err != nil {
			t.Fatal(err)
		}
		if !s.flat(5) {
			t.Fatalf("%s: NewSchedule's values are not flat in type order", g)
		}
		if !slices.IsSortedFunc(s.Types, func(x, y SetType) int { return slices.Compare(x.Values, y.Values) }) {
			t.Fatalf("%s: types not in lexicographic order", g)
		}
		var want []uint32
		for _, st := range s.Types {
			if !slices.IsSorted(st.Values) || len(st.Values) != 5 {
				t.Fatalf("%s: set %v not 5 ascending values", g, st.Values)
			}
			want = append(want, st.Values...)
		}
		d := NewDealer(s)
		d.ownSets()
		if !slices.Equal(d.sets.u32, want) || &d.sets.u32[0] != &s.values[0] {
			t.Fatalf("%s: ownSets did not keep the flat values", g)
		}
		// A schedule whose Types were replaced is copied, not aliased.
		s2 := &Schedule{L: s.L, V: s.V, Grouping: g, Types: slices.Clone(s.Types), values: s.values}
		s2.Types[0].Values = slices.Clone(s2.Types[0].Values)
		if s2.flat(5) {
			t.Fatalf("%s: flat true for a schedule whose first type was replaced", g)
		}
		d2 := NewDealer(s2)
		d2.ownSets()
		if !slices.Equal(d2.sets.u32, want) || &d2.sets.u32[0] == &s.values[0] {
			t.Fatalf("%s: ownSets of a non-flat schedule did not copy its values", g)
		}
	}
}
