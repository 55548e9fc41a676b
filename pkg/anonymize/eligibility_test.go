package anonymize

import (
	"errors"
	"strings"
	"testing"

	"github.com/pramkit/pramkit/pkg/rng"
)

// adultOccupationCounts are the occupation counts of UCI adult.data ("?"
// counted as a value of its own), most frequent first.
var adultOccupationCounts = []int64{4140, 4099, 4066, 3770, 3650, 3295, 2002, 1843, 1597, 1370, 994, 928, 649, 149, 9}

func TestCheckEligibleNamesValueAndLargestL(t *testing.T) {
	tests := []struct {
		name      string
		counts    []int64
		l         int
		wantErr   bool
		wantValue uint32
		wantMaxL  int
	}{
		{"uniform exactly at N/l", []int64{3, 3, 3}, 3, false, 0, 0},
		{"max equals floor(N/l) with remainder", []int64{3, 3, 2, 2}, 3, false, 0, 0}, // N = 10, ⌊10/3⌋ = 3
		{"max one above floor(N/l)", []int64{4, 3, 3}, 3, true, 0, 2},
		{"tie broken by smaller index", []int64{1, 5, 5, 1}, 3, true, 1, 2},
		{"adult occupation l=5", adultOccupationCounts, 5, false, 0, 0},
		{"adult occupation l=7", adultOccupationCounts, 7, false, 0, 0},
		{"adult occupation l=8", adultOccupationCounts, 8, true, 0, 7},
		{"l above distinct values", []int64{5, 0, 5}, 3, true, 0, 2},
		{"single value", []int64{0, 7}, 2, true, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckEligible(tc.counts, tc.l)
			if !tc.wantErr {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var ie *IneligibleError
			if !errors.As(err, &ie) {
				t.Fatalf("want *IneligibleError, got %v", err)
			}
			if !errors.Is(err, ErrIneligible) {
				t.Errorf("errors.Is(err, ErrIneligible) false for %v", err)
			}
			if ie.Value != tc.wantValue || ie.LargestL != tc.wantMaxL {
				t.Errorf("value %d, largest ℓ′ %d; want %d, %d (%v)", ie.Value, ie.LargestL, tc.wantValue, tc.wantMaxL, err)
			}
			if got := LargestFeasibleL(tc.counts); got != tc.wantMaxL {
				t.Errorf("LargestFeasibleL = %d, want %d", got, tc.wantMaxL)
			}
		})
	}
}

func TestCheckEligibleRejectsBadL(t *testing.T) {
	for _, l := range []int{-1, 0, 1} {
		if err := CheckEligible([]int64{5, 5, 5}, l); err == nil || errors.Is(err, ErrIneligible) {
			t.Errorf("ℓ′ = %d: want a parameter error, got %v", l, err)
		}
	}
	if err := CheckEligible([]int64{0, 0}, 2); err == nil {
		t.Error("empty column accepted")
	}
}

func TestIneligibleErrorMessage(t *testing.T) {
	err := CheckEligible(adultOccupationCounts, 8)
	msg := err.Error()
	for _, want := range []string{"value index 0", "4140", "largest feasible ℓ′ is 7"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	err = CheckEligible([]int64{5, 0, 5}, 3)
	if !strings.Contains(err.Error(), "exceeds the 2 distinct values") {
		t.Errorf("message %q does not name the distinct-value shortage", err)
	}
}

// LargestFeasibleL is eligible and one more is not, on random count vectors.
func TestLargestFeasibleLIsTight(t *testing.T) {
	r := rng.NewSeeded(1)
	for trial := range 2000 {
		v := 2 + r.IntN(12)
		counts := make([]int64, v)
		for i := range counts {
			counts[i] = int64(r.IntN(50))
		}
		counts[r.IntN(v)] += 1 // never empty
		l := LargestFeasibleL(counts)
		if l >= 2 {
			if err := CheckEligible(counts, l); err != nil {
				t.Fatalf("trial %d: counts %v ineligible at their largest feasible ℓ′ %d: %v", trial, counts, l, err)
			}
		}
		if err := CheckEligible(counts, max(l+1, 2)); err == nil && l+1 >= 2 {
			t.Fatalf("trial %d: counts %v eligible at ℓ′ = %d > largest %d", trial, counts, l+1, l)
		}
	}
}

func TestDropCountBelowL(t *testing.T) {
	for n := range 40 {
		for l := 2; l <= 9; l++ {
			d := DropCount(n, l)
			if d < 0 || d >= l || (n-d)%l != 0 {
				t.Fatalf("DropCount(%d, %d) = %d", n, l, d)
			}
		}
	}
}
