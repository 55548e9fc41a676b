package anonymize

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pramkit/pramkit/pkg/anonymize"
)

// The numberer, which no longer holds the schedule, finds each set type's
// groups from GroupBase and the total, and its sets from Plan.Sets: the
// same counts and values as the schedule's Types, on random count vectors
// of both groupings; a plan under DivertOnly and KeepGroupBase (which
// never makes the schedule) gives the same sets and GroupBase from the
// same draws.
func TestNumbererFromFlatSets(t *testing.T) {
	gen := rand.New(rand.NewPCG(5, 6))
	for trial := range 40 {
		v, l := 3+gen.IntN(40), 2+gen.IntN(2)
		g := anonymize.Groupings[trial%2]
		rows := l * (v + gen.IntN(200))
		plan := func(flat bool) *anonymize.Plan {
			p, err := anonymize.NewPlan([]int{v}, l, g)
			if err != nil {
				t.Fatal(err)
			}
			if flat {
				p.DivertOnly()
				p.KeepGroupBase()
			}
			r := rand.New(rand.NewPCG(uint64(trial), 1))
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
		p, flat := plan(false), plan(true)
		sch := p.Schedules[0]
		nb := &numberer{l: l, base: GroupBase(sch), groups: sch.Groups()}
		p.DropSchedules()
		nb.sets = p.Sets(0)
		if !slices.Equal(flat.GroupBase(0), nb.base) || !slices.Equal(flat.Sets(0), nb.sets) || flat.Schedules != nil {
			t.Fatalf("trial %d: DivertOnly and KeepGroupBase: GroupBase %v, sets %v; want %v, %v", trial, flat.GroupBase(0), flat.Sets(0), nb.base, nb.sets)
		}
		for ty, st := range sch.Types {
			if got := nb.groupsOf(ty); got != st.Groups {
				t.Fatalf("trial %d: type %d: %d groups, want %d", trial, ty, got, st.Groups)
			}
			if got := nb.sets[ty*l : (ty+1)*l]; !slices.Equal(got, st.Values) {
				t.Fatalf("trial %d: type %d: values %v, want %v", trial, ty, got, st.Values)
			}
		}
	}
}

// TestNumbererCountsPastSixteenBits: a place's count runs on past 2^16
// (a set type of that many groups) exactly, from next into big and on.
func TestNumbererCountsPastSixteenBits(t *testing.T) {
	nb := &numberer{next: make([]uint16, 3)}
	for i := range int64(200_000) {
		if got := nb.numbered(1); got != i {
			t.Fatalf("after %d rows: numbered %d", i, got)
		}
		nb.count(1)
	}
	if nb.numbered(0) != 0 || nb.numbered(2) != 0 || nb.numbered(1) != 200_000 {
		t.Fatalf("counts %d, %d, %d; want 0, 200000, 0", nb.numbered(0), nb.numbered(1), nb.numbered(2))
	}
}
