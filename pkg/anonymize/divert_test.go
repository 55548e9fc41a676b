package anonymize

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/rng"
)

// Fact 1 / Theorem 1: within a decoy group every row's published value is
// uniform over the group's ℓ′ values (and never outside them), whatever the
// row's own value.
func TestDivertUniformOverGroupValues(t *testing.T) {
	const v, l, runs = 6, 3, 30000
	s := []uint32{0, 1, 2, 3, 4, 5, 0, 1, 2, 3, 4, 5, 0, 1} // N = 14: 2 rows dropped
	r := rng.NewSeeded(6)
	ids, _ := AssignIDs(len(s), r)
	p, err := NewPartition(ids, s, v, l)
	if err != nil {
		t.Fatal(err)
	}
	obs := make([][]int64, len(s))
	for i := range obs {
		obs[i] = make([]int64, v)
	}
	for range runs {
		pub, err := p.Divert(s, r)
		if err != nil {
			t.Fatal(err)
		}
		for row, x := range pub {
			if x == NotPublished {
				continue
			}
			obs[row][x]++
		}
	}
	for _, row := range p.Dropped {
		if slices.Max(obs[row]) != 0 {
			t.Errorf("dropped row %d was published", row)
		}
	}
	for g := range p.Groups() {
		probs := make([]float64, v)
		for _, member := range p.Group(g) {
			probs[s[member]] = 1.0 / l
		}
		for _, row := range p.Group(g) {
			// 12 rows at alpha 1e-6 each: false alarm ≤ 1.2e-5 for the test.
			stattest.AssertChiSquare(t, fmt.Sprintf("group %d row %d", g, row), obs[row], probs, 1e-6)
		}
	}
}

// A′ is unbiased (§5): the published count of s is Binomial(ℓ′ f_s, 1/ℓ′),
// mean f_s. Summed over independent releases it is Binomial(R ℓ′ f_s, 1/ℓ′).
func TestAnonymizeCountsUnbiased(t *testing.T) {
	r := rng.NewSeeded(7)
	const n, v, l, runs = 600, 8, 4, 400 // N a multiple of ℓ′: no drop, f_s fixed
	s := randomEligibleColumn(r, n, v, l, true)
	counts, _ := Counts(s, v)
	total := make([]int64, v)
	for range runs {
		rel, err := Anonymize([]Column{{Values: s, V: v}}, l, r)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rel.Order {
			total[rel.Published[0][row]]++
		}
	}
	for x := range v {
		if counts[x] == 0 {
			if total[x] != 0 {
				t.Errorf("absent value %d published %d times", x, total[x])
			}
			continue
		}
		// 8 values at alpha 1e-6 each: false alarm ≤ 8e-6.
		stattest.AssertBinomial(t, fmt.Sprintf("value %d (f_s = %d)", x, counts[x]),
			total[x], int64(runs)*int64(l)*counts[x], 1.0/l, 1e-6)
	}
}

func TestAnonymizeReleaseShape(t *testing.T) {
	r := rng.NewSeeded(8)
	const n, l = 1003, 5
	s1 := randomEligibleColumn(r, n, 9, l, true)
	s2 := randomEligibleColumn(r, n, 6, l, false)
	rel, err := Anonymize([]Column{{Values: s1, V: 9}, {Values: s2, V: 6}}, l, r)
	if err != nil {
		t.Fatal(err)
	}
	if rel.L != l || len(rel.Dropped) != n%l || len(rel.Order) != n-n%l {
		t.Fatalf("L %d, %d dropped, %d in order", rel.L, len(rel.Dropped), len(rel.Order))
	}
	inOrder := make([]bool, n)
	for _, row := range rel.Order {
		if inOrder[row] {
			t.Fatalf("row %d twice in Order", row)
		}
		inOrder[row] = true
	}
	for _, row := range rel.Dropped {
		if inOrder[row] {
			t.Fatalf("dropped row %d in Order", row)
		}
	}
	for k, col := range [][]uint32{s1, s2} {
		counts, _ := Counts(col, 9)
		for row, x := range rel.Published[k] {
			switch {
			case inOrder[row] && (x == NotPublished || counts[x] == 0):
				t.Fatalf("column %d row %d published %d, not a value present", k, row, x)
			case !inOrder[row] && x != NotPublished:
				t.Fatalf("column %d dropped row %d published %d", k, row, x)
			}
		}
	}
}

