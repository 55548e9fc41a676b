package anonymize

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/rng"
)

// randomEligibleColumn draws an N-row column over V values whose largest
// count is exactly ⌊N/l⌋ when tight (the eligibility boundary), else at most
// that. It returns nil when no such column exists (V·⌊N/l⌋ < N).
func randomEligibleColumn(r *rand.Rand, n, v, l int, tight bool) []uint32 {
	limit := n / l
	if v*limit < n {
		return nil
	}
	counts := make([]int, v)
	left := n
	if tight {
		counts[r.IntN(v)] = limit
		left -= limit
	}
	for left > 0 {
		x := r.IntN(v)
		if counts[x] < limit {
			counts[x]++
			left--
		}
	}
	s := make([]uint32, 0, n)
	for x, c := range counts {
		for range c {
			s = append(s, uint32(x))
		}
	}
	r.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	return s
}

// checkGroups fails t unless p splits the N − N mod ℓ′ kept rows into groups
// of exactly ℓ′ distinct values, each kept row once, and drops the rows with
// the N mod ℓ′ largest ids.
func checkGroups(t *testing.T, p *Partition, ids, s []uint32, l int) {
	t.Helper()
	n := len(s)
	if len(p.Dropped) != n%l || len(p.Dropped) >= l {
		t.Fatalf("dropped %d rows, want N mod ℓ′ = %d < %d", len(p.Dropped), n%l, l)
	}
	for _, row := range p.Dropped {
		if int(ids[row]) < n-n%l {
			t.Fatalf("dropped row %d has id %d, not among the %d largest", row, ids[row], n%l)
		}
	}
	seen := make([]bool, n)
	for _, row := range p.Dropped {
		seen[row] = true
	}
	for g := range p.Groups() {
		grp := p.Group(g)
		vals := make([]uint32, 0, l)
		for _, row := range grp {
			if seen[row] {
				t.Fatalf("row %d appears twice", row)
			}
			seen[row] = true
			vals = append(vals, s[row])
		}
		slices.Sort(vals)
		if len(slices.Compact(vals)) != l {
			t.Fatalf("group %d has values %v, want %d distinct", g, vals, l)
		}
	}
	for row, ok := range seen {
		if !ok {
			t.Fatalf("row %d in no group and not dropped", row)
		}
	}
}

func TestEveryDecoyGroupHasLDistinctValues(t *testing.T) {
	r := rng.NewSeeded(2)
	tests := []struct{ n, v, l int }{
		{12, 3, 3}, {13, 5, 3}, {100, 4, 4}, {1001, 15, 10}, {997, 50, 2}, {5000, 20, 7}, {7, 7, 7},
	}
	for _, tc := range tests {
		for trial := range 30 {
			s := randomEligibleColumn(r, tc.n, tc.v, tc.l, trial%2 == 0)
			ids, err := AssignIDs(tc.n, r)
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewPartition(ids, s, tc.v, tc.l)
			if err != nil {
				t.Fatalf("n=%d v=%d l=%d: %v", tc.n, tc.v, tc.l, err)
			}
			checkGroups(t, p, ids, s, tc.l)
		}
	}
}

// groupsAsIDs lists the groups of p as the ids of their members.
func groupsAsIDs(p *Partition, ids []uint32) [][]uint32 {
	out := make([][]uint32, p.Groups())
	for g := range out {
		for _, row := range p.Group(g) {
			out[g] = append(out[g], ids[row])
		}
	}
	return out
}

func TestPartitionDeterministicGivenIDAndValue(t *testing.T) {
	r := rng.NewSeeded(3)
	const n, v, l = 2003, 12, 6
	s := randomEligibleColumn(r, n, v, l, true)
	ids, _ := AssignIDs(n, r)
	p1, err := NewPartition(ids, s, v, l)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := NewPartition(slices.Clone(ids), slices.Clone(s), v, l)
	if !slices.Equal(p1.Members, p2.Members) || !slices.Equal(p1.Dropped, p2.Dropped) {
		t.Fatal("same (id, S) twice gave different groups")
	}

	// The same (id, S) pairs in another row order: same groups of ids.
	perm := r.Perm(n)
	ids3, s3 := make([]uint32, n), make([]uint32, n)
	for i, j := range perm {
		ids3[j], s3[j] = ids[i], s[i]
	}
	p3, err := NewPartition(ids3, s3, v, l)
	if err != nil {
		t.Fatal(err)
	}
	g1, g3 := groupsAsIDs(p1, ids), groupsAsIDs(p3, ids3)
	for g := range g1 {
		if !slices.Equal(g1[g], g3[g]) {
			t.Fatalf("group %d: ids %v before shuffling rows, %v after", g, g1[g], g3[g])
		}
	}
	d1, d3 := make([]uint32, 0), make([]uint32, 0)
	for _, row := range p1.Dropped {
		d1 = append(d1, ids[row])
	}
	for _, row := range p3.Dropped {
		d3 = append(d3, ids3[row])
	}
	slices.Sort(d1)
	slices.Sort(d3)
	if !slices.Equal(d1, d3) {
		t.Fatalf("dropped ids %v before shuffling rows, %v after", d1, d3)
	}
}

