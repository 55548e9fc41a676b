package anonymize

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Column is one sensitive attribute: a value index per input row.
type Column struct {
	// Values holds the value index of every input row. Required.
	Values []uint32
	// V is the codebook size: every value index is < V. Required.
	V int
}

// Release is a table published by mechanism A′. It says nothing about the
// decoy groups (§4.1 step 4: only D′ and ℓ′ are published).
type Release struct {
	// L is ℓ′, published with the data.
	L int
	// Published[k][row] is the value index published for input row row in
	// sensitive column k, NotPublished for dropped rows.
	Published [][]uint32
	// Order lists the kept input rows in the order to emit them: a uniformly
	// random permutation, independent of the ids and groups (§4.1 step 4).
	Order []uint32
	// Dropped lists the N mod ℓ′ input rows left out, ascending.
	Dropped []uint32
}

// Anonymize publishes the sensitive columns cols of an N-row table with
// mechanism A′ at ℓ′ = l (§4.1, Algorithm 1, p = q = 1/ℓ′ as Theorem 1
// requires). Each published value is drawn uniformly from the ℓ′ distinct
// values of the row's decoy group:
//
//	P(t′.s = s_i) = 1/ℓ′ for s_i ∈ decoys(t),  0 otherwise
//
// so every member of a group has the same output distribution (Fact 1) and
// swapping the non-sensitive values of two members leaves the law of D′
// unchanged (Theorem 1, ℓ′-diverted zero-differential privacy).
//
// Several columns are randomized independently, each with its own decoy
// groups built from its own random ids (§7.2); the N mod ℓ′ dropped rows are
// common to all columns, chosen uniformly at random. Every column must be
// eligible for l (an *IneligibleError names the column, value and largest
// feasible ℓ′).
//
// Memory: 8 bytes per row of work space (the rows in id order, reused as
// the group members, and the value buckets) plus the outputs, 4 bytes per
// row for Order and 4 per row and column for Published: 16 bytes per row in
// all for one column (measured by BenchmarkAnonymize500k).
func Anonymize(cols []Column, l int, r *rand.Rand) (*Release, error) {
	if r == nil {
		return nil, errors.New("anonymize.Anonymize: nil random source")
	}
	if len(cols) == 0 {
		return nil, errors.New("anonymize.Anonymize: no sensitive column")
	}
	if l < 2 {
		return nil, fmt.Errorf("anonymize.Anonymize: ℓ′ must be at least 2, got %d", l)
	}
	n := len(cols[0].Values)
	if int64(n) > MaxRows {
		return nil, fmt.Errorf("anonymize.Anonymize: %d rows, more than %d", n, int64(MaxRows))
	}
	for k, c := range cols {
		if len(c.Values) != n {
			return nil, fmt.Errorf("anonymize.Anonymize: sensitive column %d has %d rows, column 0 has %d", k, len(c.Values), n)
		}
		counts, err := countValues(c.Values, c.V)
		if err != nil {
			return nil, fmt.Errorf("anonymize.Anonymize: sensitive column %d: %w", k, err)
		}
		if err := eligible(counts, l); err != nil {
			var ie *IneligibleError
			if errors.As(err, &ie) {
				ie.Column = k
			}
			return nil, fmt.Errorf("anonymize.Anonymize: sensitive column %d: %w", k, err)
		}
	}

	byID := randomRowOrder(n, r) // byID[id] = row holding that id
	keep := n - DropCount(n, l)
	rel := &Release{L: l, Published: make([][]uint32, len(cols))}
	rel.Dropped = slices.Clone(byID[keep:])
	slices.Sort(rel.Dropped)
	rel.Order = slices.Clone(byID[:keep])
	shuffle(rel.Order, r)

	buf := byID[:keep]
	for k, c := range cols {
		if k > 0 {
			// Fresh ids for this column's groups, independent of column 0's
			// (§7.2: each attribute randomized independently).
			copy(buf, rel.Order)
			shuffle(buf, r)
		}
		members, err := groupRows(buf, c.Values, c.V, l)
		if err != nil {
			return nil, fmt.Errorf("anonymize.Anonymize: sensitive column %d: %w", k, err)
		}
		pub := make([]uint32, n)
		for _, row := range rel.Dropped {
			pub[row] = NotPublished
		}
		divert(members, c.Values, l, pub, r)
		rel.Published[k] = pub
	}
	return rel, nil
}

// Divert runs A′'s randomization (§4.1 step 3, p = q = 1/ℓ′) on column s
// over the decoy groups of p, which must have been built from s: it returns
// the published value index of every input row, NotPublished for the dropped
// ones. Use Anonymize for a whole release; Divert exists for callers that
// keep a Partition.
func (p *Partition) Divert(s []uint32, r *rand.Rand) ([]uint32, error) {
	if r == nil {
		return nil, errors.New("anonymize.Partition.Divert: nil random source")
	}
	if len(s) != p.N {
		return nil, fmt.Errorf("anonymize.Partition.Divert: column has %d rows, the partition %d", len(s), p.N)
	}
	pub := make([]uint32, p.N)
	for _, row := range p.Dropped {
		pub[row] = NotPublished
	}
	divert(p.Members, s, p.L, pub, r)
	return pub, nil
}

// divert draws, for every row of every group, one of the group's members
// uniformly and publishes that member's value.
func divert(members, s []uint32, l int, pub []uint32, r *rand.Rand) {
	ul := uint32(l)
	for base := 0; base < len(members); base += l {
		g := members[base : base+l]
		for _, row := range g {
			pub[row] = s[g[r.Uint32N(ul)]]
		}
	}
}
