package bitflip

import (
	"fmt"
	"math"
	"math/bits"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/rng"
)

// bruteRatios evaluates min_v P[s ∈ R(T∖{v})]/P[R(v) = s] for every s by
// enumerating all records v, reports s and records w ≠ v (one copy of v
// removed), straight from the definition (Zhilyaev–Zeber §1–2). p(d) and
// log(1 − p(d)) come from tables indexed by the Hamming distance.
func bruteRatios(m *Mechanism, records []uint64) []float64 {
	L := m.Bits()
	p := make([]float64, L+1)
	lg := make([]float64, L+1)
	for d := range p {
		p[d] = m.ReportProbability(d)
		lg[d] = math.Log1p(-p[d])
	}
	out := make([]float64, 1<<L)
	for s := range out {
		best := math.Inf(1)
		for vi, v := range records {
			if vi > 0 && v == records[vi-1] {
				continue // same v as before: same ratio
			}
			var logProd float64
			for wi, w := range records {
				if wi != vi {
					logProd += lg[bits.OnesCount64(w^uint64(s))]
				}
			}
			best = min(best, -math.Expm1(logProd)/p[bits.OnesCount64(v^uint64(s))])
		}
		out[s] = best
	}
	return out
}

func relErr(got, want float64) float64 {
	if got == want {
		return 0
	}
	return math.Abs(got-want) / math.Abs(want)
}

func TestAnonymityMatchesBruteForce(t *testing.T) {
	type tc struct {
		L, n, pool int // pool: records drawn from this many distinct values (duplicates)
		q          float64
	}
	var cases []tc
	for _, q := range []float64{1e-3, 0.05, 0.2, 0.37, 0.499} {
		cases = append(cases,
			tc{1, 1, 2, q}, tc{1, 3, 2, q}, tc{3, 2, 8, q}, tc{4, 6, 3, q},
			tc{5, 12, 32, q}, tc{6, 40, 10, q}, tc{7, 5, 128, q}, tc{8, 120, 256, q}, tc{8, 60, 4, q})
	}
	g := rng.NewSeeded(11)
	worst := 0.0
	for _, c := range cases {
		t.Run(fmt.Sprintf("L%d_n%d_pool%d_q%g", c.L, c.n, c.pool, c.q), func(t *testing.T) {
			m, err := New(Options{LieProbability: c.q, Bits: c.L})
			if err != nil {
				t.Fatal(err)
			}
			values := make([]uint64, c.pool)
			for i := range values {
				values[i] = g.Uint64N(1 << c.L)
			}
			recs := make([]uint64, c.n)
			for i := range recs {
				recs[i] = values[g.IntN(c.pool)]
			}
			got, _ := m.ratios(recs)
			want := bruteRatios(m, recs)
			for s := range want {
				e := relErr(got[s], want[s])
				worst = max(worst, e)
				if e > 1e-10 {
					t.Fatalf("s = %0*b: fast %.17g, brute force %.17g (relative error %.2g)", c.L, s, got[s], want[s], e)
				}
			}
			res, err := m.Anonymity(recs)
			if err != nil {
				t.Fatal(err)
			}
			wantAp := math.Inf(1)
			for _, w := range want {
				wantAp = min(wantAp, w)
			}
			if relErr(res.Ap, wantAp) > 1e-10 {
				t.Fatalf("A_p = %.17g, brute force %.17g", res.Ap, wantAp)
			}
		})
	}
	t.Logf("largest relative error against brute force: %.3g", worst)
}

