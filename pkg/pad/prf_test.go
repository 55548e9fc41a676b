package pad

import (
	"crypto/aes"
	"fmt"
	"math"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/rng"
)

// testKey returns a fixed key whose bytes are seed, seed+1, … (tests only).
func testKey(seed byte) Key {
	var k Key
	for i := range k {
		k[i] = seed + byte(i)
	}
	return k
}

func mustDeriver(t testing.TB, key Key) *Deriver {
	t.Helper()
	d, err := NewDeriver(key)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDeriverIsDeterministicAndBatchMatchesSingle(t *testing.T) {
	for _, k := range []uint32{1, 2, 3, 10, 1 << 31, math.MaxUint32} {
		d1, d2 := mustDeriver(t, testKey(1)), mustDeriver(t, testKey(1))
		const row0, n = 1<<40 - 3, 1000 // several CTR chunks, rows above 2^32
		batch := make([]uint32, n)
		if err := d1.Pads(batch, row0, 5, k); err != nil {
			t.Fatal(err)
		}
		for i := range batch {
			a, b := d1.Pad(row0+uint64(i), 5, k), d2.Pad(row0+uint64(i), 5, k)
			if a != b || a != batch[i] || a >= k {
				t.Fatalf("k=%d row %d: Pad %d, second deriver %d, Pads %d", k, row0+uint64(i), a, b, batch[i])
			}
		}
	}
}

func TestDeriverPadsAreUniform(t *testing.T) {
	// Chi-square of 200 000 pads of one column against the uniform law on
	// Z_k (bucketed into ≤ 64 exact-probability bins for large k); k not a
	// power of two included, where modulo bias would show. alpha = 1e-6.
	const alpha, n = 1e-6, 200_000
	d := mustDeriver(t, testKey(7))
	for _, k := range []uint32{2, 3, 7, 10, 1000, 1 << 31, 3_000_000_019} {
		v := make([]uint32, n)
		if err := d.Pads(v, 0, 2, k); err != nil {
			t.Fatal(err)
		}
		counts, probs := binCounts(v, k, 1000)
		stattest.AssertChiSquare(t, fmt.Sprintf("PRF pads k=%d", k), counts, probs, alpha)
	}
}

func TestDeriverDiffersAcrossKeysRowsAndColumns(t *testing.T) {
	// Two pad streams that should be independent agree at each position
	// with probability 1/k. With k = 7 over 100 000 positions the number of
	// agreements must be a plausible Binomial(100 000, 1/7) draw (alpha =
	// 1e-6); with k = 2^31 it must be a plausible Binomial(n, 2^-31) draw,
	// i.e. (almost surely) zero.
	const alpha, n = 1e-6, 100_000
	base := mustDeriver(t, testKey(1))
	other := mustDeriver(t, testKey(2))
	for _, k := range []uint32{7, 1 << 31} {
		ref := make([]uint32, n)
		if err := base.Pads(ref, 0, 0, k); err != nil {
			t.Fatal(err)
		}
		variants := []struct {
			name string
			d    *Deriver
			row0 uint64
			col  uint32
		}{
			{"other key", other, 0, 0},
			{"next row", base, 1, 0},
			{"other column", base, 0, 1},
		}
		for _, vt := range variants {
			got := make([]uint32, n)
			if err := vt.d.Pads(got, vt.row0, vt.col, k); err != nil {
				t.Fatal(err)
			}
			var same int64
			for i := range got {
				if got[i] == ref[i] {
					same++
				}
			}
			stattest.AssertBinomial(t, fmt.Sprintf("%s k=%d agreements", vt.name, k), same, n, 1/float64(k), alpha)
		}
	}
}

func TestLemireRejectsTheBiasedZone(t *testing.T) {
	// 2^64 mod k is 0 for k = 2 (nothing rejected), 1 for k = 3 and
	// k = 2^32 − 1 (2^64 = (2^32 − 1)(2^32 + 1) + 1), and 6 for k = 10; a
	// word is rejected when the low half of w·k is below that.
	tests := []struct {
		w      uint64
		k      uint32
		want   uint32
		accept bool
	}{
		{0, 2, 0, true},
		{0, 3, 0, false},
		{0, math.MaxUint32, 0, false},
		{1, 3, 0, true},
		{math.MaxUint64, 7, 6, true},
		{1 << 63, 10, 0, false},      // w·10 = 5·2^64 exactly: lo = 0 < 2^64 mod 10 = 6
		{1<<63 | 1<<32, 10, 5, true}, // lo = 10·2^32 ≥ 6
	}
	for _, tt := range tests {
		v64, ok := rng.Lemire(tt.w, uint64(tt.k))
		v := uint32(v64)
		if ok != tt.accept || (ok && v != tt.want) {
			t.Errorf("rng.Lemire(%d, %d) = %d, %v; want %d, %v", tt.w, tt.k, v, ok, tt.want, tt.accept)
		}
	}
}

func TestRetryUsesTheNextCounter(t *testing.T) {
	// A block of zeros rejects both words for k = 2^32 − 1, so the pad must
	// come from B(column, 1, row); recompute that block independently.
	const k, row, col = math.MaxUint32, 99, 4
	if _, ok := fromBlock(make([]byte, 16), k); ok {
		t.Fatal("zero block accepted for k = 2^32 − 1")
	}
	key := testKey(3)
	d := mustDeriver(t, key)
	blk, err := aes.NewCipher(key[:])
	if err != nil {
		t.Fatal(err)
	}
	var in, out [16]byte
	in[7] = 1 // counter 1
	in[3] = col
	in[15] = row
	blk.Encrypt(out[:], in[:])
	want, ok := fromBlock(out[:], k)
	if !ok {
		t.Skip("counter-1 block also rejected (probability 2^-64)")
	}
	if got := d.retry(row, col, k); got != want {
		t.Fatalf("retry = %d, want %d from the counter-1 block", got, want)
	}
}

func TestPadsRejectsBadArguments(t *testing.T) {
	d := mustDeriver(t, testKey(1))
	if err := d.Pads(make([]uint32, 1), 0, 0, 0); err == nil {
		t.Error("k = 0 accepted")
	}
	if err := d.Pads(make([]uint32, 2), math.MaxUint64, 0, 3); err == nil {
		t.Error("row overflow accepted")
	}
	if err := d.Pads(make([]uint32, 1), math.MaxUint64, 0, 3); err != nil {
		t.Errorf("last row rejected: %v", err)
	}
}

func TestNewKeyIsRandom(t *testing.T) {
	if NewKey() == NewKey() {
		t.Fatal("two keys from crypto/rand are equal (probability 2^-256)")
	}
}

func BenchmarkDeriverPads(b *testing.B) {
	d := mustDeriver(b, testKey(1))
	v := make([]uint32, 4096)
	for b.Loop() {
		_ = d.Pads(v, 0, 1, 16)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(v)), "ns/cell")
}

func BenchmarkDeriverPad(b *testing.B) {
	d := mustDeriver(b, testKey(1))
	var sink uint32
	i := uint64(0)
	for b.Loop() {
		sink += d.Pad(i, 1, 16)
		i++
	}
	_ = sink
}
