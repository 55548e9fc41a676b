package anonymize

import (
	"fmt"
	"math/rand/v2"
)

// AssignIDs gives N rows random tuple ids (A′ step 1, §4.1): ids[row] is the
// id of input row row, and ids is a uniformly random permutation of
// 0..N−1 drawn from r, so ids are independent of the rows' content.
func AssignIDs(n int, r *rand.Rand) ([]uint32, error) {
	if r == nil {
		return nil, fmt.Errorf("anonymize.AssignIDs: nil random source")
	}
	if n < 0 || int64(n) > MaxRows {
		return nil, fmt.Errorf("anonymize.AssignIDs: row count must be in [0, %d], got %d", int64(MaxRows), n)
	}
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = uint32(i)
	}
	shuffle(ids, r)
	return ids, nil
}

// shuffle permutes a uniformly at random (Fisher–Yates); Uint32N is unbiased.
func shuffle(a []uint32, r *rand.Rand) {
	for i := len(a) - 1; i > 0; i-- {
		j := r.Uint32N(uint32(i) + 1)
		a[i], a[j] = a[j], a[i]
	}
}

// randomRowOrder returns the rows 0..N−1 in a uniformly random order. Read as
// "order[id] = the row holding id" it is the inverse of a uniformly random id
// assignment, which is again uniform: A′ needs the rows in id order, so it
// draws this directly instead of ids.
func randomRowOrder(n int, r *rand.Rand) []uint32 {
	order := make([]uint32, n)
	for i := range order {
		order[i] = uint32(i)
	}
	shuffle(order, r)
	return order
}
