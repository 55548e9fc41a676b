package pram

import (
	"fmt"
	"slices"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
)

func testNoiseKey(b byte) []byte {
	k := make([]byte, NoiseKeySize)
	for i := range k {
		k[i] = b + byte(i)
	}
	return k
}

func TestKeyedOffsetsFollowA(t *testing.T) {
	// 60 000 rows (1, 2) in Z_2 × Z_3, γ = 3, offsets keyed by row index:
	// chi-square of the released values against column g(1,2) = 5 of A
	// (3/8 stay, 1/8 to each other value; Lemma III.1). alpha = 1e-6.
	const alpha, rows = 1e-6, 60_000
	m := mustMechanism(t, 3, 2, 3)
	ko, err := NewKeyedOffsets(m, testNoiseKey(7))
	if err != nil {
		t.Fatal(err)
	}
	cols := [][]uint32{make([]uint32, rows), make([]uint32, rows)}
	for i := range rows {
		cols[0][i], cols[1][i] = 1, 2
	}
	if err := ko.PerturbColumns(0, cols); err != nil {
		t.Fatal(err)
	}
	counts := make([]int64, 6)
	for i := range rows {
		g, err := m.Domain().Encode([]uint32{cols[0][i], cols[1][i]})
		if err != nil {
			t.Fatal(err)
		}
		counts[g]++
	}
	stattest.AssertChiSquare(t, "KeyedOffsets", counts, []float64{1. / 8, 1. / 8, 1. / 8, 1. / 8, 1. / 8, 3. / 8}, alpha)
}

func TestKeyedOffsetsMovedUniformLargeK(t *testing.T) {
	// K = 1000 · 999 (γ = 2): the moved rows' first component is uniform
	// on Z_1000 up to the one excluded joint value 0, i.e. component 0 of
	// g = 1 + U[0, K−1) has P(0) = (999 − 1)/(K − 1), others 999/(K − 1).
	// 40 000 rows, 10 bins of 100 values; alpha = 1e-6.
	const alpha, rows = 1e-6, 40_000
	m := mustMechanism(t, 2, 1000, 999)
	ko, _ := NewKeyedOffsets(m, testNoiseKey(9))
	off := make([]uint32, 2)
	bins := make([]int64, 10)
	moved := 0
	for i := range rows {
		if err := ko.Offset(uint64(i), off); err != nil {
			t.Fatal(err)
		}
		if off[0] == 0 && off[1] == 0 {
			continue
		}
		moved++
		bins[off[0]/100]++
	}
	K := 1000.0 * 999
	probs := make([]float64, 10)
	for b := range probs {
		probs[b] = 100 * 999 / (K - 1)
	}
	probs[0] -= 1 / (K - 1)
	stattest.AssertChiSquare(t, "KeyedOffsets moved component 0", bins, probs, alpha)
	if moved < rows*99/100 {
		t.Errorf("%d of %d rows moved, want ≈ all (γ/q ≈ 2e-6)", moved, rows)
	}
}

func TestKeyedOffsetsSameForAnyBundling(t *testing.T) {
	// A retried or split part reproduces the whole run's rows exactly:
	// perturb 1 000 rows at once, then as bundles [0,1), [1,377), [377,1000).
	m := mustMechanism(t, 1.5, 3, 4, 5)
	ko, _ := NewKeyedOffsets(m, testNoiseKey(1))
	const rows = 1000
	fill := func(lo, hi int) [][]uint32 {
		cols := make([][]uint32, 3)
		for j, k := range []uint32{3, 4, 5} {
			cols[j] = make([]uint32, hi-lo)
			for i := range cols[j] {
				cols[j][i] = uint32(lo+i) % k
			}
		}
		return cols
	}
	whole := fill(0, rows)
	if err := ko.PerturbColumns(0, whole); err != nil {
		t.Fatal(err)
	}
	changed := 0
	orig := fill(0, rows)
	for i := range rows {
		if whole[0][i] != orig[0][i] || whole[1][i] != orig[1][i] || whole[2][i] != orig[2][i] {
			changed++
		}
	}
	if changed == 0 {
		t.Fatal("no row moved")
	}
	for _, cut := range [][2]int{{0, 1}, {1, 377}, {377, 1000}} {
		part := fill(cut[0], cut[1])
		if err := ko.PerturbColumns(uint64(cut[0]), part); err != nil {
			t.Fatal(err)
		}
		for j := range part {
			if !slices.Equal(part[j], whole[j][cut[0]:cut[1]]) {
				t.Errorf("rows [%d,%d) column %d differ from the whole run", cut[0], cut[1], j)
			}
		}
	}
	other, _ := NewKeyedOffsets(m, testNoiseKey(2))
	again := fill(0, rows)
	other.PerturbColumns(0, again)
	if fmt.Sprint(again) == fmt.Sprint(whole) {
		t.Error("another key gave the same offsets")
	}
}

func TestKeyedOffsetsRejectBadInput(t *testing.T) {
	m := mustMechanism(t, 3, 2, 3)
	if _, err := NewKeyedOffsets(m, make([]byte, 16)); err == nil {
		t.Error("16-byte key accepted")
	}
	ko, _ := NewKeyedOffsets(m, testNoiseKey(3))
	cols := [][]uint32{{0, 1}, {0, 3}}
	if err := ko.PerturbColumns(0, cols); err == nil || fmt.Sprint(cols) != "[[0 1] [0 3]]" {
		t.Errorf("bad bundle: err %v, cols %v", err, cols)
	}
	if err := ko.PerturbColumns(^uint64(0), [][]uint32{{0, 0}, {0, 0}}); err == nil {
		t.Error("row overflow accepted")
	}
	if err := ko.Offset(0, make([]uint32, 3)); err == nil {
		t.Error("wrong offset length accepted")
	}
}
