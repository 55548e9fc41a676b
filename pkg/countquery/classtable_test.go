package countquery

import (
	"math/rand/v2"
	"testing"
)

// TestClassTableDenseAndSparseAgree: both forms of a classTable give
// classNone to an index never set and the last class set to the others,
// at the ends of its 64-bit words too.
func TestClassTableDenseAndSparseAgree(t *testing.T) {
	defer func(old int) { denseClasses = old }(denseClasses)
	r := rand.New(rand.NewPCG(1, 2))
	for _, k := range []int{1, 63, 64, 65, 1000} {
		for _, dense := range []int{k, k - 1} {
			denseClasses = dense
			tab := newClassTable(k)
			if (tab.dense != nil) != (k <= dense) {
				t.Fatalf("k %d, denseClasses %d: dense %v", k, dense, tab.dense != nil)
			}
			want := map[int]int32{}
			for i := range 3 * k {
				idx := r.IntN(k)
				if i%7 == 0 {
					idx = k - 1
				}
				tab.set(idx, int32(i))
				want[idx] = int32(i)
			}
			for idx := range k {
				w, ok := want[idx]
				if !ok {
					w = classNone
				}
				if got := tab.get(idx); got != w {
					t.Errorf("k %d, dense %v: index %d has class %d, want %d", k, tab.dense != nil, idx, got, w)
				}
			}
		}
	}
}

// TestSparseClassTablesGiveTheSameAnswers runs the plan's and Anatomy's
// answer tests with every class table sparse (as a codebook of more than
// denseClasses labels has them).
func TestSparseClassTablesGiveTheSameAnswers(t *testing.T) {
	defer func(old int) { denseClasses = old }(denseClasses)
	denseClasses = 0
	t.Run("plan", TestPlanAnswersAreTheEstimatorsOnBruteCounts)
	t.Run("anatomy", TestAnatomyHeldAndStreamedSumsAreEqual)
	t.Run("anatomy values", TestScanAnatomyGroupsIsThePlansAnswers)
}
