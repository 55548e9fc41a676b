package estimate

import (
	"fmt"
	"slices"

	"github.com/pramkit/pramkit/pkg/pram"
)

// Counts is the observed joint type of a release in sparse form: how many of
// the m released rows carry each joint value that occurs at all.
type Counts struct {
	K     uint64   // joint alphabet size, 1 ≤ K ≤ pram.MaxJointSize
	Index []uint64 // observed joint values, strictly increasing, each < K
	Count []int64  // Count[i] ≥ 1 rows released as Index[i]
}

// M returns m, the number of released rows.
func (c Counts) M() int64 {
	var m int64
	for _, n := range c.Count {
		m += n
	}
	return m
}

// checkJointSize checks that K is a joint alphabet size, 1 ≤ K ≤ 2^62.
func checkJointSize(K uint64) error {
	if K < 1 || K > pram.MaxJointSize {
		return fmt.Errorf("joint alphabet size K must be in [1, 2^62], got %d", K)
	}
	return nil
}

// validate checks the invariants documented on Counts and returns m.
func (c Counts) validate() (int64, error) {
	if err := checkJointSize(c.K); err != nil {
		return 0, err
	}
	if len(c.Index) != len(c.Count) {
		return 0, fmt.Errorf("%d indexes but %d counts", len(c.Index), len(c.Count))
	}
	var m int64
	for i, g := range c.Index {
		if g >= c.K {
			return 0, fmt.Errorf("joint value %d outside [0, %d)", g, c.K)
		}
		if i > 0 && g <= c.Index[i-1] {
			return 0, fmt.Errorf("indexes not strictly increasing at position %d", i)
		}
		if c.Count[i] < 1 {
			return 0, fmt.Errorf("count %d for joint value %d; listed values need counts ≥ 1", c.Count[i], g)
		}
		m += c.Count[i]
	}
	if m < 1 {
		return 0, fmt.Errorf("no released rows")
	}
	return m, nil
}

// CountsFromDense returns the Counts of a dense count vector (K = len(count),
// zero entries left out).
func CountsFromDense(count []int64) (Counts, error) {
	c := Counts{K: uint64(len(count))}
	for g, n := range count {
		if n < 0 {
			return Counts{}, fmt.Errorf("estimate.CountsFromDense: negative count %d at %d", n, g)
		}
		if n > 0 {
			c.Index = append(c.Index, uint64(g))
			c.Count = append(c.Count, n)
		}
	}
	if _, err := c.validate(); err != nil {
		return Counts{}, fmt.Errorf("estimate.CountsFromDense: %w", err)
	}
	return c, nil
}

// Counter tallies released joint values one row at a time in memory
// O(observed values).
type Counter struct {
	k      uint64
	counts map[uint64]int64
}

// NewCounter returns an empty Counter over a joint alphabet of size K.
func NewCounter(K uint64) (*Counter, error) {
	if err := checkJointSize(K); err != nil {
		return nil, fmt.Errorf("estimate.NewCounter: %w", err)
	}
	return &Counter{k: K, counts: make(map[uint64]int64)}, nil
}

// Add counts one released row with joint value g.
func (c *Counter) Add(g uint64) error {
	if g >= c.k {
		return fmt.Errorf("estimate.Counter.Add: joint value %d outside [0, %d)", g, c.k)
	}
	c.counts[g]++
	return nil
}

// Counts returns the tally so far (sorted by joint value).
func (c *Counter) Counts() Counts {
	out := Counts{K: c.k, Index: make([]uint64, 0, len(c.counts))}
	for g := range c.counts {
		out.Index = append(out.Index, g)
	}
	slices.Sort(out.Index)
	out.Count = make([]int64, len(out.Index))
	for i, g := range out.Index {
		out.Count[i] = c.counts[g]
	}
	return out
}
