package pram

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/pramkit/pramkit/internal/stattest"
	"github.com/pramkit/pramkit/pkg/pad"
	"github.com/pramkit/pramkit/pkg/rng"
)

func mustMechanism(t testing.TB, gamma float64, ks ...uint32) *Mechanism {
	t.Helper()
	d, err := NewDomain(ks)
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewMechanism(gamma, d)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestNewMechanismValidates(t *testing.T) {
	d, _ := NewDomain([]uint32{2, 3})
	for _, gamma := range []float64{1, 0.5, -2, math.NaN(), math.Inf(1), math.Inf(-1)} {
		if _, err := NewMechanism(gamma, d); err == nil {
			t.Errorf("gamma %v accepted", gamma)
		}
	}
	if _, err := NewMechanism(2, Domain{}); err == nil {
		t.Error("zero Domain accepted")
	}
}

// releaseThroughPipeline runs Lemma III.1's chain for one joint row x:
// each curator pads its component, the server adds a PRAM offset to the
// ciphertext, the researcher removes the pads. It returns the joint index
// of the decrypted row.
func releaseThroughPipeline(t *testing.T, r *rand.Rand, m *Mechanism, x, v, c, o []uint32) uint64 {
	d := m.Domain()
	ks := d.Alphabets()
	for j := range x {
		v[j] = r.Uint32N(ks[j])
		c[j] = pad.Encrypt(x[j], v[j], ks[j])
	}
	if err := m.DrawOffset(r, o); err != nil {
		t.Fatal(err)
	}
	if err := d.Apply(c, o); err != nil {
		t.Fatal(err)
	}
	for j := range c {
		c[j] = pad.Decrypt(c[j], v[j], ks[j])
	}
	g, err := d.Encode(c)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestLemmaIII1FullTransitionRowsSmallDomain(t *testing.T) {
	// K = 2·3 = 6, γ = 3: q = 3 + 5 = 8, a row stays with probability
	// 3/8 and moves to each of the 5 other values with probability 1/8.
	// For every source value, chi-square of 48 000 decrypted releases
	// against column x of A; alpha = 1e-6 per source (6e-6 in all).
	const alpha, rows = 1e-6, 48_000
	m := mustMechanism(t, 3, 2, 3)
	d := m.Domain()
	r := rng.NewSeeded(31)
	x, v, c, o := make([]uint32, 2), make([]uint32, 2), make([]uint32, 2), make([]uint32, 2)
	for src := range d.Size() {
		if err := d.Decode(src, x); err != nil {
			t.Fatal(err)
		}
		counts := make([]int64, d.Size())
		for range rows {
			counts[releaseThroughPipeline(t, r, m, x, v, c, o)]++
		}
		probs := make([]float64, d.Size())
		for to := range probs {
			probs[to] = m.Transition(uint64(to), src)
		}
		if math.Abs(probs[src]-3.0/8) > 1e-15 || math.Abs(probs[(src+1)%6]-1.0/8) > 1e-15 {
			t.Fatalf("A column %d = %v, want 3/8 on the diagonal, 1/8 elsewhere", src, probs)
		}
		stattest.AssertChiSquare(t, fmt.Sprintf("transition row from %d", src), counts, probs, alpha)
	}
}

func TestLemmaIII1KeptAndMovedThreeCurators(t *testing.T) {
	// K = 3·4·5 = 60, γ = 20: q = 79, keep probability 20/79 ≈ 0.253.
	// For two source values: the kept count is Binomial(60 000, 20/79)
	// and the moved rows are uniform over the 59 other values.
	// alpha = 1e-6 per check (4e-6 in all).
	const alpha, rows = 1e-6, 60_000
	m := mustMechanism(t, 20, 3, 4, 5)
	d := m.Domain()
	if got := m.KeepProbability(); math.Abs(got-20.0/79) > 1e-15 {
		t.Fatalf("keep probability %v, want 20/79", got)
	}
	r := rng.NewSeeded(32)
	x, v, c, o := make([]uint32, 3), make([]uint32, 3), make([]uint32, 3), make([]uint32, 3)
	for _, src := range [][]uint32{{0, 0, 0}, {2, 3, 4}} {
		copy(x, src)
		g0, _ := d.Encode(src)
		var kept int64
		moved := make([]int64, d.Size()-1) // other values, g0 left out
		for range rows {
			g := releaseThroughPipeline(t, r, m, x, v, c, o)
			switch {
			case g == g0:
				kept++
			case g < g0:
				moved[g]++
			default:
				moved[g-1]++
			}
		}
		stattest.AssertBinomial(t, fmt.Sprintf("kept from %v", src), kept, rows, 20.0/79, alpha)
		uniform := make([]float64, len(moved))
		for i := range uniform {
			uniform[i] = 1 / float64(len(moved))
		}
		stattest.AssertChiSquare(t, fmt.Sprintf("moved targets from %v", src), moved, uniform, alpha)
	}
}

func TestPerturbColumnsFollowsA(t *testing.T) {
	// The batch path: 60 000 copies of row (1, 2) in Z_2 × Z_3, γ = 3;
	// chi-square of the released values against column g(1,2) = 5 of A
	// (3/8 stay, 1/8 to each other value). alpha = 1e-6.
	const alpha, rows = 1e-6, 60_000
	m := mustMechanism(t, 3, 2, 3)
	cols := [][]uint32{make([]uint32, rows), make([]uint32, rows)}
	for i := range rows {
		cols[0][i], cols[1][i] = 1, 2
	}
	if err := m.PerturbColumns(rng.NewSeeded(33), cols); err != nil {
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
	stattest.AssertChiSquare(t, "PerturbColumns", counts, []float64{1. / 8, 1. / 8, 1. / 8, 1. / 8, 1. / 8, 3. / 8}, alpha)
}

func TestPerturbColumnsRejectsBadBatches(t *testing.T) {
	m := mustMechanism(t, 3, 2, 3)
	r := rng.NewSeeded(1)
	bad := [][][]uint32{
		{{0}},            // one column for a two-column domain
		{{0, 1}, {0}},    // ragged
		{{0, 2}, {0, 0}}, // 2 outside Z_2
		{{0, 1}, {0, 3}}, // 3 outside Z_3
		{{0}, {0}, {0}},  // three columns
		{{1, 1}, {2, 3}}, // 3 outside Z_3 in the last row
	}
	for i, cols := range bad {
		snapshot := fmt.Sprint(cols)
		if err := m.PerturbColumns(r, cols); err == nil {
			t.Errorf("batch %d accepted", i)
		}
		if fmt.Sprint(cols) != snapshot {
			t.Errorf("batch %d modified despite the error", i)
		}
	}
	if err := m.DrawOffset(r, make([]uint32, 3)); err == nil {
		t.Error("DrawOffset: wrong length accepted")
	}
}

// keepProbabilityExact returns the mechanism's P(keep) = t/2^128 as a Rat.
func keepProbabilityExact(m *Mechanism) *big.Rat {
	t := new(big.Int).Lsh(new(big.Int).SetUint64(m.keepHi), 64)
	t.Or(t, new(big.Int).SetUint64(m.keepLo))
	return new(big.Rat).SetFrac(t, new(big.Int).Lsh(big.NewInt(1), 128))
}

func TestKeepThresholdIsExactToTwoToTheMinus128(t *testing.T) {
	tests := []struct {
		gamma float64
		ks    []uint32
	}{
		{3, []uint32{2, 3}},
		{1.5, []uint32{1 << 31, 1 << 31}},           // K = 2^62, γ/q ≈ 3·2^-63
		{1 + 0x1p-40, []uint32{1<<31 - 1, 1 << 30}}, // γ barely above 1
		{1e300, []uint32{7}},                        // γ/q within 6e-300 of 1
	}
	for _, tt := range tests {
		m := mustMechanism(t, tt.gamma, tt.ks...)
		g := new(big.Rat).SetFloat64(tt.gamma)
		q := new(big.Rat).Add(g, new(big.Rat).SetInt(new(big.Int).SetUint64(m.Domain().Size()-1)))
		want := new(big.Rat).Quo(g, q)
		diff := new(big.Rat).Sub(want, keepProbabilityExact(m))
		ulp := new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Lsh(big.NewInt(1), 128))
		if diff.Sign() < 0 || diff.Cmp(ulp) >= 0 {
			t.Errorf("gamma %v ks %v: γ/q − P(keep) = %s, want in [0, 2^-128)", tt.gamma, tt.ks, diff.FloatString(45))
		}
	}
}

func TestDrawOffsetNearMaximalK(t *testing.T) {
	// K = (2^31 − 1)(2^31 + 1) = 2^62 − 1 and γ = K − 1, so q = 2(K − 1)
	// and P(keep) = 1/2 exactly. Over 100 000 draws: kept count
	// Binomial(n, 1/2); among moved rows, each component bucketed into 16
	// bins against its exact law under g uniform on [1, K) (component 0
	// takes the value 0 for k_2 − 1 of the K − 1 indexes and every other
	// value for k_2; component 1 the same with k_1). alpha = 1e-6 per check.
	const alpha, draws = 1e-6, 100_000
	ks := []uint32{1<<31 - 1, 1<<31 + 1}
	d, _ := NewDomain(ks)
	m, err := NewMechanism(float64(d.Size()-1), d)
	if err != nil {
		t.Fatal(err)
	}
	r := rng.NewSeeded(34)
	o := make([]uint32, 2)
	var kept int64
	bins := [2][]int64{make([]int64, 16), make([]int64, 16)}
	for range draws {
		if err := m.DrawOffset(r, o); err != nil {
			t.Fatal(err)
		}
		if o[0] == 0 && o[1] == 0 {
			kept++
			continue
		}
		for j := range 2 {
			bins[j][uint64(o[j])*16/uint64(ks[j])]++
		}
	}
	stattest.AssertBinomial(t, "kept at K ≈ 2^62", kept, draws, 0.5, alpha)
	for j := range 2 {
		other := uint64(ks[1-j])
		probs := make([]float64, 16)
		for b := range uint64(16) {
			lo := (b*uint64(ks[j]) + 15) / 16 // first value in bin b
			hi := ((b+1)*uint64(ks[j]) + 15) / 16
			n := (hi - lo) * other
			if lo == 0 {
				n-- // the all-zero index is excluded
			}
			probs[b] = float64(n) / float64(d.Size()-1)
		}
		stattest.AssertChiSquare(t, fmt.Sprintf("moved component %d at K ≈ 2^62", j), bins[j], probs, alpha)
	}
}

func TestTrivialDomainAlwaysKeeps(t *testing.T) {
	m := mustMechanism(t, 2, 1)
	o := []uint32{0}
	for range 100 {
		if err := m.DrawOffset(rng.NewSeeded(1), o); err != nil || o[0] != 0 {
			t.Fatalf("K = 1: offset %v, %v", o, err)
		}
	}
	if m.KeepProbability() != 1 {
		t.Fatalf("K = 1: keep probability %v", m.KeepProbability())
	}
}

func benchmarkDrawOffset(b *testing.B, ks ...uint32) {
	m := mustMechanism(b, 5, ks...)
	r := rng.NewSeeded(1)
	o := make([]uint32, len(ks))
	for b.Loop() {
		_ = m.DrawOffset(r, o)
	}
}

// γ = 5 keeps few rows, so nearly every draw takes the move path.
func BenchmarkDrawOffsetD2(b *testing.B)         { benchmarkDrawOffset(b, 16, 2) }
func BenchmarkDrawOffsetD6(b *testing.B)         { benchmarkDrawOffset(b, 16, 2, 7, 9, 5, 42) }
func BenchmarkDrawOffsetD3Near2p62(b *testing.B) { benchmarkDrawOffset(b, 1<<31-1, 1<<16, 1<<15) }

func BenchmarkPerturbColumnsD6(b *testing.B) {
	ks := []uint32{16, 2, 7, 9, 5, 42}
	m := mustMechanism(b, 5, ks...)
	r := rng.NewSeeded(1)
	const rows = 4096
	cols := make([][]uint32, len(ks))
	for j := range cols {
		cols[j] = make([]uint32, rows)
	}
	for b.Loop() {
		_ = m.PerturbColumns(r, cols)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
}
