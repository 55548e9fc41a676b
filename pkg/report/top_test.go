package report

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortedTopIsTheStableSortsHead: the bounded heap lists the same
// indices in the same order as a stable sort of every value by decreasing
// value (ties by index), cut to n: with ties, negatives, n of 0, 1, below
// and above the number of values.
func TestSortedTopIsTheStableSortsHead(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ len, n, distinct int }{
		{0, 5, 1}, {1, 0, 1}, {1, 1, 1}, {7, 3, 2}, {40, 40, 5}, {100, 500, 10}, {5000, 500, 50}, {20000, 40, 20000},
	} {
		t.Run(fmt.Sprintf("len=%d/n=%d/distinct=%d", tc.len, tc.n, tc.distinct), func(t *testing.T) {
			v := make([]float64, tc.len)
			for i := range v {
				v[i] = float64(r.IntN(tc.distinct)) - float64(tc.distinct)/3
			}
			want := inOrder(len(v))
			slices.SortStableFunc(want, func(a, b int) int {
				switch {
				case v[a] > v[b]:
					return -1
				case v[a] < v[b]:
					return 1
				}
				return 0
			})
			want = want[:min(tc.n, len(want))]
			if got := sortedTop(v, tc.n); !slices.Equal(got, want) {
				t.Errorf("sortedTop = %v…, want %v…", got[:min(len(got), 10)], want[:min(len(want), 10)])
			}
		})
	}
}
