package anonymize

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// anatomyPlan counts rows (value i%v for row i, then extra rows of value
// 0) into a plan under DivertOnly and KeepGroupBase (anonymize
// --mechanism anatomy) or not, and finishes it from the same seed.
func anatomyPlan(t *testing.T, v, l, rows int, g Grouping, seed uint64, flat bool) *Plan {
	t.Helper()
	p, err := NewPlan([]int{v}, l, g)
	if err != nil {
		t.Fatal(err)
	}
	if flat {
		p.DivertOnly()
		p.KeepGroupBase()
		p.DropCounts()
	}
	r := rand.New(rand.NewPCG(seed, 1))
	for i := range rows {
		if err := p.Count([]uint32{uint32(i % v)}, r); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Finish(r); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEachSetIsTheSchedule: a plan under KeepGroupBase keeps no sets, and
// EachSet rebuilds them from the Dealer's pairs: each set type's values,
// first group and groups are the Schedule's Types (with GroupBase's
// numbering) from the same draws, on random count vectors of both
// groupings, with blocks of types smaller than the types (setBlock made
// 3) or not; before pass 2, after it, and after the numbering.
func TestEachSetIsTheSchedule(t *testing.T) {
	gen := rand.New(rand.NewPCG(5, 6))
	for trial := range 40 {
		v, l := 5+gen.IntN(40), 2+gen.IntN(3)
		g := Groupings[trial%2]
		rows := l*(v+gen.IntN(200)) + gen.IntN(l)
		ref, p := anatomyPlan(t, v, l, rows, g, uint64(trial), false), anatomyPlan(t, v, l, rows, g, uint64(trial), true)
		sch := ref.Schedules[0]
		if p.Schedules != nil || p.dealers[0].sets.len() != 0 {
			t.Fatalf("trial %d: the plan kept its schedule or its sets", trial)
		}
		check := func(when string) {
			t.Helper()
			var base int64
			var sets []uint32
			for _, st := range sch.Types {
				sets = append(sets, st.Values...)
			}
			n := 0
			err := p.EachSet(0, func(ty int, vals []uint32, b, groups int64) error {
				st := sch.Types[ty]
				if ty != n || !slices.Equal(vals, st.Values) || b != base || groups != st.Groups {
					t.Fatalf("trial %d, %s: type %d (call %d): values %v, base %d, groups %d; want %v, %d, %d", trial, when, ty, n, vals, b, groups, st.Values, base, st.Groups)
				}
				n++
				base += groups
				return nil
			})
			if err != nil || n != len(sch.Types) {
				t.Fatalf("trial %d, %s: %d types, error %v; want %d", trial, when, n, err, len(sch.Types))
			}
			if got := p.Sets(0); !slices.Equal(got, sets) {
				t.Fatalf("trial %d, %s: Sets %v, want %v", trial, when, got, sets)
			}
			want := make([]int64, len(sch.Types))
			var next int64
			for ty, st := range sch.Types {
				want[ty], next = next, next+st.Groups
			}
			if got := p.GroupBase(0); !slices.Equal(got, want) {
				t.Fatalf("trial %d, %s: GroupBase %v, want %v", trial, when, got, want)
			}
		}
		old := setBlock
		if trial%3 == 0 {
			setBlock = 3
		}
		check("after Finish")
		r := rand.New(rand.NewPCG(uint64(trial), 2))
		ty := make([]int, 1)
		var dealt [][2]int
		for i := range rows {
			ok, err := p.Deal([]uint32{uint32(i % v)}, ty, r)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				dealt = append(dealt, [2]int{i % v, ty[0]})
			}
		}
		if _, err := p.Divert([]uint32{0}, []uint32{0}, r); err == nil {
			t.Fatalf("trial %d: Divert without sets succeeded", trial)
		}
		if err := p.Done(); err != nil {
			t.Fatal(err)
		}
		check("after pass 2")
		for _, vt := range dealt {
			if _, err := p.Number(0, uint32(vt[0]), vt[1]); err != nil {
				t.Fatal(err)
			}
		}
		check("after the numbering")
		setBlock = old
	}
}

// TestNumberCountsEachTypesGroups: after pass 2, the j-th row of value v
// numbered in set type t gets the type's group GroupBase[t] + j, for
// every (v, t) independently, whatever order the rows come in; the rows
// of a type's value one past its groups, a value not in the type's set,
// a type the schedule does not have, and Number before Done are errors.
// Pairs whose count passes their bits (16 bits of type, as if there were
// 2^16 types: 8 or 16 bits of count; the random grouping with T = 4
// runs, so that its types are big) count on in Dealer.big.
func TestNumberCountsEachTypesGroups(t *testing.T) {
	defer func(T int64, b, w int) { randomRuns, dealerTypeBits, dealerWords = T, b, w }(randomRuns, dealerTypeBits, dealerWords)
	randomRuns = 4
	for _, c := range []struct {
		v, l, rows, bits, width int
	}{{30, 3, 3000, 0, 0}, {4, 3, 900_000, 16, 24}, {4, 3, 900_000, 16, 32}} {
		dealerTypeBits, dealerWords = c.bits, c.width
		for _, g := range Groupings {
			p := anatomyPlan(t, c.v, c.l, c.rows, g, 3, true)
			if _, err := p.Number(0, 0, 0); err == nil || !strings.Contains(err.Error(), "before Done") {
				t.Fatalf("Number before pass 2: %v", err)
			}
			r := rand.New(rand.NewPCG(4, 5))
			ty := make([]int, 1)
			var dealt [][2]int
			for i := range c.rows {
				if ok, err := p.Deal([]uint32{uint32(i % c.v)}, ty, r); err != nil {
					t.Fatal(err)
				} else if ok {
					dealt = append(dealt, [2]int{i % c.v, ty[0]})
				}
			}
			if err := p.Done(); err != nil {
				t.Fatal(err)
			}
			if c.bits > 0 && len(p.dealers[0].big) != 0 {
				t.Fatalf("big pairs left after pass 2")
			}
			base := p.GroupBase(0)
			next := map[[2]int]int64{}
			r.Shuffle(len(dealt), func(i, j int) { dealt[i], dealt[j] = dealt[j], dealt[i] })
			for _, vt := range dealt {
				got, err := p.Number(0, uint32(vt[0]), vt[1])
				if err != nil {
					t.Fatal(err)
				}
				if want := base[vt[1]] + next[vt]; got != want {
					t.Fatalf("%s: value %d in type %d, row %d: group %d, want %d", g, vt[0], vt[1], next[vt], got, want)
				}
				next[vt]++
			}
			if c.bits > 0 && len(p.dealers[0].big) == 0 {
				t.Fatalf("%s, %d-bit pairs: no count passed the pairs' bits: the test needs bigger types", g, c.width)
			}
			vt := dealt[0]
			if _, err := p.Number(0, uint32(vt[0]), vt[1]); err == nil || !strings.Contains(err.Error(), "more rows") {
				t.Fatalf("%s: a row past the type's groups: %v", g, err)
			}
			sets := p.Sets(0)
			absent := -1
			for x := range c.v {
				if !slices.Contains(sets[vt[1]*c.l:(vt[1]+1)*c.l], uint32(x)) {
					absent = x
					break
				}
			}
			if _, err := p.Number(0, uint32(absent), vt[1]); absent >= 0 && (err == nil || !strings.Contains(err.Error(), "does not hold")) {
				t.Fatalf("%s: a value outside the type's set: %v", g, err)
			}
			if _, err := p.Number(0, 0, len(base)); err == nil {
				t.Fatalf("%s: a type past the schedule's: no error", g)
			}
		}
	}
}
