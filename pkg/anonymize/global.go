package anonymize

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Randomize publishes column s (value indexes < v) with global randomization,
// the paper's mechanism A (§3, after Agrawal, Srikant and Thomas): each row
// independently keeps its value with probability keep, and otherwise gets a
// value drawn uniformly from the whole codebook of V values (possibly its
// own); keep must be in [0, 1), since keep = 1 publishes the column
// unchanged. The transition matrix is
//
//	A = keep·I + (1 − keep)/V · J      (J: the all-ones V×V matrix)
//
// so a row retains its value with probability p = keep + (1 − keep)/V and
// turns into each other value with q = (1 − keep)/V; the paper's §3
// parameter is that retention p. §9.4 compares A′ against mechanism A with
// p = 1/ℓ′, that is keep = (V/ℓ′ − 1)/(V − 1). Lemmas 2–3: unless keep = 0,
// mechanism A is not zero-differentially private.
func Randomize(s []uint32, v int, keep float64, r *rand.Rand) ([]uint32, error) {
	if r == nil {
		return nil, errors.New("anonymize.Randomize: nil random source")
	}
	if err := CheckKeep(v, keep); err != nil {
		return nil, err
	}
	uv := uint32(v)
	out := make([]uint32, len(s))
	for row, x := range s {
		if x >= uv {
			return nil, fmt.Errorf("anonymize.Randomize: row %d has value index %d, outside the codebook of %d values", row, x, v)
		}
		out[row] = RandomizeValue(x, uv, keep, r)
	}
	return out, nil
}

// CheckKeep checks Randomize's codebook size v and keep probability.
func CheckKeep(v int, keep float64) error {
	if v < 1 || int64(v) > math.MaxUint32 {
		return fmt.Errorf("anonymize.Randomize: codebook size V must be in [1, 2^32−1], got %d", v)
	}
	if !(keep >= 0 && keep < 1) { // also rejects NaN
		// keep = 1 would publish the column unchanged: no privacy.
		return fmt.Errorf("anonymize.Randomize: keep probability must be in [0, 1), got %v", keep)
	}
	return nil
}

// RandomizeValue is Randomize on one value x < v, already checked: x with
// probability keep, else a value drawn uniformly from the v values. A run
// that draws each row from a stream of its own (pramkit-beam anonymize,
// where a retried bundle must redraw the same values) calls it per row.
func RandomizeValue(x, v uint32, keep float64, r *rand.Rand) uint32 {
	if r.Float64() < keep {
		return x
	}
	return r.Uint32N(v)
}
