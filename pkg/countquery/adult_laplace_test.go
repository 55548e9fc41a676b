package countquery

import (
	"testing"

	"github.com/pramkit/pramkit/internal/adultquery"

	"github.com/pramkit/pramkit/pkg/rng"
)

// A′ against Laplace noise on the true counts (§9.4, Figures 10–11): the
// Laplace answers split ε over the m queries asked, so their error grows
// with m while A′'s does not. The noise is crypto-random (not seedable);
// over ≥ 2 000 queries the mean relative error is stable to a few percent.
func TestAdultLaplaceBaseline(t *testing.T) {
	tab := loadAdult(t)
	preds := adultquery.RandomPredicates(&tab.Table, adultPreds, rng.NewSeeded(41))
	large, _ := adultQueries(t, tab, preds, adultL, adultRuns)
	aprime := meanRelErr(large, ibu(t, adultL, Options{}))
	aexact := meanRelErr(large, ibu(t, adultL, Options{ExactDecoy: true}))
	t.Logf("selectivity 2–5 %%, %d queries: A′ paper a01 %.3f, exact a01 %.3f", len(large), aprime, aexact)
	for _, eps := range []float64{0.01, 0.05} {
		for _, m := range []int{1, 10, 100} {
			lap := meanRelErr(large, func(q adultquery.Query) float64 {
				got, err := LaplaceCount(int64(q.Truth), eps, m)
				if err != nil {
					t.Fatal(err)
				}
				return float64(got)
			})
			t.Logf("  Laplace ε = %.2f over m = %3d queries (scale m/ε = %6.0f): %.3f", eps, m, float64(m)/eps, lap)
			// With m = 100 the scale is ≥ 2 000 against counts of 650–1 630:
			// the expected relative error exceeds 1, far above A′'s.
			if m == 100 && !(lap > aprime) {
				t.Errorf("Laplace at ε = %v, m = 100: %.3f, A′ %.3f; expected A′ to win", eps, lap, aprime)
			}
		}
	}
}
