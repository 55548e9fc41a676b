package bitflip

import (
	"fmt"
	"testing"

	"github.com/pramkit/pramkit/pkg/rng"
)

func BenchmarkAnonymity(b *testing.B) {
	for _, L := range []int{12, 16, 20} {
		b.Run(fmt.Sprintf("L%d_n30000", L), func(b *testing.B) {
			m, _ := New(Options{LieProbability: 0.2, Bits: L})
			g := rng.NewSeeded(1)
			recs := make([]uint64, 30000)
			for i := range recs {
				recs[i] = g.Uint64N(1 << L)
			}
			b.ResetTimer()
			for b.Loop() {
				if _, err := m.Anonymity(recs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAnonymityMonteCarlo(b *testing.B) {
	// Per sampled report: distances to all 30000 records of 2 words.
	m, _ := New(Options{LieProbability: 0.2, Bits: 100})
	g := rng.NewSeeded(1)
	rows := make([]uint64, 30000*m.Words())
	for i := range rows {
		rows[i] = g.Uint64()
		if i%2 == 1 {
			rows[i] &= 1<<36 - 1
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := m.AnonymityMonteCarlo(g, rows, 100); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTallyAdd(b *testing.B) {
	m, _ := New(Options{LieProbability: 0.25, Bits: 64})
	z := m.NewRandomizer(rng.NewSeeded(1))
	rows := make([][]uint64, 1024)
	for i := range rows {
		rows[i] = make([]uint64, 1)
		_ = z.Randomize(rows[i])
	}
	tally := m.NewTally()
	i := 0
	for b.Loop() {
		_ = tally.Add(rows[i&1023])
		i++
	}
}
