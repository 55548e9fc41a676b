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
// of both groupings.
func TestNumbererFromFlatSets(t *testing.T) {
	gen := rand.New(rand.NewPCG(5, 6))
	for trial := range 40 {
		v, l := 3+gen.IntN(40), 2+gen.IntN(2)
		g := anonymize.Groupings[trial%2]
		p, err := anonymize.NewPlan([]int{v}, l, g)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(uint64(trial), 1))
		for i := range l * (v + gen.IntN(200)) {
			if err := p.Count([]uint32{uint32(i % v)}, r); err != nil {
				t.Fatal(err)
			}
		}
		if err := p.Finish(r); err != nil {
			t.Fatal(err)
		}
		sch := p.Schedules[0]
		nb := &numberer{l: l, base: GroupBase(sch), groups: sch.Groups()}
		p.DropSchedules()
		nb.sets = p.Sets(0)
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
