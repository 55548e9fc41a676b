package anonymize

import (
	"errors"
	"fmt"
	"math"
)

// NotPublished marks an input row that is absent from a release (one of the
// N mod ℓ′ dropped rows) in the per-row slices of Release and AnatomyRelease.
const NotPublished = math.MaxUint32

// MaxRows is the largest table this package handles: row positions and ids
// are uint32, and NotPublished must stay free.
const MaxRows = math.MaxUint32

// ErrIneligible is matched (errors.Is) by every *IneligibleError.
var ErrIneligible = errors.New("table not eligible for ℓ′")

// IneligibleError reports a sensitive column that cannot be split into decoy
// groups of ℓ′ distinct values. Callers map Value to its codebook label.
type IneligibleError struct {
	Column   int    // index of the sensitive column in Anonymize's cols (else 0)
	Value    uint32 // the most frequent value index (smallest index among ties)
	Count    int64  // its frequency f_max
	N        int64  // rows in the column before the drop
	Distinct int    // number of distinct values present
	L        int    // the ℓ′ asked for
	LargestL int    // the largest feasible ℓ′, ⌊N/f_max⌋; below 2 means none
}

func (e *IneligibleError) Error() string {
	feasible := fmt.Sprintf("the largest feasible ℓ′ is %d", e.LargestL)
	if e.LargestL < 2 {
		feasible = "no ℓ′ ≥ 2 is feasible"
	}
	if e.Distinct < e.L {
		return fmt.Sprintf("ℓ′ = %d exceeds the %d distinct values present (value index %d occurs %d of %d times); %s",
			e.L, e.Distinct, e.Value, e.Count, e.N, feasible)
	}
	return fmt.Sprintf("value index %d occurs %d times, more than N/ℓ′ = %d/%d = %d; %s",
		e.Value, e.Count, e.N, e.L, e.N/int64(e.L), feasible)
}

// Is lets errors.Is(err, ErrIneligible) match.
func (e *IneligibleError) Is(target error) bool { return target == ErrIneligible }

// Counts returns the frequency f_v of every value index v < V in column s.
func Counts(s []uint32, v int) ([]int64, error) {
	counts, err := countValues(s, v)
	if err != nil {
		return nil, fmt.Errorf("anonymize.Counts: %w", err)
	}
	return counts, nil
}

// countValues is Counts with errors left for the caller to prefix.
func countValues(s []uint32, v int) ([]int64, error) {
	if v < 1 || int64(v) > math.MaxUint32 {
		return nil, fmt.Errorf("codebook size V must be in [1, 2^32−1], got %d", v)
	}
	counts := make([]int64, v)
	for row, x := range s {
		if int(x) >= v {
			return nil, fmt.Errorf("row %d has value index %d, outside the codebook of %d values", row, x, v)
		}
		counts[x]++
	}
	return counts, nil
}

// LargestFeasibleL returns the largest ℓ′ for which a column with these value
// counts is eligible (§4: f_max ≤ N/ℓ′):
//
//	ℓ′_max = ⌊N / f_max⌋,   N = Σ_v f_v,  f_max = max_v f_v
//
// since f_max ≤ N/ℓ′ ⇔ ℓ′ ≤ N/f_max. It is never more than the number of
// distinct values present (N ≤ distinct·f_max). It returns 0 for an empty
// column; a result below 2 means no ℓ′ is feasible.
func LargestFeasibleL(counts []int64) int {
	n, fmax, _, _ := summarize(counts)
	if fmax == 0 {
		return 0
	}
	return int(n / fmax)
}

// summarize returns N, f_max, the first value index attaining f_max and the
// number of distinct values present.
func summarize(counts []int64) (n, fmax int64, argmax uint32, distinct int) {
	for v, c := range counts {
		n += c
		if c > fmax {
			fmax, argmax = c, uint32(v)
		}
		if c > 0 {
			distinct++
		}
	}
	return n, fmax, argmax, distinct
}

// CheckEligible returns nil when a column with these value counts can be
// published with this ℓ′, and an *IneligibleError otherwise. The condition is
// checked on the whole column, before the drop of N mod ℓ′ rows:
//
//	f_max ≤ N/ℓ′  ⇔  f_max ≤ ⌊N/ℓ′⌋ = N″/ℓ′,   N″ = N − (N mod ℓ′)
//
// so the column stays eligible after dropping any N mod ℓ′ rows (dropping
// only lowers counts, and N″/ℓ′ = ⌊N/ℓ′⌋). Checking before the drop keeps the
// answer deterministic: checked after a random drop, a column with
// f_max = ⌊N/ℓ′⌋ + 1 would pass or fail depending on which rows the coin
// removed.
func CheckEligible(counts []int64, l int) error {
	if err := eligible(counts, l); err != nil {
		return fmt.Errorf("anonymize.CheckEligible: %w", err)
	}
	return nil
}

// eligible is CheckEligible with errors left for the caller to prefix.
func eligible(counts []int64, l int) error {
	if l < 2 {
		return fmt.Errorf("ℓ′ must be at least 2, got %d", l)
	}
	n, fmax, argmax, distinct := summarize(counts)
	if n == 0 {
		return errors.New("empty column")
	}
	if distinct < l || fmax > n/int64(l) {
		return &IneligibleError{
			Value: argmax, Count: fmax, N: n, Distinct: distinct, L: l,
			LargestL: int(n / fmax),
		}
	}
	return nil
}

// DropCount returns how many rows A′ leaves out of an N-row table so that
// the rest splits into groups of ℓ′: N mod ℓ′, always < ℓ′ (§4).
func DropCount(n, l int) int {
	if l < 1 {
		return 0
	}
	return n % l
}
