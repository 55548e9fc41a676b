package bitflip

import (
	"fmt"
	"math"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/rng"
)

func TestNewRejectsInvalidParameters(t *testing.T) {
	cases := []struct {
		name string
		o    Options
	}{
		{"q zero", Options{LieProbability: 0, Bits: 8}},
		{"q one half", Options{LieProbability: 0.5, Bits: 8}},
		{"q above one half", Options{LieProbability: 0.7, Bits: 8}},
		{"q negative", Options{LieProbability: -0.1, Bits: 8}},
		{"q below 2^-64", Options{LieProbability: 1e-30, Bits: 8}},
		{"q NaN", Options{LieProbability: math.NaN(), Bits: 8}},
		{"q +Inf", Options{LieProbability: math.Inf(1), Bits: 8}},
		{"q -Inf", Options{LieProbability: math.Inf(-1), Bits: 8}},
		{"L zero", Options{LieProbability: 0.2, Bits: 0}},
		{"L negative", Options{LieProbability: 0.2, Bits: -3}},
		{"L too large", Options{LieProbability: 0.2, Bits: MaxBits + 1}},
	}
	for _, c := range cases {
		if _, err := New(c.o); err == nil {
			t.Errorf("%s: New(%+v) accepted", c.name, c.o)
		}
	}
	if _, err := New(Options{LieProbability: 0x1p-64, Bits: 1}); err != nil {
		t.Errorf("q = 2^-64 rejected: %v", err)
	}
}