func TestAnonymityHandValues(t *testing.T) {
	// Two records at Hamming distance k: for any s with nearest record v the
	// ratio is p(d(w,s))/p(d(v,s)) = r^(d(w,s) − d(v,s)), r = q/(1 − q),
	// smallest at s = v: A_p = r^k. A duplicated record gives ratio 1 at
	// every s (removing one copy leaves the other). A lone record gives 0.
	cases := []struct {
		name    string
		q       float64
		L       int
		records []uint64
		want    float64
	}{
		{"opposite corners L3 q0.2", 0.2, 3, []uint64{0b000, 0b111}, 1.0 / 64},
		{"distance 3 in L8 q0.1", 0.1, 8, []uint64{0b10110001, 0b10000011}, 1.0 / 729},
		{"opposite corners L8 q0.001", 0.001, 8, []uint64{0, 255}, math.Pow(0.001/0.999, 8)},
		{"opposite corners L20 q0.01", 0.01, 20, []uint64{0, 1<<20 - 1}, math.Pow(0.01/0.99, 20)},
		{"duplicate", 0.3, 5, []uint64{7, 7}, 1},
		{"lone record", 0.3, 5, []uint64{9}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := New(Options{LieProbability: c.q, Bits: c.L})
			if err != nil {
				t.Fatal(err)
			}
			res, err := m.Anonymity(c.records)
			if err != nil {
				t.Fatal(err)
			}
			if relErr(res.Ap, c.want) > 1e-12 && !(c.want == 0 && res.Ap == 0) {
				t.Errorf("A_p = %.17g, want %.17g", res.Ap, c.want)
			}
		})
	}
}

func TestAnonymityRejectsBadInput(t *testing.T) {
	big, _ := New(Options{LieProbability: 0.2, Bits: MaxExactBits + 1})
	if _, err := big.Anonymity([]uint64{1}); err == nil {
		t.Error("L > MaxExactBits accepted")
	}
	m, _ := New(Options{LieProbability: 0.2, Bits: 4})
	if _, err := m.Anonymity(nil); err == nil {
		t.Error("empty collection accepted")
	}
	if _, err := m.Anonymity([]uint64{3, 16}); err == nil {
		t.Error("record with a bit at position L accepted")
	}
	if _, err := m.AnonymityMonteCarlo(rng.NewSeeded(1), []uint64{3, 16}, 10); err == nil {
		t.Error("Monte Carlo: record with a bit at position L accepted")
	}
	if _, err := m.AnonymityMonteCarlo(rng.NewSeeded(1), []uint64{3}, 1); err == nil {
		t.Error("Monte Carlo: one sample accepted")
	}
}

func TestAnonymityL16MatchesBruteForceOnSampledReports(t *testing.T) {
	g := rng.NewSeeded(5)
	for _, q := range []float64{0.02, 0.25} {
		m, _ := New(Options{LieProbability: q, Bits: 16})
		recs := make([]uint64, 150)
		for i := range recs {
			recs[i] = g.Uint64N(1 << 16)
			if i%10 == 9 {
				recs[i] = recs[i-1] // some duplicates
			}
		}
		got, _ := m.ratios(recs)
		for k := 0; k < 300; k++ {
			s := g.IntN(1 << 16)
			if k < 150 {
				s = int(recs[k]) // reports equal to records: where A_p lives
			}
			want := bruteRatioAt(m, recs, uint64(s))
			if e := relErr(got[s], want); e > 1e-10 {
				t.Fatalf("q %g s %d: fast %.17g, brute force %.17g", q, s, got[s], want)
			}
		}
	}
}

// bruteRatioAt is bruteRatios for one report s.
func bruteRatioAt(m *Mechanism, records []uint64, s uint64) float64 {
	L := m.Bits()
	p := make([]float64, L+1)
	lg := make([]float64, L+1)
	for d := range p {
		p[d] = m.ReportProbability(d)
		lg[d] = math.Log1p(-p[d])
	}
	best := math.Inf(1)
	for vi, v := range records {
		var logProd float64
		for wi, w := range records {
			if wi != vi {
				logProd += lg[bits.OnesCount64(w^s)]
			}
		}
		best = min(best, -math.Expm1(logProd)/p[bits.OnesCount64(v^s)])
	}
	return best
}

