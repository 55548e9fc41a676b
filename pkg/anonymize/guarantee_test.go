package anonymize

import (
	"math"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/rng"
)

// Example 1 (§6.1): T_E = 0.02, ℓ′ = 10, ε = 0.2 → T_f = 11.
func TestUtilityThresholdExample1(t *testing.T) {
	tf, err := UtilityThreshold(10, 0.2, 0.02)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(tf-math.Sqrt(125)) > 1e-12 || math.Floor(tf) != 11 {
		t.Errorf("T_f = %v, want √125 ≈ 11.18 (paper: 11)", tf)
	}
	// T_f is where Chebyshev's bound (Inequality 3) crosses T_E.
	below, _ := ChebyshevBound(11, 10, 0.2)
	above, _ := ChebyshevBound(12, 10, 0.2)
	if !(below > 0.02 && above <= 0.02) {
		t.Errorf("Chebyshev bound at 11: %v, at 12: %v; want them to straddle T_E = 0.02", below, above)
	}
}

// Example 2 (§6.2): f_s = 5, ℓ′ = 10, ε = 0.3: P(4 ≤ f′_s ≤ 6) ≈ 0.52 for
// Binomial(50, 0.1), so the privacy guarantee is (0.3, 0.48).
func TestPrivacyGuaranteeExample2(t *testing.T) {
	tp, err := PrivacyGuarantee(5, 10, 0.3)
	if err != nil {
		t.Fatal(err)
	}
	// Direct sum of the binomial terms, written out.
	pmf := func(n, k int, p float64) float64 {
		c := 1.0
		for i := range k {
			c = c * float64(n-i) / float64(i+1)
		}
		return c * math.Pow(p, float64(k)) * math.Pow(1-p, float64(n-k))
	}
	inside := pmf(50, 4, 0.1) + pmf(50, 5, 0.1) + pmf(50, 6, 0.1)
	if math.Abs(tp-(1-inside)) > 1e-9 {
		t.Errorf("T_P = %.12f, direct sum gives %.12f", tp, 1-inside)
	}
	if math.Abs(tp-0.48) > 0.005 {
		t.Errorf("T_P = %.4f, paper says ≈ 0.48", tp)
	}
}

func TestPrivacyGuaranteeBoundaries(t *testing.T) {
	tests := []struct {
		name    string
		fs      int64
		l       int
		epsilon float64
		want    float64
	}{
		// f_s = 10, ε = 0.3: inside is 7..13 (0.7·10 must not round to 8).
		{"exact boundary 7..13", 10, 5, 0.3, -1},
		{"absent value disclosed exactly", 0, 5, 0.3, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PrivacyGuarantee(tc.fs, tc.l, tc.epsilon)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want < 0 { // compute by summing the pmf over 7..13 of Binomial(50, 0.2)
				inside := 0.0
				for k := 7; k <= 13; k++ {
					c := 1.0
					for i := range k {
						c = c * float64(50-i) / float64(i+1)
					}
					inside += c * math.Pow(0.2, float64(k)) * math.Pow(0.8, float64(50-k))
				}
				want = 1 - inside
			}
			if math.Abs(got-want) > 1e-9 {
				t.Errorf("got %.12f, want %.12f", got, want)
			}
		})
	}
}

// T_P is what A′ delivers: over many releases, the share of relative errors
// above ε matches it (binomial test).
func TestPrivacyGuaranteeMatchesMechanism(t *testing.T) {
	const l, runs = 5, 4000
	const epsilon = 0.3
	// Value 0 occurs 8 times among 40 rows spread over 6 values.
	s := []uint32{}
	for x, c := range []int{8, 8, 8, 8, 4, 4} {
		for range c {
			s = append(s, uint32(x))
		}
	}
	tp, err := PrivacyGuarantee(8, l, epsilon)
	if err != nil {
		t.Fatal(err)
	}
	r := rng.NewSeeded(12)
	var exceed int64
	for range runs {
		rel, err := Anonymize([]Column{{Values: s, V: 6}}, l, r)
		if err != nil {
			t.Fatal(err)
		}
		var f int64
		for _, row := range rel.Order {
			if rel.Published[0][row] == 0 {
				f++
			}
		}
		if math.Abs(float64(f)-8) > epsilon*8 {
			exceed++
		}
	}
	stattest.AssertBinomial(t, "releases with relative error > ε", exceed, runs, tp, 1e-6) // false alarm 1e-6
}

func TestGuaranteesReport(t *testing.T) {
	rep, err := Guarantees([]int64{5, 0, 200}, 10, 0.2, 0.02)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Values) != 3 || rep.Values[0].Useful || rep.Values[1].Useful || !rep.Values[2].Useful {
		t.Fatalf("report %+v", rep)
	}
	if rep.Values[1].Privacy != 0 || rep.Values[1].ErrorBound != 1 {
		t.Errorf("absent value: %+v", rep.Values[1])
	}
	if !(rep.Values[0].Privacy > rep.Values[2].Privacy) {
		t.Errorf("small count should be better protected: %+v", rep.Values)
	}
}

func TestGuaranteeArgumentChecks(t *testing.T) {
	inf := math.Inf(1)
	for _, eps := range []float64{0, -0.1, math.NaN(), inf} {
		if _, err := UtilityThreshold(5, eps, 0.02); err == nil {
			t.Errorf("UtilityThreshold accepted ε = %v", eps)
		}
		if _, err := PrivacyGuarantee(5, 5, eps); err == nil {
			t.Errorf("PrivacyGuarantee accepted ε = %v", eps)
		}
	}
	for _, te := range []float64{0, -1, 1.5, math.NaN(), inf} {
		if _, err := UtilityThreshold(5, 0.2, te); err == nil {
			t.Errorf("UtilityThreshold accepted T_E = %v", te)
		}
	}
	if _, err := UtilityThreshold(1, 0.2, 0.02); err == nil {
		t.Error("ℓ′ = 1 accepted")
	}
	if _, err := PrivacyGuarantee(-1, 5, 0.2); err == nil {
		t.Error("negative f_s accepted")
	}
}
