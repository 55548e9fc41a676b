package pram

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkChunkPerturb is perturb's per-chunk mechanism cost: one chunk of
// 16 Ki joint rows of the bench table's domain (16·15·2·2 = 960, ε = 1 at
// m = n: γ = e), perturbed with keyed offsets (what every gamma-diagonal
// run now does, batched by AES-CTR) and, for comparison, with the
// sequential ChaCha8 generator it replaced.
func BenchmarkChunkPerturb(b *testing.B) {
	const rows = 16 * 1024
	m := mustMechanism(b, 2.718281828459045, 16, 15, 2, 2)
	cols := make([][]uint32, 4)
	for j := range cols {
		cols[j] = make([]uint32, rows)
	}
	report := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*rows), "ns/row")
	}
	b.Run("keyed", func(b *testing.B) {
		ko, _ := NewKeyedOffsets(m, testNoiseKey(1))
		for i := 0; b.Loop(); i++ {
			if err := ko.PerturbColumns(uint64(i)*rows, cols); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("chacha8", func(b *testing.B) {
		r := rand.New(rand.NewChaCha8([32]byte{1}))
		for b.Loop() {
			if err := m.PerturbColumns(r, cols); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
}
