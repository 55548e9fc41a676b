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
