package pad

import (
	"fmt"
	"math"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/rng"
)

func TestDecryptInvertsEncrypt(t *testing.T) {
	for _, k := range []uint32{1, 2, 3, 7, 1 << 31, math.MaxUint32} {
		if k <= 7 {
			// Small alphabets: every (x, v) pair.
			for x := uint32(0); x < k; x++ {
				for v := uint32(0); v < k; v++ {
					c := Encrypt(x, v, k)
					if c >= k || Decrypt(c, v, k) != x {
						t.Fatalf("k=%d x=%d v=%d: c=%d, decrypts to %d", k, x, v, c, Decrypt(c, v, k))
					}
				}
			}
			continue
		}
		// Large alphabets: the extremes (where x + v overflows 32 bits for
		// k = 2^32 − 1) and random pairs.
		r := rng.NewSeeded(uint64(k))
		pairs := [][2]uint32{{0, 0}, {k - 1, k - 1}, {k - 1, 1}, {0, k - 1}}
		for range 10000 {
			pairs = append(pairs, [2]uint32{r.Uint32N(k), r.Uint32N(k)})
		}
		for _, p := range pairs {
			c := Encrypt(p[0], p[1], k)
			want := uint32((uint64(p[0]) + uint64(p[1])) % uint64(k))
			if c != want || Decrypt(c, p[1], k) != p[0] {
				t.Fatalf("k=%d x=%d v=%d: c=%d want %d, decrypts to %d", k, p[0], p[1], c, want, Decrypt(c, p[1], k))
			}
		}
	}
}

func TestColumnRoundTripWithDrawnPads(t *testing.T) {
	for _, k := range []uint32{1, 2, 3, 1 << 31} {
		r := rng.NewSeeded(3)
		x := make([]uint32, 1000)
		for i := range x {
			x[i] = r.Uint32N(k)
		}
		v := make([]uint32, len(x))
		if err := DrawPads(r, k, v); err != nil {
			t.Fatal(err)
		}
		c := make([]uint32, len(x))
		if err := EncryptColumn(c, x, v, k); err != nil {
			t.Fatal(err)
		}
		back := make([]uint32, len(x))
		if err := DecryptColumn(back, c, v, k); err != nil {
			t.Fatal(err)
		}
		for i := range x {
			if back[i] != x[i] {
				t.Fatalf("k=%d row %d: %d → %d → %d", k, i, x[i], c[i], back[i])
			}
		}
	}
}

func TestColumnFunctionsRejectBadInput(t *testing.T) {
	tests := []struct {
		name    string
		x, v, c []uint32
		k       uint32
	}{
		{"k zero", []uint32{0}, []uint32{0}, make([]uint32, 1), 0},
		{"value outside alphabet", []uint32{3}, []uint32{0}, make([]uint32, 1), 3},
		{"pad outside alphabet", []uint32{0}, []uint32{5}, make([]uint32, 1), 3},
		{"pads shorter", []uint32{0, 1}, []uint32{0}, make([]uint32, 2), 3},
		{"output shorter", []uint32{0, 1}, []uint32{0, 1}, make([]uint32, 1), 3},
	}
	for _, tt := range tests {
		if err := EncryptColumn(tt.c, tt.x, tt.v, tt.k); err == nil {
			t.Errorf("EncryptColumn %s: no error", tt.name)
		}
		if err := DecryptColumn(tt.c, tt.x, tt.v, tt.k); err == nil {
			t.Errorf("DecryptColumn %s: no error", tt.name)
		}
	}
	if err := DrawPads(rng.NewSeeded(1), 0, make([]uint32, 1)); err == nil {
		t.Error("DrawPads accepted k = 0")
	}
	if err := DrawPads(nil, 3, make([]uint32, 1)); err == nil {
		t.Error("DrawPads accepted a nil source")
	}
}

// binProbs returns the probabilities of the bins b = ⌊v·bins/k⌋ for v
// uniform on Z_k (exact, also when bins does not divide k).
func binProbs(k uint64, bins int) []float64 {
	p := make([]float64, bins)
	for b := range bins {
		lo := (uint64(b)*k + uint64(bins) - 1) / uint64(bins) // ⌈b·k/bins⌉
		hi := (uint64(b+1)*k + uint64(bins) - 1) / uint64(bins)
		p[b] = float64(hi-lo) / float64(k)
	}
	return p
}

// binCounts tallies values of Z_k into at most maxBins bins of (almost)
// equal width, returning counts and exact probabilities under uniformity.
func binCounts(values []uint32, k uint32, maxBins int) ([]int64, []float64) {
	bins := maxBins
	if uint64(k) < uint64(bins) {
		bins = int(k)
	}
	counts := make([]int64, bins)
	for _, v := range values {
		counts[uint64(v)*uint64(bins)/uint64(k)]++
	}
	return counts, binProbs(uint64(k), bins)
}

func TestCiphertextIsUniformForConstantPlaintext(t *testing.T) {
	// One-time-pad secrecy: with uniform pads the ciphertext column of a
	// constant plaintext column is uniform on Z_k. alpha = 1e-6 per case.
	const alpha = 1e-6
	tests := []struct {
		k uint32
		x uint32
	}{{2, 1}, {3, 0}, {7, 3}, {10, 9}, {1 << 31, 12345}, {3_000_000_019, 7}}
	for _, tt := range tests {
		r := rng.NewSeeded(uint64(tt.k) + 11)
		const n = 100_000
		v := make([]uint32, n)
		if err := DrawPads(r, tt.k, v); err != nil {
			t.Fatal(err)
		}
		x := make([]uint32, n)
		for i := range x {
			x[i] = tt.x
		}
		c := make([]uint32, n)
		if err := EncryptColumn(c, x, v, tt.k); err != nil {
			t.Fatal(err)
		}
		counts, probs := binCounts(c, tt.k, 64)
		stattest.AssertChiSquare(t, fmt.Sprintf("ciphertext k=%d x=%d", tt.k, tt.x), counts, probs, alpha)
	}
}

func BenchmarkDrawPads(b *testing.B) {
	r := rng.NewSeeded(1)
	v := make([]uint32, 4096)
	for b.Loop() {
		_ = DrawPads(r, 16, v)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(v)), "ns/cell")
}

func BenchmarkEncryptColumn(b *testing.B) {
	r := rng.NewSeeded(1)
	x, v, c := make([]uint32, 4096), make([]uint32, 4096), make([]uint32, 4096)
	_ = DrawPads(r, 16, x)
	_ = DrawPads(r, 16, v)
	for b.Loop() {
		_ = EncryptColumn(c, x, v, 16)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(v)), "ns/cell")
}
