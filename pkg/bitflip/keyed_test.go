package bitflip

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/rng"
)

// keyedFlips randomizes rows all-zero rows of L bits with RandomizeKeyed,
// so that a row's set bits are its flips.
func keyedFlips(t *testing.T, m *Mechanism, seed uint64, rows int) []uint64 {
	t.Helper()
	k := rng.NewKeyed(rng.SeededKey(seed, "bitflip keyed test"))
	out := make([]uint64, rows)
	if _, err := m.RandomizeKeyed(out, k, rng.Tag("TEST"), 0, nil); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestKeyedFlipsHappenWithProbabilityQPerBit: with RandomizeKeyed every
// bit flips with probability t/2^64, for lengths that fill a word with
// pieces exactly (1, 32, 64), leave a remainder (17, 21, 33) and
// thresholds with many set bits (1/3, 0.4999: rows that outrun their first
// AES block and go on with their stream) or few (1/4).
func TestKeyedFlipsHappenWithProbabilityQPerBit(t *testing.T) {
	const rows = 20000
	for _, q := range []float64{1e-3, 0.2, 0.25, 1.0 / 3, 0.4999} {
		for _, L := range []int{1, 17, 21, 32, 33, 64} {
			m, _ := New(Options{LieProbability: q, Bits: L})
			flips := keyedFlips(t, m, uint64(L)+uint64(q*1e6), rows)
			p := flipP(m)
			var total int64
			for i := range L {
				var f int64
				for _, r := range flips {
					f += int64(r >> i & 1)
				}
				total += f
				// False-alarm probability 1e-7 per bit (≤ 2.1e-5 over the 168 × 5 bits).
				stattest.AssertBinomial(t, fmt.Sprintf("q %g L %d bit %d", q, L, i), f, rows, p, 1e-7)
			}
			// All bits together, false-alarm probability 1e-6.
			stattest.AssertBinomial(t, fmt.Sprintf("q %g L %d all bits", q, L), total, rows*int64(L), p, 1e-6)
			if L < 64 {
				for _, r := range flips {
					if r>>L != 0 {
						t.Fatalf("L %d: a bit at position ≥ L was flipped", L)
					}
				}
			}
		}
	}
}

// TestKeyedFlipsAreIndependent checks the joint law of a row's flips: the
// number of flips in a row is Binomial(L, p) (chi-square over 0..L with
// the cells of expectation below 5 pooled into the last, false alarm
// 1e-6), and pairs of bits — neighbours in a piece, the ends of a row, and
// bit 0 of consecutive rows — have the product law (false alarm 1e-6 per
// pair).
func TestKeyedFlipsAreIndependent(t *testing.T) {
	const rows = 40000
	for _, q := range []float64{0.05, 0.2, 1.0 / 3} {
		for _, L := range []int{17, 40, 64} {
			m, _ := New(Options{LieProbability: q, Bits: L})
			flips := keyedFlips(t, m, uint64(L*1000)+uint64(q*100), rows)
			p := flipP(m)
			// Number of flips per row.
			var obs []int64
			var probs []float64
			counts := make([]int64, L+1)
			for _, r := range flips {
				n := 0
				for x := r; x != 0; x &= x - 1 {
					n++
				}
				counts[n]++
			}
			var restObs int64
			restP := 1.0
			for d := 0; d <= L; d++ {
				pd := math.Exp(lchoose(L, d) + float64(d)*math.Log(p) + float64(L-d)*math.Log1p(-p))
				if pd*rows < 5 && len(obs) > 0 {
					break
				}
				obs = append(obs, counts[d])
				probs = append(probs, pd)
				restP -= pd
			}
			for d := len(obs); d <= L; d++ {
				restObs += counts[d]
			}
			obs = append(obs, restObs)
			probs = append(probs, math.Max(restP, 0))
			stattest.AssertChiSquare(t, fmt.Sprintf("q %g L %d: flips per row", q, L), obs, probs, 1e-6)
			// Pairs.
			pairProbs := []float64{(1 - p) * (1 - p), (1 - p) * p, p * (1 - p), p * p}
			for _, pr := range [][2]int{{0, 1}, {0, L - 1}, {3, 5}} {
				cells := make([]int64, 4)
				for _, r := range flips {
					cells[(r>>pr[0]&1)*2+(r>>pr[1]&1)]++
				}
				stattest.AssertChiSquare(t, fmt.Sprintf("q %g L %d: bits %v", q, L, pr), cells, pairProbs, 1e-6)
			}
			cells := make([]int64, 4)
			for i := 1; i < rows; i++ {
				cells[(flips[i-1]&1)*2+(flips[i]&1)]++
			}
			stattest.AssertChiSquare(t, fmt.Sprintf("q %g L %d: bit 0 of consecutive rows", q, L), cells, pairProbs, 1e-6)
		}
	}
}

func lchoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

// TestKeyedFlipsAreAFunctionOfTheRow: a row's flips depend on its position
// only, not on the rows randomized with it (perturb's chunks), and on the
// key and tag.
func TestKeyedFlipsAreAFunctionOfTheRow(t *testing.T) {
	m, _ := New(Options{LieProbability: 1.0 / 3, Bits: 17})
	k := rng.NewKeyed(rng.SeededKey(1, "bitflip keyed test"))
	tag := rng.Tag("TEST")
	rows := make([]uint64, 1000)
	for i := range rows {
		rows[i] = uint64(i) * 2654435761 & (1<<17 - 1)
	}
	whole := slices.Clone(rows)
	if _, err := m.RandomizeKeyed(whole, k, tag, 500, nil); err != nil {
		t.Fatal(err)
	}
	parts := slices.Clone(rows)
	var blocks []byte
	for _, cut := range [][2]int{{0, 1}, {1, 378}, {378, 379}, {379, 1000}} {
		var err error
		if blocks, err = m.RandomizeKeyed(parts[cut[0]:cut[1]], k, tag, 500+uint64(cut[0]), blocks); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(whole, parts) {
		t.Error("rows randomized in parts differ from the rows randomized at once")
	}
	other := slices.Clone(rows)
	m.RandomizeKeyed(other, k, rng.Tag("OTHR"), 500, nil)
	if slices.Equal(whole, other) {
		t.Error("another tag gave the same flips")
	}
	if _, err := m.RandomizeKeyed(rows, k, tag, math.MaxUint64-10, nil); err == nil {
		t.Error("rows past 2^64 accepted")
	}
	wide, _ := New(Options{LieProbability: 0.2, Bits: 65})
	if _, err := wide.RandomizeKeyed(rows, k, tag, 0, nil); err == nil {
		t.Error("L = 65 accepted")
	}
}