// Two identical sensitive columns get their own decoy groups (§7.2), built
// from their own random ids. Table: value 0 six times, values 1..6 once,
// ℓ′ = 2, so each 0-row is paired with one of the six singletons according
// to its id rank. A 0-row publishes equal values in both columns with
// probability 1/4 + (1/4)·P(same partner): 1/2 if the columns shared ids,
// 1/4 + 1/24 = 7/24 with independent ids.
func TestAnonymizeColumnsUseOwnGroups(t *testing.T) {
	r := rng.NewSeeded(9)
	const v, l, runs = 7, 2, 4000
	s := []uint32{0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6}
	var equal, total int64
	for range runs {
		rel, err := Anonymize([]Column{{Values: s, V: v}, {Values: s, V: v}}, l, r)
		if err != nil {
			t.Fatal(err)
		}
		for row := range 6 {
			total++
			if rel.Published[0][row] == rel.Published[1][row] {
				equal++
			}
		}
	}
	share := float64(equal) / float64(total)
	// 24000 draws: sd ≤ √(0.25/24000) ≈ 0.0032 (the six rows of a release are
	// negatively dependent, which only shrinks it); 0.02 is > 6 sd, false
	// alarm < 1e-9. Shared ids would sit at 0.5.
	if want := 7.0 / 24; math.Abs(share-want) > 0.02 {
		t.Errorf("0-rows publish equal values in both columns in %.4f of cases, want %.4f (0.5 = shared groups)", share, want)
	}
}

func TestAnonymizeRefusesIneligible(t *testing.T) {
	ok := []uint32{0, 1, 2, 0, 1, 2}
	bad := []uint32{0, 1, 1, 1, 1, 2}
	_, err := Anonymize([]Column{{Values: ok, V: 3}, {Values: bad, V: 3}}, 2, rng.NewSeeded(1))
	var ie *IneligibleError
	if !errors.As(err, &ie) {
		t.Fatalf("want *IneligibleError, got %v", err)
	}
	if ie.Column != 1 || ie.Value != 1 || ie.Count != 4 || ie.LargestL != 1 {
		t.Errorf("got %+v", *ie)
	}
}

func TestAnonymizeRejectsBadArguments(t *testing.T) {
	col := []Column{{Values: []uint32{0, 1, 0, 1}, V: 2}}
	tests := []struct {
		name string
		cols []Column
		l    int
		nilR bool
	}{
		{"no columns", nil, 2, false},
		{"l = 1", col, 1, false},
		{"nil source", col, 2, true},
		{"row count mismatch", []Column{col[0], {Values: []uint32{0, 1}, V: 2}}, 2, false},
		{"value outside codebook", []Column{{Values: []uint32{0, 2, 0, 1}, V: 2}}, 2, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := rng.NewSeeded(1)
			if tc.nilR {
				r = nil
			}
			if _, err := Anonymize(tc.cols, tc.l, r); err == nil {
				t.Error("accepted")
			}
		})
	}
}

func TestAnatomizeGroupsMatchSensitiveTable(t *testing.T) {
	r := rng.NewSeeded(10)
	const n, v, l = 1234, 11, 5
	s := randomEligibleColumn(r, n, v, l, true)
	rel, err := Anatomize(s, v, l, r)
	if err != nil {
		t.Fatal(err)
	}
	groups := len(rel.ST) / l
	if len(rel.ST) != n-n%l || len(rel.Dropped) != n%l || len(rel.Order) != n-n%l {
		t.Fatalf("%d ST entries, %d dropped, %d in order", len(rel.ST), len(rel.Dropped), len(rel.Order))
	}
	// The ST of each group is exactly the multiset of its rows' values.
	fromRows := make([][]uint32, groups)
	for row, g := range rel.GroupOf {
		if g == NotPublished {
			continue
		}
		fromRows[g] = append(fromRows[g], s[row])
	}
	for g := range groups {
		var fromST []uint32
		for _, e := range rel.ST[g*l : (g+1)*l] {
			if int(e.Group) != g || e.Count != 1 {
				t.Fatalf("group %d entry %+v", g, e)
			}
			fromST = append(fromST, e.Value)
		}
		slices.Sort(fromRows[g])
		if !slices.Equal(fromRows[g], fromST) || len(slices.Compact(slices.Clone(fromST))) != l {
			t.Fatalf("group %d: rows hold %v, ST says %v", g, fromRows[g], fromST)
		}
	}
}

