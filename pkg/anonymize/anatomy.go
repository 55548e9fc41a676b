package anonymize

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
)

// AnatomyEntry is one row of Anatomy's sensitive table: Count rows of group
// Group hold value index Value.
type AnatomyEntry struct {
	Group, Value, Count uint32
}

// AnatomyRelease is the Anatomy publication of Xiao and Tao (the ℓ-diversity
// baseline of the paper's §9.4): a group id per row (the quasi-identifier
// table) and, separately, the (group, value, count) sensitive table. Rows are
// not linked to their values beyond their group.
type AnatomyRelease struct {
	// L is ℓ, the number of distinct values in every group.
	L int
	// GroupOf[row] is the group of input row row, NotPublished if dropped.
	GroupOf []uint32
	// Order lists the kept input rows in a uniformly random emission order.
	Order []uint32
	// Dropped lists the N mod ℓ input rows left out, ascending.
	Dropped []uint32
	// ST is the sensitive table, sorted by group then value index.
	ST []AnatomyEntry
}

// Anatomize publishes column s (value indexes < v) the Anatomy way with
// groups of ℓ = l rows and l distinct values, built exactly as A′'s decoy
// groups (random ids, drop of N mod ℓ rows, NewPartition's group creation).
// Eligibility makes Anatomy's residue step unnecessary, so every group has
// one row of each of its ℓ values and every ST count is 1: each row of a
// group holds each of the group's values with probability 1/ℓ to a reader.
func Anatomize(s []uint32, v, l int, r *rand.Rand) (*AnatomyRelease, error) {
	if r == nil {
		return nil, errors.New("anonymize.Anatomize: nil random source")
	}
	n := len(s)
	if int64(n) > MaxRows {
		return nil, fmt.Errorf("anonymize.Anatomize: %d rows, more than %d", n, int64(MaxRows))
	}
	counts, err := countValues(s, v)
	if err != nil {
		return nil, fmt.Errorf("anonymize.Anatomize: %w", err)
	}
	if err := eligible(counts, l); err != nil {
		return nil, fmt.Errorf("anonymize.Anatomize: %w", err)
	}
	byID := randomRowOrder(n, r)
	keep := n - DropCount(n, l)
	rel := &AnatomyRelease{
		L:       l,
		GroupOf: make([]uint32, n),
		Order:   slices.Clone(byID[:keep]),
		Dropped: slices.Clone(byID[keep:]),
		ST:      make([]AnatomyEntry, 0, keep),
	}
	slices.Sort(rel.Dropped)
	shuffle(rel.Order, r)
	members, err := groupRows(byID[:keep], s, v, l)
	if err != nil {
		return nil, fmt.Errorf("anonymize.Anatomize: %w", err)
	}
	p := &Partition{L: l, N: n, Members: members, Dropped: rel.Dropped}
	for _, row := range p.Dropped {
		rel.GroupOf[row] = NotPublished
	}
	for g := range p.Groups() {
		start := len(rel.ST)
		for _, row := range p.Group(g) {
			rel.GroupOf[row] = uint32(g)
			rel.ST = append(rel.ST, AnatomyEntry{Group: uint32(g), Value: s[row], Count: 1})
		}
		// The members' order follows bucket sizes; sort so it shows nothing.
		slices.SortFunc(rel.ST[start:], func(a, b AnatomyEntry) int { return int(a.Value) - int(b.Value) })
	}
	return rel, nil
}
