package bitflip

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/pramkit/pramkit/internal/adulttest"
	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/estimate"
	"github.com/pramkit/pramkit/pkg/rng"
)

// fixedTable returns n one-word records whose bit i is set in exactly
// round(f[i]·n) of them, and the exact frequencies.
func fixedTable(n int, f []float64) ([]uint64, []float64) {
	recs := make([]uint64, n)
	exact := make([]float64, len(f))
	for i, fi := range f {
		k := int(math.Round(fi * float64(n)))
		for r := 0; r < k; r++ {
			recs[(r*7+i)%n] |= 1 << i // spread the ones over the rows
		}
		exact[i] = float64(k) / float64(n)
	}
	return recs, exact
}

func TestPerBitEstimatorIsUnbiasedWithTheStatedVariance(t *testing.T) {
	const n, runs = 1000, 600
	f := []float64{0, 0.1, 0.3, 0.5, 0.8, 1}
	recs, exact := fixedTable(n, f)
	for _, q := range []float64{0.1, 0.3} {
		m, _ := New(Options{LieProbability: q, Bits: len(f)})
		z := m.NewRandomizer(rng.NewSeeded(uint64(q * 100)))
		sum := make([]float64, len(f))
		sumSq := make([]float64, len(f))
		row := make([]uint64, 1)
		var se float64
		for range runs {
			tally := m.NewTally()
			for _, v := range recs {
				row[0] = v
				_ = z.Randomize(row)
				_ = tally.Add(row)
			}
			est, err := m.EstimateBits(tally, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range est {
				d := e.Freq - exact[i]
				sum[i] += d
				sumSq[i] += d * d
			}
			se = est[0].SETable
		}
		// Bounds of the sample variance: (runs−1)s²/σ² ~ χ²(runs−1) for
		// normal f̂ (n = 1000 Bernoulli sums); false-alarm probability 1e-6
		// per bit for the mean and for the variance.
		chi := distuv.ChiSquared{K: runs - 1}
		lo, hi := chi.Quantile(0.5e-6)/(runs-1), chi.Quantile(1-0.5e-6)/(runs-1)
		for i := range f {
			stattest.AssertMean(t, fmt.Sprintf("q %g bit %d: f̂ − f", q, i), sum[i]/runs, 0, se, runs, 1e-6)
			mean := sum[i] / runs
			v := (sumSq[i] - runs*mean*mean) / (runs - 1)
			if r := v / (se * se); r < lo || r > hi {
				t.Errorf("q %g bit %d: empirical variance / SETable² = %.3f outside [%.3f, %.3f]", q, i, r, lo, hi)
			}
		}
	}
}

func TestConfidenceIntervalsCoverNominally(t *testing.T) {
	// Table target: fixed records, f̂ ± z·SETable. Population target: a
	// new table drawn from Ber(f) per bit each run, [Lo, Hi] = f̂ ± z·SE.
	// Both should cover 95 % of the time; the count of covering intervals
	// over runs × bits (independent) is checked against Binomial(·, 0.95)
	// with false-alarm probability 1e-6.
	const n, runs = 800, 500
	f := []float64{0.05, 0.2, 0.5, 0.7, 0.9}
	z95 := distuv.UnitNormal.Quantile(0.975)
	recs, exact := fixedTable(n, f)
	m, _ := New(Options{LieProbability: 0.2, Bits: len(f)})
	g := rng.NewSeeded(77)
	z := m.NewRandomizer(g)
	row := make([]uint64, 1)
	var coveredTable, coveredPop int64
	for range runs {
		tab, pop := m.NewTally(), m.NewTally()
		for _, v := range recs {
			row[0] = v
			_ = z.Randomize(row)
			_ = tab.Add(row)
			row[0] = 0
			for i, fi := range f {
				if g.Float64() < fi {
					row[0] |= 1 << i
				}
			}
			_ = z.Randomize(row)
			_ = pop.Add(row)
		}
		et, _ := m.EstimateBits(tab, 0.95)
		ep, _ := m.EstimateBits(pop, 0.95)
		for i := range f {
			if math.Abs(et[i].Freq-exact[i]) <= z95*et[i].SETable {
				coveredTable++
			}
			if ep[i].Lo <= f[i] && f[i] <= ep[i].Hi {
				coveredPop++
			}
		}
	}
	stattest.AssertBinomial(t, "table coverage", coveredTable, runs*int64(len(f)), 0.95, 1e-6)
	stattest.AssertBinomial(t, "population coverage", coveredPop, runs*int64(len(f)), 0.95, 1e-6)
	t.Logf("coverage of 95%% intervals: table %.4f, population %.4f",
		float64(coveredTable)/float64(runs*len(f)), float64(coveredPop)/float64(runs*len(f)))
}

func TestEstimateRejectsBadInput(t *testing.T) {
	m, _ := New(Options{LieProbability: 0.2, Bits: 3})
	for _, c := range []float64{0, 1, -0.5, math.NaN()} {
		if _, err := m.EstimateBit(5, 10, c); err == nil {
			t.Errorf("confidence %v accepted", c)
		}
	}
	if _, err := m.EstimateBit(11, 10, 0.9); err == nil {
		t.Error("ones > n accepted")
	}
	if _, err := m.EstimateBits(m.NewTally(), 0.9); err == nil {
		t.Error("empty tally accepted")
	}
	if _, err := m.EstimateBits(&Tally{N: 3, Ones: []int64{1, 2}}, 0.9); err == nil {
		t.Error("tally of the wrong length accepted")
	}
	if err := m.NewTally().Add([]uint64{1, 2}); err == nil {
		t.Error("two-word row accepted for L = 3")
	}
}

func TestTallyCountsSetBitsBelowL(t *testing.T) {
	m, _ := New(Options{LieProbability: 0.2, Bits: 66})
	tally := m.NewTally()
	_ = tally.Add([]uint64{1<<63 | 1, 0b10 | 1<<5}) // bit 69 (≥ L) ignored
	_ = tally.Add([]uint64{1, 0})
	want := make([]int64, 66)
	want[0], want[63], want[65] = 2, 1, 1
	if tally.N != 2 || !slices.Equal(tally.Ones, want) {
		t.Errorf("tally N %d ones %v", tally.N, tally.Ones)
	}
	other := m.NewTally()
	_ = other.Add([]uint64{1, 0})
	if err := tally.Merge(other); err != nil || tally.N != 3 || tally.Ones[0] != 3 {
		t.Errorf("merge: N %d ones[0] %d err %v", tally.N, tally.Ones[0], err)
	}
}

func TestEstimateBitMatchesHandValues(t *testing.T) {
	// q = 0.25, 300 of 1000 reports set: ȳ = 0.3, f̂ = 0.05/0.5 = 0.1,
	// SE = √(0.3·0.7/1000)/0.5 = 0.028982753492378877,
	// SETable = √(0.25·0.75/1000)/0.5 = 0.027386127875258306.
	m, _ := New(Options{LieProbability: 0.25, Bits: 1})
	e, err := m.EstimateBit(300, 1000, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	z := 1.959963984540054
	want := Estimate{Freq: 0.1, SE: 0.028982753492378877, SETable: 0.027386127875258306}
	want.Lo, want.Hi = want.Freq-z*want.SE, want.Freq+z*want.SE
	for _, p := range [][3]float64{{e.Freq, want.Freq}, {e.SE, want.SE}, {e.SETable, want.SETable}, {e.Lo, want.Lo}, {e.Hi, want.Hi}} {
		if relErr(p[0], p[1]) > 1e-12 {
			t.Errorf("got %+v, want %+v", e, want)
			break
		}
	}
}

// encodeAdult encodes sex (binary), race, relationship and marital-status
// (one-hot) of the Adult rows: L = 1 + 5 + 6 + 7 = 19.
func encodeAdult(t *testing.T, rows [][]string) (*Layout, []uint64, [][]float64) {
	t.Helper()
	groups := []Group{
		{Name: "sex", Kind: Binary, Labels: []string{"Female", "Male"}},
		{Name: "race", Labels: []string{"White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"}},
		{Name: "relationship", Labels: []string{"Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"}},
		{Name: "marital-status", Labels: []string{"Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed", "Married-spouse-absent", "Married-AF-spouse"}},
	}
	cols := []int{9, 8, 7, 5} // positions in adulttest.Columns
	l, err := NewLayout(groups)
	if err != nil {
		t.Fatal(err)
	}
	truth := make([][]float64, len(groups))
	for j, g := range groups {
		truth[j] = make([]float64, len(g.Labels))
	}
	recs := make([]uint64, len(rows))
	values := make([]int, len(groups))
	row := make([]uint64, 1)
	for i, r := range rows {
		for j, g := range groups {
			values[j] = slices.Index(g.Labels, r[cols[j]])
			if values[j] < 0 {
				t.Fatalf("row %d: %s = %q not in codebook", i, g.Name, r[cols[j]])
			}
			truth[j][values[j]] += 1 / float64(len(rows))
		}
		if err := l.Encode(values, row); err != nil {
			t.Fatal(err)
		}
		recs[i] = row[0]
	}
	return l, recs, truth
}

func TestAdultDistributionsAndAnonymity(t *testing.T) {
	rows := adulttest.Load(t, "data")
	l, recs, truth := encodeAdult(t, rows)
	n := len(recs)
	for _, q := range []float64{0.1, 0.25, 0.4} {
		m, err := New(Options{LieProbability: q, Bits: l.Width()})
		if err != nil {
			t.Fatal(err)
		}
		z := m.NewRandomizer(rng.NewSeeded(uint64(q * 1000)))
		tally := m.NewTally()
		row := make([]uint64, 1)
		for _, v := range recs {
			row[0] = v
			_ = z.Randomize(row)
			_ = tally.Add(row)
		}
		seTable := math.Sqrt(q*(1-q)/float64(n)) / (1 - 2*q)
		for j := range l.NumGroups() {
			est, err := m.Distribution(l, j, tally)
			if err != nil {
				t.Fatal(err)
			}
			e, _ := estimate.L2Slice(est, truth[j])
			// Per-bit errors are independent with sd SETable (only flips are
			// random), so ‖raw − truth‖²/SETable² ≈ χ²(k); projection onto the
			// simplex (which holds the truth) can only shrink the distance.
			// A binary group's two entries carry one error: ‖·‖² = 2·err².
			k := len(est)
			scale := 1.0
			if l.Group(j).Kind == Binary {
				k, scale = 1, 2
			}
			bound := seTable * math.Sqrt(scale*distuv.ChiSquared{K: float64(k)}.Quantile(1-1e-6))
			if e > bound {
				t.Errorf("q %g %s: ℓ2 error %.4g above the 1e-6-level bound %.4g", q, l.Group(j).Name, e, bound)
			}
			t.Logf("q %g (ε_encoded %.2f) %-14s k=%d ℓ2 error %.4f (bound %.4f)", q, must(m.EpsilonEncoded(l)), l.Group(j).Name, len(est), e, bound)
		}
		res, err := m.Anonymity(recs)
		if err != nil {
			t.Fatal(err)
		}
		mc, err := m.AnonymityMonteCarlo(rng.NewSeeded(2), recs, 2000)
		if err != nil {
			t.Fatal(err)
		}
		if mc.Min < res.Ap*(1-1e-9) {
			t.Errorf("q %g: Monte Carlo min %.6g below exact A_p %.6g", q, mc.Min, res.Ap)
		}
		t.Logf("q %g: exact A_p = %.4g (record %019b, report %019b); Monte Carlo min %.4g, mean %.4g ± %.2g",
			q, res.Ap, res.Record, res.Report, mc.Min, mc.Mean, mc.StdErr)
	}
}

func must(x float64, err error) float64 {
	if err != nil {
		panic(err)
	}
	return x
}