func TestAnatomizeRejectsBadArguments(t *testing.T) {
	s := []uint32{0, 1, 1, 1, 2, 0}
	if _, err := Anatomize(s, 3, 2, nil); err == nil {
		t.Error("nil source accepted")
	}
	_, err := Anatomize(s, 3, 3, rng.NewSeeded(1))
	var ie *IneligibleError
	if !errors.As(err, &ie) || ie.Value != 1 || ie.LargestL != 2 {
		t.Errorf("ineligible column: got %v", err)
	}
	if _, err := Anatomize(s, 2, 2, rng.NewSeeded(1)); err == nil {
		t.Error("value outside codebook accepted")
	}
}

// Mechanism A: keep with probability keep, else uniform over all V values.
func TestRandomizeDistribution(t *testing.T) {
	const v, rows = 6, 200000
	tests := []struct {
		keep float64
		true uint32
	}{{0.3, 2}, {0, 5}, {0.9, 0}}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.keep), func(t *testing.T) {
			s := make([]uint32, rows)
			for i := range s {
				s[i] = tc.true
			}
			out, err := Randomize(s, v, tc.keep, rng.NewSeeded(11))
			if err != nil {
				t.Fatal(err)
			}
			obs := make([]int64, v)
			for _, x := range out {
				obs[x]++
			}
			probs := make([]float64, v)
			for i := range probs {
				probs[i] = (1 - tc.keep) / v
			}
			probs[tc.true] += tc.keep
			stattest.AssertChiSquare(t, "published values", obs, probs, 1e-6) // false alarm 1e-6
		})
	}
	for _, keep := range []float64{-0.1, 1, 1.1} {
		if _, err := Randomize([]uint32{0}, 2, keep, rng.NewSeeded(1)); err == nil {
			t.Errorf("keep %v accepted", keep)
		}
	}
	if _, err := Randomize([]uint32{0}, 2, math.NaN(), rng.NewSeeded(1)); err == nil {
		t.Error("keep NaN accepted")
	}
	if _, err := Randomize([]uint32{3}, 2, 0.5, rng.NewSeeded(1)); err == nil {
		t.Error("value outside codebook accepted")
	}
}

// Theorem 1 needs p = q = 1/ℓ′: a row publishes its own value with
// probability exactly 1/ℓ′, like each of its group's ℓ′ − 1 other values.
// Every kept row's indicator [published = true] is then Bernoulli(1/ℓ′),
// independent across rows and releases, so over R releases of an
// Adult-sized column (N = 32,560, 15 values, ℓ′ = 5) the count is exactly
// Binomial(R·N, 1/5).
//
// Two-sided test at false-alarm probability 1e-6 (z = 4.89). Effect size:
// a mechanism that publishes the true value with extra probability δ
// (P = δ + (1 − δ)/ℓ′, a shift δ′ = δ(ℓ′ − 1)/ℓ′) is caught with
// probability ≥ 0.99 when
//
//	n ≥ ((z_α·√(p(1−p)) + z_β·√(p′(1−p′)))/δ′)²,  z_β = 2.33 (β = 0.01),
//
// which for δ = 1/(100ℓ′ + 1) = 1/501 (δ′ = 0.0016, p = 0.2, p′ = 0.2016)
// is n ≥ 3.27M draws: R = 110 releases give 3.58M (power 0.996; the
// smallest shift caught with power 0.99 is δ′ = 0.00152, δ = 0.0019). The
// mutant with that δ was run against this test and failed it.
func TestTrueValuePublishedWithProbabilityOneOverL(t *testing.T) {
	const n, v, l, runs = 32560, 15, 5, 110
	r := rng.NewSeeded(23)
	s := randomEligibleColumn(r, n, v, l, true)
	var hits, draws int64
	for range runs {
		rel, err := Anonymize([]Column{{Values: s, V: v}}, l, r)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rel.Order {
			draws++
			if rel.Published[0][row] == s[row] {
				hits++
			}
		}
	}
	if draws != int64(runs)*n {
		t.Fatalf("%d rows published, want %d", draws, int64(runs)*n)
	}
	stattest.AssertBinomial(t, "rows publishing their own value", hits, draws, 1.0/l, 1e-6)
	t.Logf("%d of %d rows published their own value: %.5f (1/ℓ′ = %.5f)", hits, draws, float64(hits)/float64(draws), 1.0/l)
}
