package anonymize

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// The published rows come in an order independent of the decoy groups
// (§4.1 step 4: shuffle, then publish). Black box, through the command:
// emitted in the order the groups were created, or in the order of the
// random ids the groups are built from, the first rows would belong to
// groups created first, which Anatomy's group creation fills from the
// largest value buckets; the smallest values (here v6, 100 of 1500 rows)
// join only the last groups. The rows' published values would then depend
// on their position in the file, which a uniform shuffle rules out.
//
// Test: for each of R releases, Pearson's χ² of the 10 × 7 table of
// position decile × published value against independence (expected
// counts from the table's margins, ≥ 10 per cell); under a uniform
// shuffle the position of each row is independent of its published value
// given the margins, so the sum over releases is χ² with 54R degrees of
// freedom. False alarm 1e-6 (limit 586.4 for R = 8). Effect size: with
// noncentrality λ = M·w² (M = R·1500 = 12,000 rows, w Cohen's effect
// size), the test has power 0.99 from λ ≈ 256 (normal approximation of the
// noncentral χ², mean 432 + λ, sd √(2(432 + 2λ))), i.e. w ≈ 0.15. Rows in
// id order (the shuffle removed) give χ² ≈ 1400 (w ≈ 0.28), in group
// order ≈ 2500; both mutants were run against this test and failed it
// (TestDivertedPublishesNoGroupsOrIDs catches only the second).
func TestPublishedOrderIsIndependentOfTheGroups(t *testing.T) {
	const l, bins, runs = 4, 10, 8
	counts := []int{300, 260, 250, 240, 200, 150, 100} // N = 1500, a multiple of ℓ′
	v := len(counts)
	dir, in, cb, _ := testTable(t, counts)
	var stat float64
	for run := range runs {
		out := filepath.Join(dir, fmt.Sprintf("out%d.csv", run))
		mustAnon(t, "--sensitive", "s", "--l", strconv.Itoa(l), "--codebook", cb, "--seed", strconv.Itoa(40+run), "--insecure-seed", in, "-o", out)
		rows := readCSV(t, out)[1:]
		m := len(rows)
		tab := make([][]float64, bins)
		for b := range tab {
			tab[b] = make([]float64, v)
		}
		for i, r := range rows {
			x, err := strconv.Atoi(r[1][1:])
			if err != nil || x >= v {
				t.Fatalf("row %d: published value %q", i, r[1])
			}
			tab[i*bins/m][x]++
		}
		rowSum, colSum := make([]float64, bins), make([]float64, v)
		for b := range bins {
			for x := range v {
				rowSum[b] += tab[b][x]
				colSum[x] += tab[b][x]
			}
		}
		var s float64
		for b := range bins {
			for x := range v {
				e := rowSum[b] * colSum[x] / float64(m)
				d := tab[b][x] - e
				s += d * d / e
			}
		}
		stat += s
	}
	df := float64(runs * (bins - 1) * (v - 1))
	limit := distuv.ChiSquared{K: df}.Quantile(1 - 1e-6)
	t.Logf("χ² = %.1f with %v degrees of freedom (limit %.1f at false alarm 1e-6)", stat, df, limit)
	if stat > limit {
		t.Errorf("published value depends on the row's position: χ² = %.1f > %.1f (%v degrees of freedom, false alarm 1e-6): rows not shuffled independently of the groups", stat, limit, df)
	}
}