// The smallest ids go first: Anatomy's rule applied by hand to a tiny table.
func TestPartitionTakesLargestBucketsSmallestIDs(t *testing.T) {
	// Values: a=0 ×3, b=1 ×2, c=2 ×1; ℓ′ = 2, N = 6.
	s := []uint32{0, 0, 0, 1, 1, 2}
	ids := []uint32{5, 1, 3, 4, 0, 2}
	p, err := NewPartition(ids, s, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	// Step 1: largest buckets a (3), b (2): a's smallest id 1 (row 1), b's id 0 (row 4).
	// Step 2: a (2), b (1), c (1): a's id 3 (row 2), then b beats c on index: id 4 (row 3).
	// Step 3: a (1), c (1): id 5 (row 0), id 2 (row 5).
	want := []uint32{1, 4, 2, 3, 0, 5}
	if !slices.Equal(p.Members, want) {
		t.Fatalf("members %v, want %v", p.Members, want)
	}
}

func TestNewPartitionRejectsBadInput(t *testing.T) {
	s := []uint32{0, 1, 2, 0, 1, 2}
	tests := []struct {
		name string
		ids  []uint32
		s    []uint32
		v, l int
	}{
		{"ids length", []uint32{0, 1, 2}, s, 3, 2},
		{"duplicate id", []uint32{0, 1, 2, 3, 4, 4}, s, 3, 2},
		{"id out of range", []uint32{0, 1, 2, 3, 4, 6}, s, 3, 2},
		{"value outside codebook", []uint32{0, 1, 2, 3, 4, 5}, []uint32{0, 1, 3, 0, 1, 2}, 3, 2},
		{"l below 2", []uint32{0, 1, 2, 3, 4, 5}, s, 3, 1},
		{"V zero", []uint32{0, 1, 2, 3, 4, 5}, s, 0, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NewPartition(tc.ids, tc.s, tc.v, tc.l); err == nil {
				t.Error("accepted")
			}
		})
	}
	_, err := NewPartition([]uint32{0, 1, 2, 3, 4, 5}, []uint32{0, 0, 0, 0, 1, 2}, 3, 2)
	var ie *IneligibleError
	if !errors.As(err, &ie) || ie.Value != 0 || ie.LargestL != 1 {
		t.Errorf("ineligible column: got %v", err)
	}
}

// A drop of N mod ℓ′ random rows never breaks eligibility: tables at the
// boundary f_max = ⌊N/ℓ′⌋, with every possible remainder, all partition.
func TestDropNeverBreaksEligibility(t *testing.T) {
	r := rng.NewSeeded(4)
	for trial := range 3000 {
		l := 2 + r.IntN(6)
		n := l*(1+r.IntN(8)) + r.IntN(l)
		v := l + r.IntN(4)
		s := randomEligibleColumn(r, n, v, l, true)
		if s == nil {
			continue // V = ℓ′ with a remainder: no eligible column exists
		}
		ids, _ := AssignIDs(n, r)
		p, err := NewPartition(ids, s, v, l)
		if err != nil {
			t.Fatalf("trial %d (n=%d l=%d v=%d): %v", trial, n, l, v, err)
		}
		checkGroups(t, p, ids, s, l)
	}
}

func TestAssignIDsUniform(t *testing.T) {
	// Where id 0 lands among 5 rows: uniform over the 5 positions.
	r := rng.NewSeeded(5)
	const rows, draws = 5, 50000
	obs := make([]int64, rows)
	for range draws {
		ids, err := AssignIDs(rows, r)
		if err != nil {
			t.Fatal(err)
		}
		obs[slices.Index(ids, 0)]++
		sorted := slices.Sorted(slices.Values(ids))
		for i, id := range sorted {
			if id != uint32(i) {
				t.Fatalf("ids %v are not a permutation", ids)
			}
		}
	}
	stattest.AssertChiSquare(t, "position of id 0", obs, []float64{0.2, 0.2, 0.2, 0.2, 0.2}, 1e-6) // false alarm 1e-6
	if _, err := AssignIDs(3, nil); err == nil {
		t.Error("nil source accepted")
	}
	if _, err := AssignIDs(-1, r); err == nil {
		t.Error("negative N accepted")
	}
}