func TestEpsilonMatchesHandValues(t *testing.T) {
	// ε_bit = ln((1 − q)/q): q = 1/4 gives ln 3, q = 1/10 gives ln 9,
	// q = 0.49 gives ln(51/49).
	cases := []struct {
		q                    float64
		L                    int
		bit, record, encoded float64 // encoded: D = 5 for the layout below (L = 9)
	}{
		{0.25, 9, 1.0986122886681098, 9 * 1.0986122886681098, 5 * 1.0986122886681098},
		{0.1, 9, 2.1972245773362196, 9 * 2.1972245773362196, 5 * 2.1972245773362196},
		{0.49, 9, 0.040005334613699206, 9 * 0.040005334613699206, 5 * 0.040005334613699206},
		{0.25, 64, 1.0986122886681098, 64 * 1.0986122886681098, 0},
	}
	l, err := NewLayout([]Group{
		{Name: "a", Labels: []string{"x", "y", "z"}},
		{Name: "b", Kind: Binary, Labels: []string{"no", "yes"}},
		{Name: "c", Labels: []string{"1", "2", "3", "4", "5"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		m, err := New(Options{LieProbability: c.q, Bits: c.L})
		if err != nil {
			t.Fatal(err)
		}
		if got := m.EpsilonBit(); relErr(got, c.bit) > 1e-14 {
			t.Errorf("q %g: ε_bit = %.17g, want %.17g", c.q, got, c.bit)
		}
		if got := m.EpsilonRecord(); relErr(got, c.record) > 1e-14 {
			t.Errorf("q %g L %d: ε_record = %.17g, want %.17g", c.q, c.L, got, c.record)
		}
		got, err := m.EpsilonEncoded(l)
		if c.L != l.Width() {
			if err == nil {
				t.Errorf("L %d: EpsilonEncoded accepted a %d-bit layout", c.L, l.Width())
			}
			continue
		}
		if err != nil || relErr(got, c.encoded) > 1e-14 {
			t.Errorf("q %g: ε_encoded = %.17g (%v), want %.17g", c.q, got, err, c.encoded)
		}
	}
}

func TestEpsilonBoundsEveryLikelihoodRatio(t *testing.T) {
	// Property: P[R(v) = s]/P[R(v′) = s] ≤ e^ε_record for all v, v′, s, with
	// equality for complementary v, v′ and s = v (L = 4, all pairs).
	m, _ := New(Options{LieProbability: 0.3, Bits: 4})
	bound := math.Exp(m.EpsilonRecord())
	worst := 0.0
	for v := range 16 {
		for w := range 16 {
			for s := range 16 {
				r := m.ReportProbability(popcount(v^s)) / m.ReportProbability(popcount(w^s))
				worst = max(worst, r)
			}
		}
	}
	if relErr(worst, bound) > 1e-12 {
		t.Errorf("largest likelihood ratio %.17g, e^ε = %.17g", worst, bound)
	}
}

func popcount(x int) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// flipP is the exact flip probability t/2^64 of m.
func flipP(m *Mechanism) float64 { return math.Ldexp(float64(m.thresh), -64) }

func TestFlipsHappenWithProbabilityQPerBit(t *testing.T) {
	const rows = 20000
	// perRow: RandomizeRow, each row's flips drawn on their own (as perturb
	// does with a row-keyed stream per row).
	for _, perRow := range []bool{false, true} {
		for _, q := range []float64{1e-3, 0.1, 0.25, 1.0 / 3, 0.4999} {
			for _, L := range []int{8, 64, 100} {
				t.Run(fmt.Sprintf("q%.4g_L%d_perRow%v", q, L, perRow), func(t *testing.T) {
					m, _ := New(Options{LieProbability: q, Bits: L})
					z := m.NewRandomizer(rng.NewSeeded(uint64(L) + uint64(q*1e6)))
					flips := make([]int64, L)
					row := make([]uint64, m.Words())
					var total int64
					for range rows {
						clear(row)
						randomize := z.Randomize
						if perRow {
							randomize = z.RandomizeRow
						}
						if err := randomize(row); err != nil {
							t.Fatal(err)
						}
						for i := range L {
							if Bit(row, i) {
								flips[i]++
								total++
							}
						}
						if L%64 != 0 && row[len(row)-1]>>(L%64) != 0 {
							t.Fatal("a bit at position ≥ L was flipped")
						}
					}
					p := flipP(m)
					// False-alarm probability 1e-7 per bit (≤ 2.6e-4 over all 1720 bits).
					for i, f := range flips {
						stattest.AssertBinomial(t, fmt.Sprintf("bit %d", i), f, rows, p, 1e-7)
					}
					// All bits together, false-alarm probability 1e-6.
					stattest.AssertBinomial(t, "all bits", total, rows*int64(L), p, 1e-6)
				})
			}
		}
	}
}

func TestFlipsAreIndependentAcrossBitsAndRows(t *testing.T) {
	// Cells (0,0), (0,1), (1,0), (1,1) of the flip indicators of a pair of
	// bits must have probabilities (1−q)², (1−q)q, q(1−q), q². Pairs:
	// neighbours, the two ends of a row, across a word boundary, and, since
	// rows share pooled flips, the last bit of a row with the first of the
	// next and bit 0 of consecutive rows.
	const rows = 40000
	for _, perRow := range []bool{false, true} { // RandomizeRow's flips too
		for _, q := range []float64{0.05, 0.25, 0.4} {
			for _, L := range []int{8, 70} {
				m, _ := New(Options{LieProbability: q, Bits: L})
				z := m.NewRandomizer(rng.NewSeeded(uint64(L*1000) + uint64(q*100)))
				pairs := [][2]int{{0, 1}, {0, L - 1}, {3, 5}}
				if L > 64 {
					pairs = append(pairs, [2]int{63, 64})
				}
				cells := make([][4]int64, len(pairs)+2)
				prev := make([]uint64, m.Words())
				row := make([]uint64, m.Words())
				for k := range rows {
					clear(row)
					if perRow {
						_ = z.RandomizeRow(row)
					} else {
						_ = z.Randomize(row)
					}
					for j, p := range pairs {
						cells[j][b2i(Bit(row, p[0]))*2+b2i(Bit(row, p[1]))]++
					}
					if k > 0 {
						cells[len(pairs)][b2i(Bit(prev, L-1))*2+b2i(Bit(row, 0))]++
						cells[len(pairs)+1][b2i(Bit(prev, 0))*2+b2i(Bit(row, 0))]++
					}
					copy(prev, row)
				}
				p := flipP(m)
				probs := []float64{(1 - p) * (1 - p), (1 - p) * p, p * (1 - p), p * p}
				for j := range cells {
					name := fmt.Sprintf("perRow %v q %g L %d: next row's bit 0 after bit L−1", perRow, q, L)
					if j == len(pairs)+1 {
						name = fmt.Sprintf("q %g L %d: bit 0 of consecutive rows", q, L)
					}
					if j < len(pairs) {
						name = fmt.Sprintf("q %g L %d: bits %v", q, L, pairs[j])
					}
					// False-alarm probability 1e-6 per pair.
					stattest.AssertChiSquare(t, name, cells[j][:], probs, 1e-6)
				}
			}
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestRandomizeBoolsFlipsWithProbabilityQ(t *testing.T) {
	const rows = 20000
	m, _ := New(Options{LieProbability: 0.2, Bits: 70})
	z := m.NewRandomizer(rng.NewSeeded(9))
	row := make([]bool, 70)
	var ones, total int64
	for range rows {
		for i := range row {
			row[i] = i%2 == 0 // flips show as 0 on even bits, 1 on odd bits
		}
		if err := z.RandomizeBools(row); err != nil {
			t.Fatal(err)
		}
		for i, b := range row {
			if b != (i%2 == 0) {
				ones++
			}
			total++
		}
	}
	// False-alarm probability 1e-6.
	stattest.AssertBinomial(t, "flips", ones, total, flipP(m), 1e-6)
	if err := z.RandomizeBools(make([]bool, 69)); err == nil {
		t.Error("wrong-length bool row accepted")
	}
	if err := z.Randomize(make([]uint64, 1)); err == nil {
		t.Error("wrong-length word row accepted")
	}
}

func BenchmarkRandomize(b *testing.B) {
	for _, q := range []float64{0.1, 0.25} {
		for _, L := range []int{8, 64, 200} {
			b.Run(fmt.Sprintf("q%g_L%d", q, L), func(b *testing.B) {
				m, _ := New(Options{LieProbability: q, Bits: L})
				z := m.NewRandomizer(rng.NewSeeded(1))
				row := make([]uint64, m.Words())
				for b.Loop() {
					_ = z.Randomize(row)
				}
			})
		}
	}
}

// BenchmarkRandomizeOneFloatPerBit is the reference the bit-sliced flips
// replace: one Float64 draw and comparison per bit.
func BenchmarkRandomizeOneFloatPerBit(b *testing.B) {
	for _, L := range []int{8, 64} {
		b.Run(fmt.Sprintf("q0.1_L%d", L), func(b *testing.B) {
			g := rng.NewSeeded(1)
			row := make([]uint64, (L+63)/64)
			for b.Loop() {
				for i := range L {
					if g.Float64() < 0.1 {
						row[i/64] ^= 1 << (i % 64)
					}
				}
			}
		})
	}
}