func TestMonteCarloMinBoundsExactAndMeanMatchesExpectation(t *testing.T) {
	g := rng.NewSeeded(21)
	for _, c := range []struct {
		L, n int
		q    float64
	}{{6, 30, 0.1}, {8, 40, 0.25}, {8, 200, 0.05}} {
		t.Run(fmt.Sprintf("L%d_n%d_q%g", c.L, c.n, c.q), func(t *testing.T) {
			m, _ := New(Options{LieProbability: c.q, Bits: c.L})
			recs := make([]uint64, c.n)
			for i := range recs {
				recs[i] = g.Uint64N(1 << c.L)
			}
			exact, _ := m.ratios(recs)
			res, _ := m.Anonymity(recs)
			// E[a(R(u))] = Σ_s P(s)·a(s), P(s) = (1/n)·Σ_w p(d(w,s)).
			var want float64
			for s, a := range exact {
				var ps float64
				for _, w := range recs {
					ps += m.ReportProbability(bits.OnesCount64(w ^ uint64(s)))
				}
				want += ps / float64(c.n) * a
			}
			const K = 20000
			mc, err := m.AnonymityMonteCarlo(g, recs, K)
			if err != nil {
				t.Fatal(err)
			}
			if mc.Min < res.Ap {
				t.Errorf("Monte Carlo min %.6g below exact A_p %.6g", mc.Min, res.Ap)
			}
			if e := relErr(mc.Min, exact[mc.MinReport[0]]); e > 1e-9 {
				t.Errorf("Monte Carlo ratio %.17g at its min report, exact %.17g", mc.Min, exact[mc.MinReport[0]])
			}
			nearestD := c.L
			for _, w := range recs {
				nearestD = min(nearestD, bits.OnesCount64(w^mc.MinReport[0]))
			}
			if d := bits.OnesCount64(recs[mc.MinRecord] ^ mc.MinReport[0]); d != nearestD {
				t.Errorf("MinRecord is at distance %d from MinReport, the nearest record at %d", d, nearestD)
			}
			// False-alarm probability 1e-6 (normal approximation of the mean).
			stattest.AssertMean(t, "mean anonymity ratio", mc.Mean, want, mc.StdErr*math.Sqrt(K), K, 1e-6)
		})
	}
}

func TestMonteCarloWideVectors(t *testing.T) {
	// Two complementary 200-bit records: every report's ratio is
	// r^(d(w,s) − d(v,s)) = r^(L − 2D), D the distance to the nearer one;
	// the probabilities themselves (≈ 0.7^200) are far below the switch to
	// the log-difference form.
	const L = 200
	m, _ := New(Options{LieProbability: 0.3, Bits: L})
	rows := make([]uint64, 2*m.Words())
	for w := 0; w < m.Words(); w++ {
		rows[m.Words()+w] = ^uint64(0)
	}
	rows[2*m.Words()-1] &= 1<<(L%64) - 1
	mc, err := m.AnonymityMonteCarlo(rng.NewSeeded(3), rows, 200)
	if err != nil {
		t.Fatal(err)
	}
	var D int
	for _, x := range mc.MinReport {
		D += bits.OnesCount64(x)
	}
	D = min(D, L-D)
	if want := math.Pow(0.3/0.7, float64(L-2*D)); relErr(mc.Min, want) > 1e-12 {
		t.Errorf("min ratio %.17g at D = %d, want r^(L−2D) = %.17g", mc.Min, D, want)
	}
	if mc.Min <= 0 || mc.Mean <= 0 || math.IsNaN(mc.StdErr) {
		t.Errorf("degenerate result %+v", mc)
	}
}

func TestAnonymityRejectsUnderflowingProbabilities(t *testing.T) {
	// q^L = (1e-19)^24 = 1e-456 is not a float64, so the exact form refuses;
	// the Monte Carlo form works with differences of logarithms and still
	// answers for records {0, 1}: with no flips in practice every report is
	// a record, and its ratio is r = q/(1 − q).
	const q = 1e-19
	m, err := New(Options{LieProbability: q, Bits: 24})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Anonymity([]uint64{0, 1}); err == nil {
		t.Error("underflowing q^L accepted")
	}
	mc, err := m.AnonymityMonteCarlo(rng.NewSeeded(1), []uint64{0, 1}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if relErr(mc.Min, q/(1-q)) > 1e-12 || relErr(mc.Mean, q/(1-q)) > 1e-12 {
		t.Errorf("Monte Carlo min %v mean %v, want r = %v", mc.Min, mc.Mean, q/(1-q))
	}
}
