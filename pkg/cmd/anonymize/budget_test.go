package anonymize

import (
	"testing"

	"github.com/pramkit/pramkit/pkg/shuffle"
)

// TestShuffleBudget: the default budget (so seeded output is unchanged)
// up to stateRoom of per-value state, then one byte less per byte of
// state, shared among the run's shuffles, never below the floor.
func TestShuffleBudget(t *testing.T) {
	room := stateRoom / bytesPerValue // values the default leaves room for
	for _, c := range []struct {
		values []int
		n      int
		want   int64
	}{
		{[]int{14}, 1, shuffle.DefaultBudget},
		{[]int{room}, 1, shuffle.DefaultBudget},
		{[]int{room / 2, room / 2}, 2, shuffle.DefaultBudget},
		{[]int{room + 1000}, 1, shuffle.DefaultBudget - 1000*bytesPerValue},
		{[]int{room + 1000}, 2, shuffle.DefaultBudget - 500*bytesPerValue},
		{[]int{room, 1000}, 1, shuffle.DefaultBudget - 1000*bytesPerValue},
		{[]int{300_000}, 1, minShuffleBudget},
		{[]int{10_000_000}, 2, minShuffleBudget},
	} {
		if got := shuffleBudget(c.values, c.n); got != c.want {
			t.Errorf("shuffleBudget(%v, %d) = %d, want %d", c.values, c.n, got, c.want)
		}
	}
}
