package rng

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
)

func testKey(b byte) Key {
	var k Key
	for i := range k {
		k[i] = b + byte(i)
	}
	return k
}

func TestBlocksAreTheRowsCounterZeroBlocks(t *testing.T) {
	k := NewKeyed(testKey(1))
	const row0, n = 1<<40 - 5, 600
	buf := make([]byte, 16*n)
	if err := k.Blocks(buf, Tag("TEST"), row0); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		var b [16]byte
		k.Block(&b, Tag("TEST"), 0, row0+uint64(i))
		if !bytes.Equal(b[:], buf[16*i:16*i+16]) {
			t.Fatalf("row %d: CTR block differs from Block", i)
		}
		// The stream's first two words are that block; Resume continues
		// exactly where a fresh stream would.
		s := k.Stream(Tag("TEST"), row0+uint64(i))
		w := []uint64{s.Uint64(), s.Uint64(), s.Uint64(), s.Uint64(), s.Uint64()}
		var r Stream
		k.Resume(&r, Tag("TEST"), row0+uint64(i), buf[16*i:], 1)
		if got := []uint64{r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64()}; fmt.Sprint(got) != fmt.Sprint(w[1:]) {
			t.Fatalf("row %d: Resume after 1 word gives %v, stream %v", i, got, w[1:])
		}
	}
}

func TestBlocksRejectsOverflowAndPartialBlocks(t *testing.T) {
	k := NewKeyed(testKey(1))
	if err := k.Blocks(make([]byte, 32), 0, ^uint64(0)); err == nil {
		t.Error("row overflow accepted")
	}
	if err := k.Blocks(make([]byte, 16), 0, ^uint64(0)); err != nil {
		t.Errorf("last row rejected: %v", err)
	}
	if err := k.Blocks(make([]byte, 17), 0, 0); err == nil {
		t.Error("17 bytes accepted")
	}
}

func TestStreamUint64NIsUniform(t *testing.T) {
	// Chi-square of 200 000 draws (the first of each row's stream) on
	// Z_n, n not a power of two; alpha = 1e-6 per n, the false-alarm rate.
	const alpha, rows = 1e-6, 200_000
	k := NewKeyed(testKey(3))
	for _, n := range []uint64{2, 3, 10, 97, 1000} {
		counts := make([]int64, n)
		for i := range uint64(rows) {
			counts[k.Stream(Tag("UNIF"), i).Uint64N(n)]++
		}
		probs := make([]float64, n)
		for i := range probs {
			probs[i] = 1 / float64(n)
		}
		stattest.AssertChiSquare(t, fmt.Sprintf("Uint64N(%d)", n), counts, probs, alpha)
	}
}

func TestAdjacentRowsAreIndependent(t *testing.T) {
	// Pairs (x_i, x_{i+1}) of consecutive rows' first draws on Z_10 must be
	// uniform on Z_10 × Z_10 (chi-square, 99 degrees of freedom), and so
	// must the pairs of one row's first and fifth draw (across blocks).
	// alpha = 1e-6 each, the false-alarm rate.
	const alpha, rows = 1e-6, 200_000
	k := NewKeyed(testKey(4))
	adjacent := make([]int64, 100)
	within := make([]int64, 100)
	prev := k.Stream(0, 0).Uint64N(10)
	for i := uint64(1); i <= rows; i++ {
		s := k.Stream(0, i)
		x := s.Uint64N(10)
		adjacent[10*prev+x]++
		s.Uint64()
		s.Uint64()
		s.Uint64()
		within[10*x+s.Uint64N(10)]++
		prev = x
	}
	probs := make([]float64, 100)
	for i := range probs {
		probs[i] = 0.01
	}
	stattest.AssertChiSquare(t, "adjacent rows", adjacent, probs, alpha)
	stattest.AssertChiSquare(t, "draws 1 and 5 of a row", within, probs, alpha)
}

func TestStreamsDependOnKeyTagAndRowOnly(t *testing.T) {
	a, b := NewKeyed(testKey(1)), NewKeyed(testKey(1))
	if a.Stream(5, 9).Uint64() != b.Stream(5, 9).Uint64() {
		t.Fatal("the same (key, tag, row) gives different words")
	}
	c := NewKeyed(testKey(2))
	w := a.Stream(5, 9).Uint64()
	// Any of these equal to w has probability 2^-64.
	for _, o := range []uint64{c.Stream(5, 9).Uint64(), a.Stream(6, 9).Uint64(), a.Stream(5, 10).Uint64()} {
		if o == w {
			t.Fatal("streams of different key, tag or row agree")
		}
	}
}

func TestStreamIsARandSource(t *testing.T) {
	// rand.New on a row's stream: Float64 must have mean 1/2 (sd 1/√12);
	// alpha = 1e-6.
	const alpha, rows = 1e-6, 100_000
	k := NewKeyed(testKey(8))
	sum := 0.0
	for i := range uint64(rows) {
		sum += rand.New(k.Stream(Tag("FLT "), i)).Float64()
	}
	stattest.AssertMean(t, "Float64", sum/rows, 0.5, 0.2886751345948129, rows, alpha)
}

func TestSeededKeys(t *testing.T) {
	if SeededKey(1, "a") != SeededKey(1, "a") || SeededKey(1, "a") == SeededKey(2, "a") || SeededKey(1, "a") == SeededKey(1, "b") {
		t.Fatal("SeededKey is not a function of (seed, stream) alone")
	}
	if RunKey(1, true, "a") != SeededKey(1, "a") {
		t.Fatal("seeded RunKey differs from SeededKey")
	}
	if RunKey(1, false, "a") == RunKey(1, false, "a") {
		t.Fatal("two unseeded run keys agree (probability 2^-256)")
	}
}

func BenchmarkBlocks(b *testing.B) {
	k := NewKeyed(testKey(1))
	buf := make([]byte, 16*4096)
	for b.Loop() {
		_ = k.Blocks(buf, 0, 0)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*4096), "ns/row")
}

func BenchmarkStream(b *testing.B) {
	k := NewKeyed(testKey(1))
	var sink uint64
	i := uint64(0)
	for b.Loop() {
		s := k.Stream(0, i)
		sink += s.Uint64()
		i++
	}
	_ = sink
}
